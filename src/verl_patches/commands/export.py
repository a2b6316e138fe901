"""verl-patches export: write the build tree's commits back to patches/ and series."""

from __future__ import annotations

from verl_patches.commands.common import parser, project_of, reports_errors
from verl_patches.errors import UnexportedWorkError, VerlPatchesError
from verl_patches.sync import write_export
from verl_patches.tree import BuildTree


def build_parser():
    return parser("export", "Export the commits above upstream/<version> in build/verl to patches/ (byte-stable).")


@reports_errors
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    project = project_of(args)
    upstream = project.load_upstream()
    tree = BuildTree(project.tree_dir)
    if not tree.exists() or not tree.head():
        raise VerlPatchesError(f"no build tree at {tree.path}: run `verl-patches apply` first")
    problems = tree.in_progress()
    dirty = tree.dirty_paths()
    if problems or dirty:
        listing = "\n".join(f"  {line}" for line in [*problems, *dirty][:20])
        raise UnexportedWorkError(
            f"refusing to export: {tree.path} has uncommitted changes or an operation in progress:\n{listing}\n"
            "Commit (or amend) them in the build tree first, or discard them with git there."
        )
    base = tree.import_commit(upstream)
    if not base:
        raise VerlPatchesError(
            f"{tree.path} has no {upstream.tag} import matching upstream.toml's sha256: run `verl-patches apply`"
        )
    if tree.git.out("merge-base", base, "HEAD") != base:
        raise VerlPatchesError(f"HEAD of {tree.path} is not above {upstream.tag}")
    exported = tree.export(base)
    changes = write_export(project, exported)
    tree.mark_synced()
    for line in changes:
        print(line)
    print(f"exported {len(exported)} patch(es); {'no changes' if not changes else f'{len(changes)} change(s)'}")
    return 0
