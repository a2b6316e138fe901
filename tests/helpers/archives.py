"""A tiny synthetic verl: the PyPI-like sdist and the GitHub-like tag archive the tests build, their hashes and
git tree ids (computed with plain tar and git, independently of the tool), and the upstream.toml pins."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
import tempfile
from pathlib import Path

SETUP_PY = """\
from setuptools import find_packages, setup

with open("verl/version/version") as f:
    version = f.read().strip()

setup(name="verl", version=version, packages=find_packages(include=["verl", "verl.*"]),
      package_data={"verl": ["version/version"]})
"""

BASE_FILES = {
    "setup.py": SETUP_PY,
    "PKG-INFO": "Metadata-Version: 2.1\nName: verl\n",
    "verl/__init__.py": "",
    "verl/version/version": "{version}\n",
    "verl/models/__init__.py": "",
    "verl/models/util.py": (
        "def build_mask(lengths, width):\n    return [[i < n for i in range(width)] for n in lengths]\n"
    ),
    "verl/windows.txt": "line one\r\nline two\r\n",
    "tests/__init__.py": "",
    ".gitattributes": "* text=auto\n",
}


def make_sdist(directory: Path, version: str, files: dict[str, str] | None = None) -> Path:
    """Write verl-<version>.tar.gz with one top-level folder, like a PyPI sdist."""
    files = {**BASE_FILES, **(files or {})}
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"verl-{version}.tar.gz"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in sorted(files.items()):
            data = text.replace("{version}", version).encode()
            info = tarfile.TarInfo(f"verl-{version}/{name}")
            info.size = len(data)
            info.mtime = 1_700_000_000
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buffer.getvalue())
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


FAKE_COMMIT = "1" * 40


def make_archive(
    directory: Path,
    version: str,
    files: dict[str, str] | None = None,
    symlinks: dict[str, str] | None = None,
    drop: tuple[str, ...] = (),
    compresslevel: int = 9,
    name: str | None = None,
) -> Path:
    """Write a GitHub-like tag archive verl-<version>.tar.gz: one top folder, a pax comment, symlinks."""
    files = {k: v for k, v in {**BASE_FILES, **(files or {})}.items() if k not in drop}
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (name or f"verl-{version}.tar.gz")
    buffer = io.BytesIO()
    with tarfile.open(
        fileobj=buffer, mode="w:gz", compresslevel=compresslevel, format=tarfile.PAX_FORMAT,
        pax_headers={"comment": FAKE_COMMIT},
    ) as tar:  # fmt: skip
        for member, text in sorted(files.items()):
            data = text.replace("{version}", version).encode()
            info = tarfile.TarInfo(f"verl-{version}/{member}")
            info.size = len(data)
            info.mtime = 1_700_000_000
            info.mode = 0o755 if member.endswith(".sh") else 0o644
            tar.addfile(info, io.BytesIO(data))
        for member, target in sorted((symlinks or {}).items()):
            info = tarfile.TarInfo(f"verl-{version}/{member}")
            info.type = tarfile.SYMTYPE
            info.linkname = target
            info.mtime = 1_700_000_000
            tar.addfile(info)
    path.write_bytes(buffer.getvalue())
    return path


def tree_id_of(archive: Path, tmp: Path) -> str:
    """The git tree id of the archive's files, computed with plain tar and git (independently of the tool);
    bytes as they are (no end-of-line conversion)."""
    work = Path(tempfile.mkdtemp(prefix="tree-id-", dir=tmp))
    with tarfile.open(archive) as tar:  # extraction filters exist from Python 3.10.12 and 3.11.4 on
        tar.extractall(work, **({"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}))
    (top,) = list(work.iterdir())
    return git_tree_id(top)


def git_tree_id(folder: Path) -> str:
    """The git tree id of a folder's files (all of them, `add -A -f`), without end-of-line conversion."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "-C", str(folder), "init", "-q"], check=True, env=env)
    (folder / ".git" / "info" / "attributes").write_text("* -text\n")
    subprocess.run(["git", "-C", str(folder), "add", "-A", "-f"], check=True, env=env)
    return subprocess.run(
        ["git", "-C", str(folder), "write-tree"], check=True, env=env, capture_output=True, text=True
    ).stdout.strip()


def pin_archive(root: Path, version: str, tree: str) -> None:
    (root / "upstream.toml").write_text(
        f'[base."{version}"]\n'
        f'name = "verl"\nqueue = "patches"\nsource = "git-archive"\nrepository = "verl-project/verl"\n'
        f'tag = "v{version}"\ncommit = "{FAKE_COMMIT}"\ntree = "{tree}"\n',
        encoding="utf-8",
    )
