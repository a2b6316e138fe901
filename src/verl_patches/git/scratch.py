"""A command's temporary folders (scratch work trees, unpacked sources), and what a killed command left of them.

Each folder's name carries the pid of the command that made it, so that a later command can tell the
folders of a command that no longer runs (SIGKILL skips every cleanup) from those of one that does.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from verl_patches.git.repo import Git

PREFIX = "verl-patches-"
_NAME = re.compile(rf"^{PREFIX}[a-z][a-z-]*-(\d+)-[A-Za-z0-9_]+$")


def folder(kind: str) -> tempfile.TemporaryDirectory:
    """A temporary folder of this command, removed when the block ends."""
    return tempfile.TemporaryDirectory(prefix=f"{PREFIX}{kind}-{os.getpid()}-")


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def sweep(build_dir: Path) -> list[Path]:
    """Remove the temporary folders of commands that no longer run, then the registrations of the scratch work
    trees they held in the build trees under build_dir. Returns the folders removed."""
    removed = []
    for path in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        match = _NAME.match(path.name)
        if match and path.is_dir() and not path.is_symlink() and not _running(int(match.group(1))):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    if removed:
        for git_dir in [build_dir / "verl" / ".git", *sorted(build_dir.glob("*/verl/.git"))]:
            if git_dir.is_dir():
                Git(git_dir.parent).run("worktree", "prune", check=False)
    return removed
