"""A thin wrapper around the git command line.

Every call runs with a neutral configuration (no system or global config, C locale, UTC) so that
a user's settings cannot change what the tool produces. Failures raise GitError with git's stderr.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from verl_patches.errors import GitError
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
    """Runs git in one repository."""

    def __init__(self, repo: Path):
        self.repo = Path(repo)

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        env: dict[str, str] | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[bytes]:
        argv = ["git", "-C", str(self.repo), *args]
        proc = subprocess.run(argv, input=input, capture_output=True, env=neutral_env(env))
        if check and proc.returncode != 0:
            raise GitError(list(args), proc.returncode, _text(proc.stderr), _text(proc.stdout))
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


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
