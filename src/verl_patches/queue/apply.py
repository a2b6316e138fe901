"""Rebuilding the build tree from the pinned source and the queue, refusing to lose work."""

from __future__ import annotations

import logging

from verl_patches.checkout import Project
from verl_patches.errors import PatchApplyError, VerlPatchesError
from verl_patches.git.tree import BuildTree
from verl_patches.git.trial import apply_each
from verl_patches.queue import backups, record
from verl_patches.queue.sync import assess, planned_changes
from verl_patches.sources.source import fetch, import_pinned

logger = logging.getLogger(__name__)


def refuse_unexported(project: Project, tree: BuildTree, action: str) -> None:
    """Raise unless the build tree holds exactly what its queue folder describes."""
    state = assess(project, tree)
    if state.holds_the_queue:
        return
    behind = [state.behind] if state.behind else []
    listing = "\n".join(f"  - {item}" for item in [*state.work, *state.incomplete, *behind, *state.stale])
    if state.work:
        todo = (
            f"Commit it in {project.tree_name} and run `verl-patches export`, or discard it on purpose with "
            "`verl-patches apply --force` (which first keeps a backup: `verl-patches backups` lists them)."
        )
        raise VerlPatchesError(
            f"refusing to {action}: {project.tree_name} holds work that is not in {project.queue}/:\n{listing}\n{todo}"
        )
    raise VerlPatchesError(
        f"refusing to {action}: {project.tree_name} is not what {project.queue}/ describes:\n{listing}\n"
        f"Run `verl-patches apply` to rebuild it from {project.queue}/."
    )


def prepare_rebuild(project: Project, tree: BuildTree, force: bool) -> bool:
    """Before build/verl is rebuilt: refuse to lose work, or keep it in a backup. True when the tree is
    what an interrupted apply left (its git locks are then the tool's own, and stale)."""
    state = assess(project, tree)
    if state.unborn:  # not even --force: a backup is a commit above HEAD, and HEAD has none
        raise VerlPatchesError(
            f"refusing to rebuild the build tree: {project.tree_name} is on branch {state.unborn}, which has no "
            f"commit yet, with {len(state.dirty)} uncommitted or untracked path(s). Nothing was changed. Commit them "
            f"on {state.unborn} (then `git switch {tree.branch}`), or move them out of {project.tree_name}."
        )
    if state.work and not (force or state.interrupted_apply):
        refuse_unexported(project, tree, "rebuild the build tree")
    reproducible = (
        state.record is not None
        and state.record.state in (record.COMPLETE, record.FAILED)
        and state.record.head == tree.head()
        and not state.stale
        and not state.work
    )
    head = tree.head()
    has_commits = bool(head) and head != tree.import_commit(project.load_upstream())
    if not reproducible and (state.work or has_commits):
        if state.interrupted_apply:
            reason = f"what an interrupted apply left in {project.tree_name}"
        elif state.work:
            reason = f"un-exported work in {project.tree_name}, before `apply --force` rebuilt it"
        else:
            reason = f"{project.tree_name} before `apply` rebuilt it from changed {project.queue}/"
        kept = backups.take_tree(project, tree, reason)
        if kept:
            logger.info(
                f"kept a backup of {project.tree_name}: {kept.id} (branch {kept.info['branch']}, {kept.folder}); "
                "`verl-patches backups` says how to restore it"
            )
    return state.interrupted_apply


def apply_series(project: Project, force: bool = False) -> BuildTree:
    """Rebuild the build tree from the pinned upstream source and patches/ (refusing to lose work).

    The build record says `complete` only after every patch applied; until then `applying`, and `failed`
    with the patch's name when one does not apply. A source that does not match its pin changes nothing."""
    upstream = project.load_upstream()
    series = project.load_series()
    project.load_patches(series)  # every listed file exists, parses and is listed once
    tree = BuildTree(project.tree_dir)
    interrupted = prepare_rebuild(project, tree, force) if tree.exists() else False
    if not tree.import_commit(upstream):
        fetch(upstream, project.cache_dir, project.mirror)  # a download fails before the tree is touched
    source = record.built_from(project)
    previous = record.read(tree.git_dir()) if tree.exists() else None
    if tree.exists():
        record.write(tree.git_dir(), record.Record(record.APPLYING, head=tree.head(), **source))
        if interrupted or not tree.head():
            # The record says an apply was cut short: git's locks are those its git commands left. A lock
            # in any other state may be a user's git still at work in build/verl; it is left alone.
            for stale in tree.lock_files():
                stale.unlink(missing_ok=True)
                logger.info(f"removed {stale}, left by an interrupted git command")
    tree.init()
    try:
        base = import_pinned(tree, upstream, project.cache_dir, project.mirror, checkout=False)
    except VerlPatchesError:  # a mismatched or unreadable source: the tree is as it was, and so is its record
        record.put_back(tree.git_dir(), previous)
        raise
    record.write(tree.git_dir(), record.Record(record.APPLYING, head=tree.head(), **source))
    tree.discard_in_progress()
    tree.reset_to(base)
    applied = tree.head()
    for name in series.names:
        try:
            apply_each(tree, [(name, project.patch_path(name))])
        except PatchApplyError as exc:
            record.write(tree.git_dir(), record.Record(record.FAILED, head=tree.head(), patch=name, **source))
            raise PatchApplyError(
                name,
                f"{exc.detail}\nThe tool aborted that git am: nothing is left in progress, and {project.tree_name} "
                f"holds the patches before it. Fix {project.queue}/{name} and run `verl-patches apply`, or port "
                "it and the patches after it by hand on top of the tree (commit each) and run "
                "`verl-patches export --force`.",
            ) from None
        applied = tree.head()
    rewrites = sum(planned_changes(project, tree.export(base)), [])
    record.write(tree.git_dir(), record.Record(record.COMPLETE, head=applied, rewrites=rewrites, **source))
    return tree
