"""verl-patches export: write the build tree's commits back to patches/ and series."""

from __future__ import annotations

import argparse

from verl_patches.checkout import Project
from verl_patches.cli import Command
from verl_patches.errors import VerlPatchesError
from verl_patches.git.tree import BuildTree
from verl_patches.queue import backups, record
from verl_patches.queue.sync import assess, planned_changes, write_export

COMMAND = Command(
    "export",
    "write build/verl's commits back to patches/",
    "Export the commits above upstream/<version> in build/verl to patches/ (byte-stable).",
    build_lock=True,
    queue_lock=True,
    recovery="run `verl-patches export` again to finish the export",
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--force",
        action="store_true",
        help="export even when patches/ changed since build/verl was built, or when its last apply stopped at a "
        "patch that did not apply (patches/ is kept as a backup first)",
    )


def run(project: Project, args: argparse.Namespace) -> int:
    upstream = project.load_upstream()
    tree = BuildTree(project.tree_dir)
    if not tree.exists() or not tree.head():
        raise VerlPatchesError(f"no build tree at {tree.path}: run `verl-patches apply` first")
    state = assess(project, tree)
    if state.in_progress or state.dirty:
        listing = "\n".join(f"  {line}" for line in [*state.in_progress, *state.dirty][:20])
        raise VerlPatchesError(
            f"refusing to export: {tree.path} has uncommitted changes or an operation in progress:\n{listing}\n"
            "Commit (or amend) them in the build tree first, or discard them with git there."
        )
    rec = state.record
    if rec and rec.state in (record.APPLYING, record.FAILED) and not (args.force and rec.state == record.FAILED):
        raise VerlPatchesError(
            f"refusing to export: {project.tree_name} does not hold the whole series, so an export would remove the "
            f"patches it lacks from {project.queue}/:\n"
            + "\n".join(f"  - {item}" for item in state.incomplete)
            + (
                f"\nWhen the patches it lacks are ported by hand (committed on top) or meant to go, `export --force` "
                f"writes the tree's series ({project.queue}/ kept in a backup first)."
                if rec.state == record.FAILED
                else ""
            )
        )
    if state.behind:
        raise VerlPatchesError(f"refusing to export: {state.behind}")
    if state.stale and not args.force:
        detail = "\n".join(f"  - {item}" for item in [*state.stale, *state.work])
        raise VerlPatchesError(
            f"refusing to export: {project.queue}/ changed since {project.tree_name} was built, and an export would "
            "overwrite "
            f"those changes with the tree's older series:\n{detail}\n"
            f"Run `verl-patches apply` to rebuild the tree from {project.queue}/ (`--force` keeps a backup of the "
            f"tree's commits first), or `verl-patches export --force` to overwrite {project.queue}/ (kept in a "
            "backup first)."
        )
    base = tree.import_commit(upstream)
    if not base:
        raise VerlPatchesError(
            f"{tree.path} has no {upstream.tag} import matching upstream.toml's sha256: run `verl-patches apply`"
        )
    if tree.git.out("merge-base", base, "HEAD") != base:
        raise VerlPatchesError(f"HEAD of {tree.path} is not above {upstream.tag}")
    exported = tree.export(base)
    replaced, _ = planned_changes(project, exported)
    if replaced:
        kept = backups.take_patches(project, f"{project.queue}/ before `export` changed {', '.join(replaced)}")
        print(f"kept a backup of {project.queue}/: {kept.id} ({kept.folder})")
    head = tree.head()
    record.write(tree.git_dir(), record.Record(record.EXPORTING, head=head, **record.built_from(project)))
    changes = write_export(project, exported)
    record.write(tree.git_dir(), record.Record(record.COMPLETE, head=head, **record.built_from(project)))
    for line in changes:
        print(line)
    print(f"exported {len(exported)} patch(es); {'no changes' if not changes else f'{len(changes)} change(s)'}")
    return 0
