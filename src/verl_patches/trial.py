"""Apply a series in a throw-away work tree, leaving the build tree alone."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from verl_patches.errors import PatchApplyError
from verl_patches.layout import Project
from verl_patches.model.upstream import Upstream
from verl_patches.sdist import fetch
from verl_patches.tree import BuildTree


@contextlib.contextmanager
def scratch_tree(project: Project, upstream: Upstream, log=print) -> Iterator[BuildTree]:
    """A BuildTree at the import commit of upstream, in a temporary folder.

    It is a linked worktree of build/verl when that repository already has the import (fast);
    otherwise a fresh repository with its own import.
    """
    main = BuildTree(project.tree_dir)
    base = main.import_commit(upstream)
    with tempfile.TemporaryDirectory(prefix="verl-patches-trial-") as tmp:
        path = Path(tmp) / "tree"
        if base:
            main.git.run("worktree", "add", "--quiet", "--detach", str(path), base)
            try:
                yield BuildTree(path)
            finally:
                main.git.run("worktree", "remove", "--force", str(path), check=False)
                main.git.run("worktree", "prune", check=False)
        else:
            tree = BuildTree(path)
            tree.import_sdist(upstream, fetch(upstream, project.cache_dir, log=log))
            yield tree


def trial_apply(tree: BuildTree, project: Project, names: list[str]) -> tuple[list[str], PatchApplyError | None]:
    """Apply names in order; return the names applied and the first failure, if any."""
    applied = []
    for name in names:
        try:
            tree.am(name, project.patch_path(name))
        except PatchApplyError as exc:
            return applied, exc
        applied.append(name)
    return applied, None
