"""A thin wrapper around the git command line.

Every call runs with a neutral configuration (no system or global config, C locale, UTC) so that
a user's settings cannot change what the tool produces. Failures raise GitError with git's stderr and, for the
failures that a person's action, a crash or a hostile archive causes (a lock file left behind, a damaged index, a
.git that is not a repository, a path git refuses, a full disk, a folder it may not write), what to do about it: the
table _ADVICE, in one place.
"""

from __future__ import annotations

import errno
import os
import re
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path

from verl_patches.errors import GitError, what_to_do
from verl_patches.model.patch import PROJECT_EMAIL, PROJECT_NAME

_NEUTRAL_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "LC_ALL": "C",
    "LANG": "C",
    "TZ": "UTC",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": "true",
    # Read-only commands (status, diff) do not take index.lock: one that is killed leaves no lock behind.
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_COMMITTER_NAME": PROJECT_NAME,
    "GIT_COMMITTER_EMAIL": PROJECT_EMAIL,
}

# Variables from the caller's environment that would redirect or alter git.
_DROPPED = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_DATE",
    "GIT_DIFF_OPTS",
    "GIT_EXTERNAL_DIFF",
    "GIT_DEFAULT_HASH",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_REPLACE_REF_BASE",
)


def neutral_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED}
    env.update(_NEUTRAL_ENV)
    if extra:
        env.update(extra)
    return env


class Git:
    """Runs git in one repository. own=True: repo is the top of a repository of its own (a build tree): git never
    looks for one above it, so a damaged .git there is an error, not the repository of a folder around it."""

    def __init__(self, repo: Path, own: bool = False):
        self.repo = Path(repo)
        self.own = own

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        env: dict[str, str] | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[bytes]:
        argv = ["git", "-C", str(self.repo), *args]
        ceiling = {"GIT_CEILING_DIRECTORIES": os.path.realpath(self.repo.parent)} if self.own else {}
        proc = subprocess.run(argv, input=input, capture_output=True, env=neutral_env({**ceiling, **(env or {})}))
        if check and proc.returncode != 0:
            stderr = _text(proc.stderr)
            raise GitError(list(args), proc.returncode, stderr, _text(proc.stdout), advice(stderr, self.repo, self.own))
        return proc

    def out(self, *args: str, **kwargs) -> str:
        """stdout as text, trailing newline removed."""
        return _text(self.run(*args, **kwargs).stdout).rstrip("\n")

    def ok(self, *args: str, **kwargs) -> bool:
        return self.run(*args, check=False, **kwargs).returncode == 0

    def rev(self, ref: str) -> str | None:
        proc = self.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        return _text(proc.stdout).strip() or None

    def git_dir(self) -> Path:
        return Path(self.out("rev-parse", "--absolute-git-dir"))


def advice(stderr: str, repo: Path, own: bool = True) -> str:
    """What a person can do about a git failure, by git's message; "" when it is none of the known conditions."""
    for pattern, say in _ADVICE:
        match = pattern.search(stderr)
        if match:
            return say(match, Path(repo), own)
    return ""


def _git_folder(repo: Path) -> Path:
    """repo's git folder, read from its .git without running git (which may be what fails)."""
    dot_git = repo / ".git"
    if dot_git.is_file():
        text = dot_git.read_text(errors="replace").strip()
        if text.startswith("gitdir:"):
            return (repo / text.removeprefix("gitdir:").strip()).resolve()
    return dot_git


def _lock_left(match: re.Match[str], repo: Path, own: bool) -> str:
    lock = match["path"]
    return (
        f"A git command is running in {repo}, or one was killed and left its lock file {lock} behind. If no git "
        f"process is running there, remove it (`rm {shlex.quote(lock)}`), then run the command again."
    )


def _index_damaged(match: re.Match[str], repo: Path, own: bool) -> str:
    index = _git_folder(repo) / "index"
    return (
        f"The git index of {repo} ({index}) is damaged (a crash or a full disk while git wrote it); its commits and "
        f"files are intact. Rebuild the index with `rm {shlex.quote(str(index))} && git -C {shlex.quote(str(repo))} "
        "reset` (it keeps every file as it is, edits included), then run the command again."
    )


def _not_a_repository(match: re.Match[str], repo: Path, own: bool) -> str:
    if not own:
        return f"{repo} is not in a git repository that git can read: run the command in a git clone."
    dot_git = repo / ".git"
    if dot_git.is_file():
        what = f"{dot_git} is a file that names no git folder git can use (a worktree whose repository went?)"
    elif dot_git.is_dir():
        what = f"{dot_git} is a folder that git does not take for a repository (its HEAD, objects or refs are damaged)"
    else:
        what = f"{repo} has no .git"
    moved = shlex.quote(f"{repo}.moved")
    return (
        f"{what}. Nothing was changed. The folder may hold work: move it away (`mv {shlex.quote(str(repo))} "
        f"{moved}`), run `verl-patches apply` to build the tree afresh, and take what you need from {moved}."
    )


def _path_refused(match: re.Match[str], repo: Path, own: bool) -> str:
    return (
        f"git cannot store the path {match['path']!r} of the source being imported (git keeps .git names for itself "
        "and refuses a few others, such as a .gitmodules that is a symlink), so it is not a release as published. "
        "Delete the file from the download cache (and check the mirror it came from), then run the command again."
    )


def _os_error(code: int) -> Callable[[re.Match[str], Path, bool], str]:
    return lambda match, repo, own: f"{what_to_do(code)}."


# git's messages for the conditions a person (or a crash) causes, and what to do about each.
_ADVICE: tuple[tuple[re.Pattern[str], Callable[[re.Match[str], Path, bool], str]], ...] = (
    (re.compile(r"Unable to create '(?P<path>[^']+\.lock)': File exists"), _lock_left),
    (
        re.compile(
            r"index file corrupt|bad index file sha1 signature|index file smaller than expected|bad signature 0x"
            r"|bad index version"
        ),
        _index_damaged,
    ),
    (re.compile(r"not a git repository|invalid gitfile format"), _not_a_repository),
    (re.compile(r"invalid path '(?P<path>[^']*)'"), _path_refused),
    (re.compile(r"No space left on device"), _os_error(errno.ENOSPC)),
    (re.compile(r"Permission denied|insufficient permission"), _os_error(errno.EACCES)),
    (re.compile(r"Read-only file system"), _os_error(errno.EROFS)),
)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
