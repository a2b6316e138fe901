"""Fetch an sdist from PyPI into a cache, verify its sha256; unpack a source tarball (sdist or tag archive)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import zlib
from pathlib import Path, PurePosixPath

from verl_patches.errors import PinMismatchError, VerlPatchesError
from verl_patches.model.upstream import Upstream

logger = logging.getLogger(__name__)


def read_regular(path: Path) -> bytes:
    """The bytes of a regular file (through symlinks), read once; a FIFO, socket or device is refused without
    blocking on it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise VerlPatchesError(f"cannot read {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise VerlPatchesError(
                f"{path} is not a regular file (a FIFO, socket or device): replace it with the file itself"
            )
        os.set_blocking(fd, True)
        return handle.read()


def sha256_of(path: Path) -> str:
    return hashlib.sha256(read_regular(path)).hexdigest()


def read_verified(path: Path, expected: str) -> bytes:
    """The file's bytes checked against the pinned sha256: unpack these, not the file, so that what is imported
    is what was hashed even when the file changes in between."""
    data = read_regular(path)
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise PinMismatchError.sha256(str(path), expected, actual)
    return data


def verify(path: Path, expected: str) -> None:
    read_verified(path, expected)


def download(upstream: Upstream, cache_dir: Path) -> Path:
    """The sdist in the cache, downloaded with pip when it is not there yet. Not verified here."""
    target = cache_dir / upstream.sdist_filename
    if cached_file(target):
        return target
    make_cache_dir(cache_dir)
    logger.info(f"downloading {upstream.name}=={upstream.version} (sdist) with pip")
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


def fetch(upstream: Upstream, cache_dir: Path) -> Path:
    """The verified sdist: downloaded into the cache when missing, then checked against the pin.

    A cached file with the wrong hash is reported and left untouched: it is never overwritten.
    """
    target = download(upstream, cache_dir)
    verify(target, upstream.sha256)
    return target


def archive_commit(path: Path) -> str:
    """The commit a GitHub tag archive was made from: git archive writes it as the tarball's pax comment."""
    try:
        with tarfile.open(path, "r:gz") as archive:
            comment = str(archive.pax_headers.get("comment", ""))
    except (EOFError, tarfile.TarError, zlib.error) as exc:
        raise VerlPatchesError(f"{path} is not a readable .tar.gz ({exc}): delete it and run again") from exc
    if not re.fullmatch(r"[0-9a-f]{40}", comment):
        raise VerlPatchesError(
            f"{path} names no commit (git archive writes it as the pax comment; found {comment[:60]!r}): "
            "is it GitHub's archive of a tag?"
        )
    return comment


def _open_tarball(source: Path | bytes) -> tarfile.TarFile:
    data = source if isinstance(source, bytes) else read_regular(source)
    return tarfile.open(fileobj=io.BytesIO(data), mode="r:gz")


def newest_mtime(source: Path | bytes) -> int:
    """The newest member mtime of the archive: a date that depends only on the sdist's bytes."""
    with _open_tarball(source) as archive:
        return max((int(m.mtime) for m in archive.getmembers()), default=0)


def unpack(source: Path | bytes, dest: Path, label: str | None = None) -> None:
    """Unpack the tarball (a file, or its bytes named by label) into dest, dropping its single top-level folder
    (see unpack_members)."""
    path = label or str(source if isinstance(source, Path) else "the tarball")
    try:
        with _open_tarball(source) as archive:
            unpack_members(archive, dest, Path(path).name, strip=True)
    except UnsafeMemberError as exc:
        raise VerlPatchesError(
            f"{exc}. Nothing of {path} was written outside {dest} and nothing was imported; the file is not a "
            "release archive as published: delete it (and check the mirror or cache it came from), then run again"
        ) from None
    except (EOFError, tarfile.TarError, zlib.error) as exc:
        raise VerlPatchesError(
            f"{path} is not a readable .tar.gz ({exc}): delete it and run again to download it afresh"
        ) from exc


class UnsafeMemberError(VerlPatchesError):
    """A member of an archive that could write outside, or through, what the archive itself created."""


def unpack_members(archive: tarfile.TarFile, dest: Path, label: str, strip: bool = False) -> None:
    """Write the archive's folders, files and symlinks into dest (dropping the single top-level folder when
    strip). The rule, written once: a member's path is relative and has no '..'; nothing is written through a
    symlink or onto an existing path (each folder is opened without following symlinks, each file and symlink
    created only where nothing is); after unpacking, every symlink resolves, link by link, inside dest. Hard
    links, devices and other kinds are refused. UnsafeMemberError names the first member that breaks it."""
    members = archive.getmembers()
    paths = [(member, _member_parts(member, label)) for member in members]
    if strip:
        roots = {parts[0] for _, parts in paths if parts}
        if len(roots) != 1:
            raise UnsafeMemberError(f"{label}: expected one top-level folder, found {sorted(roots)}")
        paths = [(member, parts[1:]) for member, parts in paths]
    links = []
    root = os.open(dest, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for member, parts in paths:
            if not parts:
                continue
            folder = _open_folder(root, parts[:-1], member, label)
            try:
                _write_member(archive, member, folder, parts[-1], label)
            finally:
                os.close(folder)
            if member.issym():
                links.append((member, parts))
    finally:
        os.close(root)
    for member, parts in links:
        if not _resolves_inside(dest, parts):
            raise UnsafeMemberError(f"{label}: symlink {member.name!r} points outside the tree ({member.linkname!r})")


def _member_parts(member: tarfile.TarInfo, label: str) -> tuple[str, ...]:
    name = PurePosixPath(member.name)
    if name.is_absolute():
        raise UnsafeMemberError(f"{label}: member {member.name!r} has an absolute path")
    if ".." in name.parts:
        raise UnsafeMemberError(f"{label}: member {member.name!r} climbs out of its folder with '..'")
    parts = tuple(part for part in name.parts if part != ".")
    if any(_git_name(part) for part in parts):
        raise UnsafeMemberError(
            f"{label}: member {member.name!r} is a .git path, which git keeps for itself: an import would leave it out "
            "silently, or take a repository inside the archive for a folder of files"
        )
    return parts


def _git_name(part: str) -> bool:
    """A name git keeps for its own folder: .git in any case, also as Windows and macOS spell it (trailing dots or
    spaces, the 8.3 short name git~1); git's defaults refuse or skip every one."""
    return part.rstrip(". ").lower() == ".git" or part.lower() == "git~1"


def _open_folder(root: int, parts: tuple[str, ...], member: tarfile.TarInfo, label: str) -> int:
    """A descriptor of the folder dest/parts, created where missing; never through a symlink."""
    fd = os.dup(root)
    try:
        for part in parts:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=fd)
            try:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError:
                what = "symlink" if stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode) else "file"
                raise UnsafeMemberError(f"{label}: member {member.name!r} lies below a {what}") from None
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write_member(archive: tarfile.TarFile, member: tarfile.TarInfo, folder: int, name: str, label: str) -> None:
    twice = UnsafeMemberError(f"{label}: member {member.name!r} appears twice (a file, folder or symlink of one name)")
    if member.isdir():
        try:
            os.mkdir(name, 0o755, dir_fd=folder)
        except FileExistsError:
            if not stat.S_ISDIR(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode):
                raise twice from None
        return
    if member.issym():
        if not member.linkname:  # the OS refuses to create it with a bare ENOENT that names neither
            raise UnsafeMemberError(f"{label}: symlink {member.name!r} has an empty target")
        if member.linkname.startswith("/"):
            raise UnsafeMemberError(f"{label}: symlink {member.name!r} points outside the tree ({member.linkname!r})")
        try:
            os.symlink(member.linkname, name, dir_fd=folder)
        except FileExistsError:
            raise twice from None
        return
    if not member.isfile():
        raise UnsafeMemberError(f"{label}: member {member.name!r} is not a file, folder or symlink")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags, 0o600, dir_fd=folder)
    except FileExistsError:
        raise twice from None
    source = archive.extractfile(member)
    assert source is not None
    with source, os.fdopen(fd, "wb") as handle:
        shutil.copyfileobj(source, handle)
        os.fchmod(handle.fileno(), 0o755 if member.mode & 0o111 else 0o644)


def _resolves_inside(dest: Path, parts: tuple[str, ...], max_links: int = 40) -> bool:
    """Whether the symlink dest/parts resolves inside dest, following the links it meets there one by one."""
    inside = list(parts[:-1])
    pending = os.readlink(dest.joinpath(*parts)).split("/")
    followed = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not inside:
                return False
            inside.pop()
            continue
        inside.append(part)
        here = dest.joinpath(*inside)
        if here.is_symlink():
            followed += 1
            target = os.readlink(here)
            if followed > max_links or target.startswith("/"):
                return False
            inside.pop()
            pending = target.split("/") + pending
    return True
