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
# The branch a scratch work tree commits to, in the build tree's repository: <BRANCH_PREFIX><pid>-<random hex>.
BRANCH_PREFIX = "verl-patches/scratch-"
_BRANCH = re.compile(rf"^refs/heads/{BRANCH_PREFIX}(\d+)-[0-9a-f]+$")


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
    """Remove the temporary folders of commands that no longer run, then, in the build trees under build_dir, the
    registrations of the scratch work trees they held and those commands' scratch branches. Returns the folders
    removed."""
    removed = []
    for path in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        match = _NAME.match(path.name)
        if match and path.is_dir() and not path.is_symlink() and not _running(int(match.group(1))):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    for git_dir in [build_dir / "verl" / ".git", *sorted(build_dir.glob("*/verl/.git"))]:
        if git_dir.is_dir():
            git = Git(git_dir.parent, own=True)
            if removed:
                git.run("worktree", "prune", check=False)
            _sweep_branches(git)
    return removed


def _sweep_branches(git: Git) -> None:
    """Delete the scratch branches of commands that no longer run (a SIGKILL skips the cleanup that deletes them),
    with the scratch work trees that still have one checked out. A branch checked out in any other work tree (the
    build tree itself included: a user may check a scratch branch out there and commit on it) is someone's work: it
    stays."""
    folder = BRANCH_PREFIX.rsplit("/", 1)[0]  # for-each-ref matches whole components of a ref's name
    refs = git.run("for-each-ref", "--format=%(refname)", f"refs/heads/{folder}/", check=False)
    dead = set()
    for ref in refs.stdout.decode(errors="replace").splitlines():
        match = _BRANCH.match(ref)
        if match and not _running(int(match.group(1))):
            dead.add(ref)
    if not dead:
        return
    listing = git.run("worktree", "list", "--porcelain", check=False).stdout.decode(errors="replace")
    # Every work tree, the build tree itself (the first) included, which is never a scratch work tree.
    for index, entry in enumerate(listing.split("\n\n")):
        fields = dict(line.split(" ", 1) for line in entry.splitlines() if " " in line)
        if fields.get("branch") not in dead:
            continue
        path = Path(fields.get("worktree", ""))
        owner = _NAME.match(path.parent.name) if index else None
        if owner and not _running(int(owner.group(1))):
            git.run("worktree", "remove", "--force", str(path), check=False)
            shutil.rmtree(path.parent, ignore_errors=True)
        else:
            dead.discard(fields["branch"])
    git.run("worktree", "prune", check=False)
    for ref in sorted(dead):
        git.run("update-ref", "-d", ref, check=False)
