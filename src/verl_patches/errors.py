"""Exceptions raised by verl-patches. Each carries a message meant for the user."""

from __future__ import annotations


class VerlPatchesError(Exception):
    """Base class: the CLI prints the message and exits with status 1."""


class ConfigError(VerlPatchesError):
    """upstream.toml, patches/series or a patch file is malformed."""


class GitError(VerlPatchesError):
    """A git command failed; the message carries git's stderr."""

    def __init__(self, args: list[str], returncode: int, stderr: str, stdout: str = ""):
        self.args_ = args
        self.returncode = returncode
        self.stderr = stderr
        self.stdout = stdout
        detail = stderr.strip() or stdout.strip() or "(no output)"
        super().__init__(f"git {' '.join(args)} failed with exit code {returncode}:\n{detail}")


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


class HashMismatchError(PinMismatchError):
    """The downloaded sdist does not have the pinned sha256."""

    def __init__(self, path: str, expected: str, actual: str):
        super().__init__(f"sha256 mismatch for {path}", "downloaded", "Nothing was unpacked.", expected, actual)


class TreeMismatchError(PinMismatchError):
    """The files of a downloaded archive do not have the pinned git tree id."""

    def __init__(self, path: str, expected: str, actual: str):
        headline = f"content mismatch for {path}: the git tree id of its files is not the pinned one"
        super().__init__(headline, "this file", "Nothing was imported.", expected, actual)


class UnexportedWorkError(VerlPatchesError):
    """The build tree holds work that patches/ does not have."""


class PatchApplyError(VerlPatchesError):
    """A patch of the series does not apply."""

    def __init__(self, patch: str, detail: str):
        self.patch = patch
        self.detail = detail
        super().__init__(f"patch {patch} does not apply:\n{detail}")
