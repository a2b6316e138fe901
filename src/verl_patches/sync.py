"""Keeping patches/ and the build tree in step: detect un-exported work, write an export."""

from __future__ import annotations

from verl_patches.layout import Project
from verl_patches.model.series import Series
from verl_patches.tree import BuildTree, ExportedPatch


def export_differences(project: Project, exported: list[ExportedPatch]) -> list[str]:
    """What differs between an export of the tree and patches/ (empty when they agree byte for byte)."""
    series = project.load_series()
    diffs = []
    names = [e.name for e in exported]
    if names != series.names:
        diffs.append(f"series order differs: patches/series has {series.names}, the build tree gives {names}")
    for item in exported:
        path = project.patch_path(item.name)
        if not path.exists():
            diffs.append(f"{item.name}: in the build tree, missing from patches/")
        elif path.read_bytes() != item.data:
            diffs.append(f"{item.name}: patches/{item.name} differs from the build tree's commit")
    for name in series.names:
        if name not in names:
            diffs.append(f"{name}: listed in patches/series, not in the build tree")
    return diffs


def unexported_work(project: Project, tree: BuildTree) -> list[str]:
    """Everything in the build tree that would be lost if it were rebuilt from patches/."""
    if not tree.exists() or not tree.head():
        return []
    problems = list(tree.in_progress())
    dirty = tree.dirty_paths()
    if dirty:
        shown = "\n".join(f"    {line}" for line in dirty[:20])
        more = f"\n    ... and {len(dirty) - 20} more" if len(dirty) > 20 else ""
        problems.append(f"uncommitted changes in {tree.path}:\n{shown}{more}")
    head = tree.head()
    if head != tree.synced_head():
        base = tree.base_tag()
        if base is None:
            problems.append(f"HEAD of {tree.path} is not above any upstream/* tag")
        else:
            diffs = export_differences(project, tree.export(base))
            if diffs:
                commits = "\n".join(f"    {sha[:12]} {subject}" for sha, subject in tree.commits_above(base))
                problems.append(
                    "commits that patches/ does not have:\n" + (commits or "    (none above the base)") + "\n  "
                    + "\n  ".join(diffs)
                )  # fmt: skip
    return problems


def write_export(project: Project, exported: list[ExportedPatch]) -> list[str]:
    """Write the export into patches/ and series; returns the names of files written or removed."""
    old = project.load_series()
    project.patches_dir.mkdir(parents=True, exist_ok=True)
    changed = []
    new_names = [e.name for e in exported]
    for item in exported:
        path = project.patch_path(item.name)
        if not path.exists() or path.read_bytes() != item.data:
            path.write_bytes(item.data)
            changed.append(f"wrote {item.name}")
    for name in old.names:
        if name not in new_names and project.patch_path(name).exists():
            project.patch_path(name).unlink()
            changed.append(f"removed {name}")
    series = Series(names=new_names, header=old.header)
    text = series.format()
    if not project.series_path.exists() or project.series_path.read_text(encoding="utf-8") != text:
        project.series_path.write_text(text, encoding="utf-8")
        changed.append("wrote series")
    return changed
