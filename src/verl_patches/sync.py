"""Keeping patches/ and the build tree in step: what each side has that the other lacks, writing an export."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from verl_patches import record
from verl_patches.layout import Project
from verl_patches.record import Record
from verl_patches.tree import BuildTree, ExportedPatch


def describe_differences(
    series: list[str],
    on_disk: dict[str, bytes],
    exported: list[ExportedPatch],
    commits: list[str],
    queue: str = "patches",
) -> list[str]:
    """One line per difference between the queue folder (series order, file bytes) and an export of the tree
    (with each exported patch's commit id): new, changed and dropped patches, then the order."""
    lines = []
    names = [item.name for item in exported]
    for item, commit in zip(exported, commits or [""] * len(exported), strict=True):
        label = f"{commit[:12]} {item.patch.subject}".strip()
        if item.name not in series:
            lines.append(f"new: {label} (not in {queue}/; export writes {queue}/{item.name})")
        elif on_disk.get(item.name) != item.data:
            lines.append(f"changed: {label} (differs from {queue}/{item.name})")
    for name in series:
        if name not in names:
            lines.append(f"dropped: {queue}/{name} is in {queue}/series but not in the build tree")
    common_series = [name for name in series if name in names]
    common_tree = [name for name in names if name in series]
    if common_series != common_tree:
        lines.append(f"reordered: the build tree's order of the patches differs from {queue}/series")
    return lines


def export_differences(project: Project, exported: list[ExportedPatch], commits: list[str] | None = None) -> list[str]:
    """What differs between an export of the tree and patches/ (empty when they agree byte for byte)."""
    series = project.load_series().names
    on_disk = {name: project.patch_path(name).read_bytes() for name in series if project.patch_path(name).is_file()}
    return describe_differences(series, on_disk, exported, commits or [], project.queue)


@dataclass
class TreeState:
    """build/verl compared with patches/. `work` is what the tree has and patches/ lacks; `stale` and
    `incomplete` say that the tree does not hold what patches/ describes."""

    record: Record | None = None
    in_progress: list[str] = field(default_factory=list)
    dirty: list[str] = field(default_factory=list)
    unexported: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)

    @property
    def work(self) -> list[str]:
        items = list(self.in_progress)
        if self.dirty:
            shown = "\n".join(f"    {line}" for line in self.dirty[:20])
            more = f"\n    ... and {len(self.dirty) - 20} more" if len(self.dirty) > 20 else ""
            items.append(f"uncommitted changes:\n{shown}{more}")
        if self.unexported:
            items.append("commits that patches/ does not have:\n" + "\n".join(f"    {u}" for u in self.unexported))
        return items

    @property
    def interrupted_apply(self) -> bool:
        return self.record is not None and self.record.state == record.APPLYING

    @property
    def clean(self) -> bool:
        return not (self.work or self.stale or self.incomplete)


def assess(project: Project, tree: BuildTree) -> TreeState:
    if not tree.exists():
        return TreeState()
    rec = record.read(tree.git_dir())
    head = tree.head()
    if not head:
        return TreeState(record=rec)
    state = TreeState(record=rec, in_progress=tree.in_progress(), dirty=tree.dirty_paths())
    if rec and rec.state == record.APPLYING:
        state.incomplete.append(
            "an apply was interrupted: `verl-patches apply` recovers (it keeps a backup of what the tree holds)"
        )
        return state
    if rec and rec.state == record.EXPORTING:
        state.incomplete.append("an export was interrupted: run `verl-patches export` again to finish it")
        state.unexported.append(f"{head[:12]} (HEAD): the export of this tree did not finish")
        return state
    if rec and rec.state == record.FAILED:
        state.incomplete.append(
            f"the last apply stopped at {rec.patch}, which does not apply: the tree holds only the patches before "
            f"it. Fix that patch in {project.queue}/ and run `verl-patches apply`"
        )
        if head != rec.head:
            state.unexported += _commits_since(tree, rec.head) or [f"{head[:12]} (HEAD moved since the failed apply)"]
        return state
    if rec and rec.source != record.source_digest(project):
        state.stale.append(
            f"{project.queue}/ or upstream.toml changed since {project.tree_name} was built (a pull, a checkout or "
            "a hand edit): "
            "`verl-patches apply` rebuilds the tree from them"
        )
    if rec and rec.head == head:
        return state
    base = tree.base_tag()
    if base is None:
        state.unexported.append(f"HEAD of {tree.path} is not above any upstream/* tag")
        return state
    exported = tree.export(base)
    commits = [sha for sha, _ in tree.commits_above(base)]
    differences = export_differences(project, exported, commits)
    if not differences:
        state.stale = []  # the tree's commits export to exactly what patches/ holds now
    elif state.stale:
        moved = _commits_since(tree, rec.head) if rec else None
        if moved is None:
            moved = ["(history rewritten since the build; the tree's commits:)"] + (_commits_since(tree, base) or [])
        state.unexported += moved
    else:
        state.unexported += differences
    return state


def _commits_since(tree: BuildTree, commit: str | None) -> list[str] | None:
    """'<sha> <subject>' of the commits from commit to HEAD; None when HEAD does not descend from commit."""
    if not commit or not tree.git.ok("merge-base", "--is-ancestor", commit, "HEAD"):
        return None
    return [f"{sha[:12]} {subject}" for sha, subject in tree.commits_above(commit)]


def _write_atomic(path: os.PathLike, data: bytes) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)


def planned_changes(project: Project, exported: list[ExportedPatch]) -> tuple[list[str], list[str]]:
    """(files of patches/ an export would overwrite or remove, files it would add)."""
    old = project.load_series()
    names = [e.name for e in exported]
    replaced, added = [], []
    for item in exported:
        path = project.patch_path(item.name)
        if not path.exists():
            added.append(item.name)
        elif path.read_bytes() != item.data:
            replaced.append(item.name)
    replaced += [n for n in old.names if n not in names and project.patch_path(n).exists()]
    if (
        project.series_path.exists()
        and project.series_path.read_text(encoding="utf-8") != old.with_names(names).format()
    ):
        replaced.append("series")
    return replaced, added


def write_export(project: Project, exported: list[ExportedPatch]) -> list[str]:
    """Write the export into patches/ and series; returns the names of files written or removed."""
    old = project.load_series()
    project.patches_dir.mkdir(parents=True, exist_ok=True)
    changed = []
    new_names = [e.name for e in exported]
    for item in exported:
        path = project.patch_path(item.name)
        if not path.exists() or path.read_bytes() != item.data:
            _write_atomic(path, item.data)
            changed.append(f"wrote {item.name}")
    text = old.with_names(new_names).format()
    if not project.series_path.exists() or project.series_path.read_text(encoding="utf-8") != text:
        _write_atomic(project.series_path, text.encode("utf-8"))
        changed.append("wrote series")
    for name in old.names:
        if name not in new_names and project.patch_path(name).exists():
            project.patch_path(name).unlink()
            changed.append(f"removed {name}")
    return changed
