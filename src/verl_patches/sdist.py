"""Fetch an sdist from PyPI into a cache, verify its sha256; unpack a source tarball (sdist or tag archive)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zlib
from pathlib import Path, PurePosixPath

from verl_patches.errors import HashMismatchError, VerlPatchesError
from verl_patches.model.upstream import Upstream


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify(path: Path, expected: str) -> None:
    actual = sha256_of(path)
    if actual != expected:
        raise HashMismatchError(str(path), expected, actual)


def download(upstream: Upstream, cache_dir: Path, log=print) -> Path:
    """The sdist in the cache, downloaded with pip when it is not there yet. Not verified here."""
    target = cache_dir / upstream.sdist_filename
    if cached_file(target):
        return target
    make_cache_dir(cache_dir)
    log(f"downloading {upstream.name}=={upstream.version} (sdist) with pip")
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".download-") as tmp:
        cmd = [
            sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
            "--no-build-isolation", "--dest", tmp, f"{upstream.name}=={upstream.version}",
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        downloaded = sorted(Path(tmp).glob("*.tar.gz"))
        if proc.returncode != 0 or not downloaded:
            raise VerlPatchesError(
                f"pip could not download {upstream.name}=={upstream.version} as an sdist:\n{proc.stderr.strip()}"
            )
        shutil.move(str(downloaded[0]), target)
    return target


def make_cache_dir(cache_dir: Path) -> None:
    if cache_dir.exists() and not cache_dir.is_dir():
        raise VerlPatchesError(f"the download cache {cache_dir} is not a folder: remove it or set VERL_PATCHES_CACHE")
    cache_dir.mkdir(parents=True, exist_ok=True)


def cached_file(target: Path) -> bool:
    """True when target is a cached download; a folder (or anything but a file) there is an error."""
    if not target.exists() and not target.is_symlink():
        return False
    if not target.is_file():
        raise VerlPatchesError(
            f"the cached download {target} is not a file: remove it (nothing was downloaded or overwritten)"
        )
    return True


def fetch(upstream: Upstream, cache_dir: Path, log=print) -> Path:
    """The verified sdist: downloaded into the cache when missing, then checked against the pin.

    A cached file with the wrong hash is reported and left untouched: it is never overwritten.
    """
    target = download(upstream, cache_dir, log=log)
    verify(target, upstream.sha256)
    return target


def newest_mtime(path: Path) -> int:
    """The newest member mtime of the archive: a date that depends only on the sdist's bytes."""
    with tarfile.open(path, "r:gz") as archive:
        return max((int(m.mtime) for m in archive.getmembers()), default=0)


def unpack(path: Path, dest: Path) -> None:
    """Unpack the tarball into dest, dropping its single top-level folder. Symlinks are kept when they
    point inside dest; absolute or escaping paths, members below a symlink, hard links and device files
    are refused. An unreadable file (a cut-short download, say) is an error that names it."""
    try:
        _unpack(path, dest)
    except (EOFError, tarfile.TarError, zlib.error) as exc:
        raise VerlPatchesError(
            f"{path} is not a readable .tar.gz ({exc}): delete it and run again to download it afresh"
        ) from exc


def _unpack(path: Path, dest: Path) -> None:
    with tarfile.open(path, "r:gz") as archive:
        members = archive.getmembers()
        roots = {PurePosixPath(m.name).parts[0] for m in members if m.name not in ("", ".")}
        if len(roots) != 1:
            raise VerlPatchesError(f"{path.name}: expected one top-level folder, found {sorted(roots)}")
        for member in members:
            parts = PurePosixPath(member.name).parts[1:]
            if not parts:
                continue
            if member.name.startswith("/") or ".." in parts:
                raise VerlPatchesError(f"{path.name}: unsafe member path {member.name!r}")
            out = dest.joinpath(*parts)
            if any(dest.joinpath(*parts[:n]).is_symlink() for n in range(1, len(parts))):
                raise VerlPatchesError(f"{path.name}: member {member.name!r} lies below a symlink")
            if member.isdir():
                out.mkdir(parents=True, exist_ok=True)
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            if member.issym():
                target = PurePosixPath(member.linkname)
                inside = os.path.normpath(PurePosixPath(*parts[:-1], target))
                if target.is_absolute() or inside == ".." or inside.startswith("../"):
                    raise VerlPatchesError(f"{path.name}: symlink {member.name!r} points outside the tree")
                os.symlink(member.linkname, out)
                continue
            if not member.isfile():
                raise VerlPatchesError(f"{path.name}: member {member.name!r} is not a file, folder or symlink")
            source = archive.extractfile(member)
            assert source is not None
            with source, open(out, "wb") as handle:
                shutil.copyfileobj(source, handle)
            out.chmod(0o755 if member.mode & 0o111 else 0o644)
