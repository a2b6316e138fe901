"""The virtualenv in which the patched verl tree is imported and tested (build/venv)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from verl_patches.errors import VerlPatchesError

STAMP = ".verl-patches-requirements"


def _python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def requirements_stamp(requirements: list[Path]) -> str:
    """Changes whenever the interpreter or a requirements file changes (missing files count as empty)."""
    digest = hashlib.sha256(sys.version.encode())
    digest.update(os.environ.get("VERL_PATCHES_PYTHON", "").encode())
    for path in requirements:
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()


def ensure(venv: Path, requirements: list[Path], tree: Path, log=print) -> Path:
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
        log(f"preparing {venv} from {', '.join(p.name for p in requirements)} (a few minutes the first time)")
        if not python.exists():
            _run([sys.executable, "-m", "venv", str(venv)])
        cmd = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        for path in requirements:
            cmd += ["-r", str(path)]
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
