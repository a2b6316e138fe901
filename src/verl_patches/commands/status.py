"""verl-patches status: build/verl compared with patches/.

Exit status: 0 when the tree is what patches/ describes; 1 when the tree holds work that patches/ does
not have (uncommitted, un-exported, on another branch, or an operation in progress); 3 when the tree has no
such work but is not what patches/ describes (patches/ changed since it was built, an apply did not complete,
HEAD is detached behind the build) or a file of patches/ is not byte for byte what export would write.
"""

from __future__ import annotations

import argparse

from verl_patches.checkout import Project
from verl_patches.cli import Command
from verl_patches.git.tree import BuildTree
from verl_patches.queue.sync import assess

WORK = 1
NOT_BUILT_FROM_PATCHES = 3


COMMAND = Command(
    "status",
    "list un-exported work in build/verl (non-zero if any)",
    "Compare build/verl with patches/. Exit 0: in step; 1: the tree has work not in patches/; "
    "3: patches/ changed since the tree was built, or the last apply did not complete.",
    build_lock=True,
)


def arguments(p: argparse.ArgumentParser) -> None:
    """status takes the options every command takes, and no other."""


def run(project: Project, args: argparse.Namespace) -> int:
    tree = BuildTree(project.tree_dir)
    state = assess(project, tree) if tree.exists() else None
    if state is None or (not tree.head() and not state.work):
        print(f"no build tree at {tree.path} (run `verl-patches apply`)")
        return 0
    if state.clean:
        print(f"{tree.path}: clean, {project.queue}/ is up to date")
        return 0
    for item in [*state.incomplete, *([state.behind] if state.behind else [])]:
        print(f"- {item}")
    if state.stale:
        print(f"{project.queue}/ changed since the tree was built (the tree does not have these changes):")
        for item in state.stale:
            print(f"  - {item}")
    if not state.work:
        for item in state.rewrites:
            print(f"- {item}")
        return NOT_BUILT_FROM_PATCHES
    print(f"{tree.path} holds work that is not in {project.queue}/:")
    for item in state.work:
        print(f"  - {item}")
    if state.stale:
        print(
            "Both sides changed: neither is overwritten. Keep the tree's work with `verl-patches apply --force` "
            f"(it takes a backup first) and re-create it on the new {project.queue}/, or `verl-patches export "
            f"--force` ({project.queue}/ is kept in a backup first)."
        )
    else:
        print("Export it with `verl-patches export` (after committing), or discard it on purpose.")
    return WORK
