"""verl-patches apply: materialise the patched verl tree in build/verl."""

from __future__ import annotations

import time

from verl_patches.cli import parser, project_of, reports_errors
from verl_patches.queue.apply import apply_series


def build_parser():
    p = parser("apply", "Fetch and verify the pinned upstream, import it and apply patches/series with git am -3.")
    p.add_argument("--force", action="store_true", help="rebuild even over un-exported work (kept as a backup first)")
    return p


@reports_errors
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    project = project_of(args)
    start = time.monotonic()
    tree = apply_series(project, force=args.force)
    count = len(project.load_series().names)
    head = (tree.head() or "")[:12]
    took = time.monotonic() - start
    print(f"applied {count} patch(es) on {project.load_upstream().tag} in {tree.path} (HEAD {head}, {took:.1f}s)")
    return 0
