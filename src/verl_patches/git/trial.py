"""Throw-away work trees of build/verl, for trial applies, proofs and rebases."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

from verl_patches.errors import PatchApplyError, VerlPatchesError
from verl_patches.git import scratch
from verl_patches.git.scratch import BRANCH_PREFIX
from verl_patches.git.tree import BuildTree
from verl_patches.model.upstream import Upstream
from verl_patches.sources.source import import_source


@contextlib.contextmanager
def linked_worktree(main: BuildTree, commit: str, keep: str | None = None) -> Iterator[BuildTree]:
    """A detached linked worktree of main at commit, removed afterwards (its commits stay in main's objects).

    What it commits goes to a branch of its own (verl-patches/scratch-<pid>-<random>, deleted afterwards), or to
    branch `keep`, which is left for the user: a branch of that name must hold only what the tool last wrote there
    (BuildTree.check_tool_branch), and is recorded as the tool's when the block ends."""
    if keep:
        main.check_tool_branch(keep)
    branch = keep or f"{BRANCH_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
    with scratch.folder("scratch") as tmp:
        path = Path(tmp) / "tree"
        main.git.run("worktree", "add", "--quiet", "--detach", str(path), commit)
        try:
            yield BuildTree(path, branch=branch)
        finally:
            main.git.run("worktree", "remove", "--force", str(path), check=False)
            main.git.run("worktree", "prune", check=False)
            if keep:
                main.mark_tool_branch(keep)
            else:
                main.git.run("update-ref", "-d", f"refs/heads/{branch}", check=False)


@contextlib.contextmanager
def scratch_tree(
    main: BuildTree, upstream: Upstream, cache_dir: Path, mirror: str | None = None
) -> Iterator[BuildTree]:
    """A BuildTree at the import commit of upstream, without touching main's work tree.

    A linked worktree of main at that import when main has it (fast); else a linked worktree with a new,
    untagged import, so that its commits are in main's objects; else (no build tree yet) a fresh repository.
    """
    base = main.import_commit(upstream)
    if base:
        with linked_worktree(main, base) as tree:
            yield tree
        return
    if main.exists() and main.head():
        with linked_worktree(main, main.head() or "HEAD") as tree:
            import_source(tree, upstream, cache_dir, mirror, tag=False)
            yield tree
        return
    with scratch.folder("trial") as tmp:
        tree = BuildTree(Path(tmp) / "tree")
        import_source(tree, upstream, cache_dir, mirror)
        yield tree


def apply_each(tree: BuildTree, patches: list[tuple[str, Path]], marker: bool = True) -> list[str]:
    """Apply (name, file) pairs in order; returns the commit of each. A patch that changes nothing is an error."""
    commits = []
    for name, path in patches:
        if not tree.am(name, path, marker=marker):
            raise PatchApplyError(name, "the patch changes nothing on this base (already applied upstream?)")
        head = tree.head()
        if head is None:
            raise VerlPatchesError(f"no HEAD after applying {name}")
        commits.append(head)
    return commits
