"""A command killed with SIGKILL skips the cleanup of its scratch work: the next command deletes the scratch branches
(verl-patches/scratch-<pid>-<random>) of commands that no longer run, with the work trees that hold them, as it
removes their temporary folders. A running command's branch, and one checked out elsewhere (the build tree itself
included), stay."""

from __future__ import annotations

import os
import subprocess
import tempfile

import pytest


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def scratch_branch(checkout, pid: int, worktree: str | None, where) -> str:
    """The branch a scratch work tree of command `pid` commits to, checked out in a work tree when worktree is
    'tool' (in that command's temporary folder, as linked_worktree makes it), 'user' (a folder of the user's) or
    'build' (the build tree itself, with a commit of the user's on it)."""
    branch = f"verl-patches/scratch-{pid}-{os.urandom(4).hex()}"
    checkout.user_git("branch", branch, "HEAD")
    if worktree == "build":
        checkout.user_git("checkout", "--quiet", branch)
        checkout.commit_in_tree("mine.txt", "my work\n", "my work")
        return branch
    if worktree == "tool":
        path = tempfile.mkdtemp(prefix=f"verl-patches-scratch-{pid}-", dir=where) + "/tree"
    elif worktree == "user":
        path = str(where / f"mine-{pid}")
    else:
        return branch
    checkout.user_git("worktree", "add", "--quiet", path, branch)
    return branch


def worktrees(checkout) -> int:
    return checkout.user_git("worktree", "list", "--porcelain").count("worktree ")


@pytest.mark.attack
@pytest.mark.parametrize("command", [["status"], ["check", "--no-upstream-checks"]])
@pytest.mark.parametrize(
    ("owner", "worktree", "swept"),
    [
        ("dead", None, True),
        ("dead", "tool", True),
        ("dead", "user", False),  # checked out in the user's own work tree: not the tool's to delete
        ("dead", "build", False),  # checked out (and committed on) in the build tree itself
        ("running", None, False),
        ("running", "tool", False),
    ],
    ids=[
        "killed",
        "killed-with-worktree",
        "killed-checked-out-by-user",
        "killed-checked-out-in-build-tree",
        "running",
        "running-with-worktree",
    ],
)
def test_the_next_command_deletes_the_scratch_branches_of_killed_commands(
    checkout, tmp_path, monkeypatch, command, owner, worktree, swept
):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    assert checkout.cli("apply") == 0
    pid = dead_pid() if owner == "dead" else os.getpid()
    branch = scratch_branch(checkout, pid, worktree, tmp_path / ("tmp" if worktree == "tool" else ""))
    checkout.user_git("branch", "verl-patches-notes", "HEAD")  # a user's branch of a similar name
    before = worktrees(checkout)
    assert checkout.cli(*command) in (0, 1)
    branches = checkout.user_git("branch", "--list", "--format=%(refname:short)").split()
    assert (branch not in branches) == swept, branches
    assert "verl-patches-notes" in branches and "series" in branches
    assert worktrees(checkout) == before - (1 if swept and worktree else 0)
    if worktree == "build":  # the user's commit is still on the branch checked out
        assert checkout.user_git("symbolic-ref", "HEAD").strip() == f"refs/heads/{branch}"
        assert checkout.user_git("log", "-1", "--format=%s", branch).strip() == "my work"
    if swept:
        assert list((tmp_path / "tmp").iterdir()) == []
