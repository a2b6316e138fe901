"""verl-patches apply: materialise the patched verl tree in build/verl."""

from __future__ import annotations

import argparse
import time

from verl_patches.checkout import Project
from verl_patches.cli import Command
from verl_patches.queue.apply import apply_series

COMMAND = Command(
    "apply",
    "materialise build/verl: pinned upstream source + patches/series",
    "Fetch and verify the pinned upstream, import it and apply patches/series with git am -3.",
    build_lock=True,
    recovery="run `verl-patches apply` again; it recovers the build tree (keeping a backup of what it held)",
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force", action="store_true", help="rebuild even over un-exported work (kept as a backup first)")


def run(project: Project, args: argparse.Namespace) -> int:
    start = time.monotonic()
    tree = apply_series(project, force=args.force)
    count = len(project.load_series().names)
    head = (tree.head() or "")[:12]
    took = time.monotonic() - start
    print(f"applied {count} patch(es) on {project.load_upstream().tag} in {tree.path} (HEAD {head}, {took:.1f}s)")
    return 0
