"""Pieces every subcommand shares: the -C option, error reporting, the apply step."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
from collections.abc import Callable

from verl_patches.errors import UnexportedWorkError, VerlPatchesError
from verl_patches.layout import Project
from verl_patches.source import import_pinned, mirror_from
from verl_patches.sync import unexported_work
from verl_patches.tree import BuildTree
from verl_patches.trial import apply_each


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"verl-patches {prog}", description=description)
    p.add_argument("-C", "--project", metavar="DIR", help="the verl-patches checkout (default: found from the cwd)")
    p.add_argument(
        "--mirror",
        metavar="DIR|URL",
        help="a folder or URL prefix holding upstream tag archives (default: $VERL_PATCHES_MIRROR; else GitHub)",
    )
    return p


def project_of(args: argparse.Namespace) -> Project:
    return dataclasses.replace(Project.find(args.project), mirror=mirror_from(args.mirror))


def reports_errors(func: Callable[[list[str] | None], int]) -> Callable[[list[str] | None], int]:
    @functools.wraps(func)
    def wrapper(argv: list[str] | None = None) -> int:
        try:
            return func(argv)
        except VerlPatchesError as exc:
            print(f"verl-patches: error: {exc}", file=sys.stderr)
            return 1

    return wrapper


def refuse_unexported(project: Project, tree: BuildTree, action: str) -> None:
    work = unexported_work(project, tree)
    if work:
        listing = "\n".join(f"  - {item}" for item in work)
        raise UnexportedWorkError(
            f"refusing to {action}: the build tree holds work that is not in patches/:\n{listing}\n"
            "Commit it in the build tree and run `verl-patches export`, or discard it on purpose with "
            "`verl-patches apply --force` (which first keeps a backup branch and bundle)."
        )


def apply_series(project: Project, force: bool = False, log=print) -> BuildTree:
    """Rebuild the build tree from the pinned upstream source and patches/ (refusing to lose work)."""
    upstream = project.load_upstream()
    series = project.load_series()
    project.load_patches(series)  # every listed file exists and parses
    tree = BuildTree(project.tree_dir)
    if tree.exists() and tree.head():
        try:
            refuse_unexported(project, tree, "rebuild the build tree")
        except UnexportedWorkError:
            if not force:
                raise
            log(f"--force: kept a backup: {tree.backup(project.backup_dir)}")
    import_pinned(tree, upstream, project.cache_dir, project.mirror, log=log)
    try:
        apply_each(tree, [(name, project.patch_path(name)) for name in series.names])
    finally:
        # What is in the tree now came from patches/ alone, so it is not work to protect.
        tree.mark_synced()
    return tree
