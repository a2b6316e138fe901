"""verl-patches table: one row per patch: subject, where it stands upstream, files touched, tests added."""

from __future__ import annotations

from verl_patches.cli import parser, project_of, reports_errors
from verl_patches.model.table import render, rows, totals
from verl_patches.model.upstream import local_version


def build_parser():
    p = parser("table", "Print the series (the queue of a base) as a table.")
    p.add_argument("--all", action="store_true", help="every declared base's queue, oldest first")
    return p


@reports_errors
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    project = project_of(args)
    chosen = [project.for_base(base.version) for base in project.bases()] if args.all else [project]
    for n, one in enumerate(chosen):
        patches = one.load_patches()
        upstream = one.load_upstream()
        wheel = f"{upstream.name}-{local_version(upstream.version, len(patches))}-py3-none-any.whl"
        print(("\n" if n else "") + f"verl {upstream.version} ({one.queue}) + {len(patches)} patch(es): {wheel}")
        print(render(rows(patches)))
        print(totals(patches))
    return 0
