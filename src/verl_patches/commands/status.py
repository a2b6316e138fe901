"""verl-patches status: list work in the build tree that patches/ does not have."""

from __future__ import annotations

from verl_patches.commands.common import parser, project_of, reports_errors
from verl_patches.sync import unexported_work
from verl_patches.tree import BuildTree


def build_parser():
    return parser("status", "Exit non-zero when the build tree holds uncommitted or un-exported work.")


@reports_errors
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    project = project_of(args)
    tree = BuildTree(project.tree_dir)
    if not tree.exists() or not tree.head():
        print(f"no build tree at {tree.path} (run `verl-patches apply`)")
        return 0
    work = unexported_work(project, tree)
    if not work:
        print(f"{tree.path}: clean, patches/ is up to date")
        return 0
    print(f"{tree.path} holds work that is not in patches/:")
    for item in work:
        print(f"  - {item}")
    print("Export it with `verl-patches export` (after committing), or discard it on purpose.")
    return 1
