"""Exceptions raised by verl-patches. Each carries a message meant for the user."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path


class VerlPatchesError(Exception):
    """Base class: the CLI prints the message and exits with status 1."""


class ConfigError(VerlPatchesError):
    """upstream.toml, patches/series or a patch file is malformed."""


def setting_for(path: str | os.PathLike | None) -> str:
    """The variable that moves the folder a path is in: TMPDIR for this tool's temporary folders,
    VERL_PATCHES_CACHE for the download cache, VERL_PATCHES_BUILD_DIR otherwise (the build folders)."""
    from verl_patches.checkout import cache_dir  # layout imports this module
    from verl_patches.git.scratch import PREFIX

    if path is None:
        return "VERL_PATCHES_BUILD_DIR"
    real = Path(os.path.realpath(path))
    temp = Path(os.path.realpath(tempfile.gettempdir()))
    if real.is_relative_to(temp) and real != temp and real.relative_to(temp).parts[0].startswith(PREFIX):
        return "TMPDIR"
    if real.is_relative_to(os.path.realpath(cache_dir())):
        return "VERL_PATCHES_CACHE"
    return "VERL_PATCHES_BUILD_DIR"


def what_to_do(code: int | None, path: str | os.PathLike | None = None) -> str:
    """What a person can do about a failed file operation on path, by its errno."""
    setting = setting_for(path)
    if code in (errno.ENOSPC, errno.EDQUOT):
        return f"Free some space on that disk (or set {setting} to a folder on another), then run the command again"
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return (
            f"Make it writable for you (`chmod -R u+w` on it, or ask its owner), or set {setting} to a folder you can "
            "write, then run the command again"
        )
    return "Fix that, then run the command again"


def os_error_message(exc: OSError, doing: str) -> str:
    where = f" ({exc.filename})" if exc.filename else ""
    return f"{doing}: {exc.strerror or exc}{where}. {what_to_do(exc.errno, exc.filename)}"


class GitError(VerlPatchesError):
    """A git command failed; the message carries git's stderr."""

    def __init__(self, args: list[str], returncode: int, stderr: str, stdout: str = "", advice: str = ""):
        self.args_ = args
        self.returncode = returncode
        self.stderr = stderr
        self.stdout = stdout
        detail = stderr.strip() or stdout.strip() or "(no output)"
        self.hint = advice  # what to do, by git's message (git/repo.py)
        hint = f"\n{self.hint}" if self.hint else ""
        super().__init__(f"git {' '.join(args)} failed with exit code {returncode}:\n{detail}{hint}")


class BackupError(VerlPatchesError):
    """A backup could not be taken; nothing was discarded."""

    def __init__(self, what: str, folder: Path, exc: Exception):
        if isinstance(exc, OSError):
            cause = f"{exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else "")
            todo = f"\n{what_to_do(exc.errno, exc.filename)}."
        else:
            cause = str(exc)
            todo = "" if getattr(exc, "hint", "") else "\nFix what git says, then run the command again."
        super().__init__(
            f"could not keep a backup of {what} in {folder}, so nothing was changed or discarded (the unfinished "
            f"backup was removed):\n{cause}{todo}"
        )


class PinMismatchError(VerlPatchesError):
    """A downloaded file does not match its pin in upstream.toml; the file is kept as it is."""

    def __init__(self, headline: str, found: str, untouched: str, expected: str, actual: str):
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"{headline}:\n"
            f"  {'expected (upstream.toml):':<26}{expected}\n"
            f"  {f'actual ({found}):':<26}{actual}\n"
            f"{untouched} The file was kept as it is for inspection; if it is a corrupt or wrong download, "
            "delete it and run again to download it afresh; if the pin is wrong, fix upstream.toml."
        )

    @classmethod
    def sha256(cls, path: str, expected: str, actual: str) -> PinMismatchError:
        """The downloaded sdist does not have the pinned sha256."""
        return cls(f"sha256 mismatch for {path}", "downloaded", "Nothing was unpacked.", expected, actual)

    @classmethod
    def tree(cls, path: str, expected: str, actual: str) -> PinMismatchError:
        """The files of a downloaded archive do not have the pinned git tree id."""
        headline = f"content mismatch for {path}: the git tree id of its files is not the pinned one"
        return cls(headline, "this file", "Nothing was imported.", expected, actual)


class PatchApplyError(VerlPatchesError):
    """A patch of the series does not apply."""

    def __init__(self, patch: str, detail: str):
        self.patch = patch
        self.detail = detail
        super().__init__(f"patch {patch} does not apply:\n{detail}")
