"""The virtualenv in which the patched verl tree is imported and tested (build/venv)."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from verl_patches.errors import VerlPatchesError

logger = logging.getLogger(__name__)

STAMP = ".verl-patches-requirements"
# The index torch is installed from (e.g. https://download.pytorch.org/whl/cpu); empty: pip's own configuration.
TORCH_INDEX_ENV = "TORCH_INDEX_URL"
# A requirements file whose name ends so is installed with --no-deps, after the others.
NO_DEPS_SUFFIX = "-nodeps.txt"


def _python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def torch_index() -> str:
    return os.environ.get(TORCH_INDEX_ENV, "").strip()


def requirements_stamp(requirements: list[Path]) -> str:
    """Changes whenever the interpreter, the torch index or a requirements file changes (missing files count as
    empty)."""
    digest = hashlib.sha256(sys.version.encode())
    digest.update(os.environ.get("VERL_PATCHES_PYTHON", "").encode())
    digest.update(f"\0{TORCH_INDEX_ENV}={torch_index()}\0".encode())
    for path in requirements:
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()


def ensure(venv: Path, requirements: list[Path], tree: Path) -> Path:
    """Create or refresh the venv when its requirements changed; point it at the tree. Returns its python.

    VERL_PATCHES_PYTHON names an interpreter to use instead (it must already have what the tests need).
    """
    override = os.environ.get("VERL_PATCHES_PYTHON")
    if override:
        return Path(override)
    python = _python(venv)
    stamp_path = venv / STAMP
    wanted = requirements_stamp(requirements)
    if not python.exists() or not stamp_path.exists() or stamp_path.read_text().strip() != wanted:
        logger.info(f"preparing {venv} from {', '.join(p.name for p in requirements)} (a few minutes the first time)")
        if not python.exists():
            _run([sys.executable, "-m", "venv", str(venv)])
        for cmd in install_commands(python, requirements, torch_index()):
            _run(cmd)
        stamp_path.write_text(wanted + "\n")
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # The tree is imported in place (no editable install: that would write into the tree).
    (Path(purelib) / "verl_patches_tree.pth").write_text(f"{tree.resolve()}\n")
    return python


def torch_requirement(requirements: list[Path]) -> str:
    """The `torch==X` line of the requirements files (the build of torch comes from the torch index)."""
    for path in requirements:
        for line in path.read_text().splitlines() if path.exists() else []:
            text = line.split("#", 1)[0].strip()
            if re.match(r"torch\s*==", text):
                return text.replace(" ", "")
    names = ", ".join(str(p) for p in requirements)
    raise VerlPatchesError(f"{TORCH_INDEX_ENV} is set, but no `torch==<version>` pin is in {names}")


def install_commands(python: Path, requirements: list[Path], index: str) -> list[list[str]]:
    """pip commands that install the requirements. With a torch index, torch comes first and from that index
    alone, ignoring pip's configuration (--isolated), so the build of torch does not depend on the machine."""
    pip = [str(python), "-m", "pip"]
    quiet = ["--quiet", "--disable-pip-version-check"]
    commands = []
    if index:
        commands.append([*pip, "--isolated", "install", *quiet, "--index-url", index, torch_requirement(requirements)])
    rest = [*pip, "install", *quiet]
    for path in requirements:
        if not path.name.endswith(NO_DEPS_SUFFIX):
            rest += ["-r", str(path)]
    commands.append(rest)
    for path in requirements:
        # Packages whose own dependency pins would replace the pinned ones: installed without them.
        if path.name.endswith(NO_DEPS_SUFFIX) and path.exists():
            commands.append([*pip, "install", *quiet, "--no-deps", "-r", str(path)])
    return commands


def run_env(python: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for commands of the venv: its bin/ first on PATH (tests find shellcheck there).

    Python writes no bytecode, wherever PYTHONPYCACHEPREFIX points, and hypothesis keeps its examples
    outside: the tests run inside the build tree."""
    env = {**os.environ, **(extra or {})}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("PYTHONPYCACHEPREFIX", None)
    env.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "verl-patches-hypothesis"))
    env["PATH"] = os.pathsep.join([str(Path(python).parent), env.get("PATH", "")])
    return env


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise VerlPatchesError(f"{' '.join(cmd[:4])} ... failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


__all__ = ["ensure"]
