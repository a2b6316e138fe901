"""verl-patches table: one row per patch: subject, upstream status, files touched, tests added."""

from __future__ import annotations

from verl_patches.commands.common import parser, project_of, reports_errors
from verl_patches.model.patch import Patch
from verl_patches.model.upstream import local_version


def rows(patches: list[Patch]) -> list[list[str]]:
    table = [["#", "subject", "upstream status", "files", "tests added or changed"]]
    for index, patch in enumerate(patches, start=1):
        status = patch.upstream_status.value if patch.upstream_status else "(missing)"
        code = [f for f in patch.files if not f.startswith("tests/")]
        tests = [f.rsplit("/", 1)[-1] for f in patch.test_files]
        table.append(
            [
                str(index),
                patch.subject,
                status,
                f"{len(code)} code, {len(patch.test_files)} test",
                ", ".join(tests) or "-",
            ]
        )
    return table


def render(table: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = []
    for n, row in enumerate(table):
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)


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
    return 0
