"""The queues of the declared bases, read for comparison: each patch with its patch ids, and the patches a
queue still awaits as hand ports (its `to-port` file)."""

from __future__ import annotations

from packaging.version import Version

from verl_patches.checkout import Project
from verl_patches.git.repo import Git
from verl_patches.model.compare import Comparison, Entry, change_id, compare, diff_part
from verl_patches.model.series import Series

TO_PORT = "to-port"


def entries(project: Project) -> list[Entry]:
    """The selected base's patches in series order, with `git patch-id --stable` and the change id of each."""
    git = Git(project.root)
    found = []
    for name in project.load_series().names:
        data = project.patch_path(name).read_bytes()
        diff = diff_part(data)
        patch_id = git.out("patch-id", "--stable", input=diff).split(" ", 1)[0] if diff else ""
        found.append(Entry(project.parse_patch(name, data), patch_id, change_id(diff)))
    return found


def pending(project: Project) -> list[str]:
    """Patch names of an older queue that this queue's `to-port` file lists as awaiting a hand port."""
    path = project.patches_dir / TO_PORT
    if not path.is_file():
        return []
    return Series.parse(path.read_text(encoding="utf-8"), f"{project.queue}/{TO_PORT}").names


def between(project: Project, one: str, other: str) -> Comparison:
    """Compare the queues of two declared bases, the older one first."""
    old, new = sorted([one, other], key=Version)
    return compare(old, entries(project.for_base(old)), new, entries(project.for_base(new)))


def drift_findings(project: Project) -> tuple[list[tuple[str, str, str | None]], list[str]]:
    """Every difference between the selected queue and each other declared queue: (where, what, reason)."""
    mine = project.selected().version
    found = []
    for base in project.bases():
        if base.version == mine:
            continue
        comparison = between(project, mine, base.version)
        newer = project.for_base(comparison.new)
        found += comparison.drift(set(pending(newer)))
    return found, [base.version for base in project.bases() if base.version != mine]
