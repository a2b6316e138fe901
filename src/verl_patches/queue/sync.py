"""Keeping patches/ and the build tree in step: what each side has that the other lacks, writing an export."""

from __future__ import annotations

from dataclasses import dataclass, field

from verl_patches.checkout import Project
from verl_patches.errors import VerlPatchesError
from verl_patches.git.repo import Git
from verl_patches.git.tree import BuildTree, ExportedPatch
from verl_patches.queue import record
from verl_patches.queue.record import Record
from verl_patches.sources import files


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
    """build/verl compared with patches/. `work` is what the tree has and patches/ lacks; `stale`,
    `incomplete` and `behind` say that the tree does not hold what patches/ describes; `rewrites` names the
    files of patches/ that export would rewrite although the tree holds nothing new (their bytes are not
    export's: a signature block, another encoding, ...)."""

    record: Record | None = None
    in_progress: list[str] = field(default_factory=list)
    dirty: list[str] = field(default_factory=list)
    unexported: list[str] = field(default_factory=list)
    unmergeable: list[str] = field(default_factory=list)
    branches: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)
    behind: str | None = None
    rewrites: list[str] = field(default_factory=list)
    unborn: str | None = None  # HEAD's branch when it is a user's branch without a commit
    overwritten: list[str] = field(default_factory=list)  # ignored files a rebuild would overwrite

    @property
    def work(self) -> list[str]:
        items = list(self.in_progress)
        if self.dirty:
            shown = "\n".join(f"    {line}" for line in self.dirty[:20])
            more = f"\n    ... and {len(self.dirty) - 20} more" if len(self.dirty) > 20 else ""
            items.append(f"uncommitted changes:\n{shown}{more}")
        if self.overwritten:
            items.append(
                "ignored files at paths the upstream import tracks (a rebuild checks the import out over them):\n"
                + "\n".join(f"    {path}" for path in self.overwritten)
            )
        if self.unexported:
            items.append("commits that patches/ does not have:\n" + "\n".join(f"    {u}" for u in self.unexported))
        if self.unmergeable:
            items.append(
                "commits that cannot be patches (fix them before an export):\n"
                + "\n".join(f"    {u}" for u in self.unmergeable)
            )
        return items + self.branches

    @property
    def interrupted_apply(self) -> bool:
        return self.record is not None and self.record.state == record.APPLYING

    @property
    def holds_the_queue(self) -> bool:
        """The tree holds what patches/ describes and nothing else."""
        return not (self.work or self.stale or self.incomplete or self.behind)

    @property
    def clean(self) -> bool:
        return self.holds_the_queue and not self.rewrites


def _unborn(tree: BuildTree, rec: Record | None) -> TreeState:
    """A tree whose HEAD has no commit: the tool's branch before its first import, or a user's orphan branch, whose
    files (tracked or not) are work that no backup can hold as a commit of HEAD."""
    branch = tree.current_branch()
    dirty = tree.dirty_paths() if branch not in (None, tree.branch) else []
    if not dirty:  # the tool's branch, or an empty orphan branch: nothing to lose
        return TreeState(record=rec)
    state = TreeState(record=rec, dirty=dirty, unborn=branch)
    state.in_progress.append(
        f"HEAD is on branch {branch}, which has no commit yet (an orphan branch): commit its files there, "
        f"then `git switch {tree.branch}` back to the series"
    )
    return state


def assess(project: Project, tree: BuildTree) -> TreeState:
    if not tree.exists():
        return TreeState()
    rec = record.read(tree.git_dir())
    head = tree.head()
    if not head:
        return _unborn(tree, rec)
    state = TreeState(record=rec, in_progress=tree.in_progress(), dirty=tree.dirty_paths())
    state.overwritten = tree.ignored_at_imported_paths()
    state.branches = _branches_elsewhere(tree, head, rec, project.queue)
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
        if not state.stale:
            state.rewrites = [
                f"export would write {project.queue}/{name} differently: the file is not byte for byte what export "
                "writes from the commits it applied as (a signature block, another encoding or file name, ...); "
                "`verl-patches export` rewrites it"
                for name in rec.rewrites
            ]
        else:
            _find_lost_exports(project, tree, state, set())
        return state
    base = tree.base_tag()
    if base is None:
        state.unexported.append(f"HEAD of {tree.path} is not above any upstream/* tag")
        return state
    state.unmergeable = tree.unmergeable_commits(base)
    if state.unmergeable:
        return state
    state.behind = _detached_behind(tree, head, rec)
    if state.behind:
        return state
    exported = tree.export(base)
    commits = [sha for sha, _ in tree.commits_above(base)]
    differences = export_differences(project, exported, commits)
    if not differences:
        if record.declaration_unchanged(project, rec):
            state.stale = []  # the tree's commits export to exactly what patches/ holds now, under the same base
    elif state.stale:
        moved = _commits_since(tree, rec.head) if rec else None
        if moved is None:
            moved = ["(history rewritten since the build; the tree's commits:)"] + (_commits_since(tree, base) or [])
        state.unexported += moved
        _find_lost_exports(project, tree, state, {line.split(" ", 1)[0] for line in moved})
    else:
        state.unexported += differences
    return state


def _find_lost_exports(project: Project, tree: BuildTree, state: TreeState, listed: set[str]) -> None:
    """patches/ changed since the tree was built or exported: a pull (the tree is behind), or an export undone (a
    `git checkout -- patches/` after `export`: the tree is the only copy of its commits). The commits whose patch,
    as export writes it, is neither in patches/ nor anywhere in the checkout's git history are work, named with
    what to do. When they are all new patches, nothing else differs and upstream.toml declares the base as it did
    when the tree was built or exported, patches/ merely lost them: the tree is not stale but ahead, and a plain
    export writes them again. A changed declaration (or a record without its digest) keeps the tree stale: it was
    built from another base, and no export makes it this one."""
    base = tree.base_tag()
    saved = _saved_blobs(project)
    if base is None or saved is None:
        return
    try:
        exported = tree.export(base)
    except VerlPatchesError:  # commits that cannot be patches: the tree is stale as it stands
        return
    commits = {sha[:12]: item for (sha, _), item in zip(tree.commits_above(base), exported, strict=True)}
    lost, kinds, other = [], set(), False
    for line in export_differences(project, exported, list(commits)):
        kind, _, rest = line.partition(": ")
        sha = rest.split(" ", 1)[0]
        if kind not in ("new", "changed") or sha not in commits or _blob_ids(project, commits[sha].data) & saved:
            other = True
        elif sha not in listed:
            lost.append(line)
            kinds.add(kind)
    if not lost:
        return
    declared = record.declaration_unchanged(project, state.record)
    ahead = declared and not other and not listed and kinds == {"new"}
    why = f"{project.queue}/ lost it since the tree was exported, and the checkout's git history does not hold it"
    if declared and not ahead:
        why += f"; if only undoing that export changed {project.queue}/, `verl-patches export --force` writes it again"
    state.unexported += [f"{line}: {why}" for line in lost]
    if ahead:
        state.stale = []  # only the tree's own new patches are missing: export writes them, overwriting nothing


def _saved_blobs(project: Project) -> set[str] | None:
    """The ids of every file content the checkout's git history and index hold; None outside a git repository."""
    git = Git(project.root)
    if not git.ok("rev-parse", "--is-inside-work-tree"):
        return None
    objects = git.run("rev-list", "--objects", "--all", check=False).stdout.decode(errors="replace").splitlines()
    index = git.out("ls-files", "--stage", "--", str(project.patches_dir), check=False).splitlines()
    return {line.split(" ", 1)[0] for line in objects} | {line.split()[1] for line in index if len(line.split()) > 1}


def _blob_ids(project: Project, data: bytes) -> set[str]:
    """The ids git gives a patch file's bytes, as they are and with CRLF stored as LF (a core.autocrlf checkout)."""
    git = Git(project.root)
    variants = {data, data.replace(b"\r\n", b"\n")}
    return {git.out("hash-object", "--no-filters", "--stdin", input=v) for v in variants}


def _known(tree: BuildTree, head: str, rec: Record | None) -> list[str]:
    """HEAD and the recorded head (when git still has it): commits reachable from them are accounted for."""
    known = [head]
    if rec and rec.head and rec.head != head and tree.git.rev(rec.head):
        known.append(rec.head)
    return known


def _branches_elsewhere(tree: BuildTree, head: str, rec: Record | None, queue: str) -> list[str]:
    """Each branch other than HEAD's with commits that neither HEAD nor the build record holds."""
    current = tree.current_branch()
    known = _known(tree, head, rec)
    found = []
    for name, tip in tree.branch_tips().items():
        if name == current:
            continue
        commits = tree.git.out("log", "--reverse", "--format=%h %s", tip, "--not", *known).splitlines()
        if commits:
            where = f"on branch {current}" if current else "detached"
            found.append(
                f"commits on branch {name} that {queue}/ does not have (HEAD is {where}; `git switch {name}` "
                "to export them):\n" + "\n".join(f"    {line}" for line in commits)
            )
    return found


def _detached_behind(tree: BuildTree, head: str, rec: Record | None) -> str | None:
    """When HEAD is detached on a commit of the build, behind its recorded head: where to go back to."""
    if not rec or not rec.head or tree.current_branch() or not tree.git.rev(rec.head):
        return None
    if not tree.git.ok("merge-base", "--is-ancestor", head, rec.head):
        return None
    count = len(tree.commits_above(head, rec.head))
    holders = [name for name, tip in tree.branch_tips().items() if tip == rec.head]
    back = f"git switch {holders[0]}" if holders else f"git switch -C {tree.branch} {rec.head[:12]}"
    return (
        f"HEAD is detached at {head[:12]}, {count} commit(s) behind the build ({rec.head[:12]}), with no commit "
        f"of its own. Go back with `{back}` (an export from here would drop those patches)"
    )


def _commits_since(tree: BuildTree, commit: str | None) -> list[str] | None:
    """'<sha> <subject>' of the commits from commit to HEAD; None when HEAD does not descend from commit."""
    if not commit or not tree.git.ok("merge-base", "--is-ancestor", commit, "HEAD"):
        return None
    return [f"{sha[:12]} {subject}" for sha, subject in tree.commits_above(commit)]


_write_atomic = files.write_atomic  # each file of patches/ is written whole


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
