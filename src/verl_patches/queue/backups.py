"""Backups taken before any step that discards work: of the build tree, or of patches/.

Each backup is a folder build/backups/<id>/ with a unique id and a backup.json that describes it:
- a tree backup holds branch backup/<id> in build/verl (also in tree.bundle): a commit whose files are
  the work tree as it was (uncommitted and untracked files included; ignored files are not), whose
  first parent is HEAD and whose other parents are the branch and the ORIG_HEAD of an operation in
  progress; the state of that operation (rebase todo list, am mailbox) is copied to git-state/;
- a patches backup holds copies of upstream.toml and of its queue's series, to-port and *.patch in patches/.
backup.json is written last: a folder without it is a backup that was interrupted.
"""

from __future__ import annotations

import json
import shlex
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from verl_patches.checkout import Project
from verl_patches.errors import BackupError, GitError
from verl_patches.git import scratch
from verl_patches.git.tree import BRANCH, BuildTree
from verl_patches.model.patch import PROJECT_EMAIL, PROJECT_NAME
from verl_patches.model.timestamps import utc_id, utc_stamp
from verl_patches.sources import files

INFO_FILE = "backup.json"
BUNDLE = "tree.bundle"
NESTED = "nested"  # copies of the untracked nested git repositories of the work tree
# Files and folders of the git folder that hold an operation in progress.
GIT_STATE = (
    "rebase-merge", "rebase-apply", "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "CHERRY_PICK_HEAD", "REVERT_HEAD",
    "ORIG_HEAD", "AUTO_MERGE",
)  # fmt: skip


# The keys of backup.json that listing and restoring a backup of each kind read, with their types.
REQUIRED_KEYS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "tree": {"reason": str, "created": str, "tree": str, "branch": str, "head": str, "head_ref": (str, type(None))},
    "patches": {"reason": str, "created": str, "files": list},
}


@dataclass
class Backup:
    id: str
    folder: Path
    info: dict
    damage: str = ""  # what is wrong with a backup.json that exists but cannot be used

    @property
    def kind(self) -> str:
        return "damaged" if self.damage else self.info.get("kind", "incomplete")

    def summary(self) -> str:
        if self.damage:
            held = ", ".join(sorted(p.name for p in self.folder.iterdir())) or "nothing"
            return (
                f"{self.id}: damaged backup: {self.damage}. Nothing of it was removed; restore by hand from "
                f"{self.folder} (it holds {held}"
                + (f"; {BUNDLE} holds branch backup/{self.id}" if BUNDLE in held else "")
                + ")"
            )
        if not self.info:
            return f"{self.id}: incomplete (the command was interrupted while taking it); nothing to restore"
        return f"{self.id}: {self.kind} backup, {self.info['reason']}"


def _read_info(folder: Path) -> tuple[dict, str]:
    """(backup.json's record, what is wrong with it); ({}, "") when there is none (an interrupted backup)."""
    path = folder / INFO_FILE
    if not path.exists() and not path.is_symlink():
        return {}, ""
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return {}, f"{INFO_FILE} cannot be read ({exc})"
    if not isinstance(info, dict):
        return {}, f"{INFO_FILE} holds a JSON {type(info).__name__}, not an object"
    if info.get("kind") not in REQUIRED_KEYS:
        return {}, f"{INFO_FILE} names no known kind of backup (kind {info.get('kind')!r})"
    missing = [key for key in REQUIRED_KEYS[info["kind"]] if key not in info]
    if missing:
        return {}, f"{INFO_FILE} of a {info['kind']} backup lacks {', '.join(missing)}"
    wrong = [key for key, kind in REQUIRED_KEYS[info["kind"]].items() if not isinstance(info[key], kind)]
    if wrong:
        return {}, f"{INFO_FILE} of a {info['kind']} backup has values of the wrong type for {', '.join(wrong)}"
    return info, ""


def _new(backup_dir: Path, tree: BuildTree | None) -> tuple[str, Path]:
    """A fresh id (UTC time plus a counter) whose folder and branch do not exist yet; the folder is created."""
    backup_dir.mkdir(parents=True, exist_ok=True)
    stamp = utc_id(time.time())
    for n in range(1, 10_000):
        backup_id = f"{stamp}-{n}"
        if tree is not None and tree.exists() and tree.git.rev(f"refs/heads/backup/{backup_id}"):
            continue
        folder = backup_dir / backup_id
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return backup_id, folder
    raise RuntimeError("no free backup id")  # pragma: no cover - 10,000 backups in one second


def _finish(folder: Path, info: dict) -> None:
    files.write_json(folder / INFO_FILE, info)


def _snapshot_tree(tree: BuildTree, nested: list[str]) -> str:
    """The tree id of the work tree's files (tracked and untracked, not ignored unless an import tracks the path,
    nested repositories left out), without touching the index."""
    with scratch.folder("backup") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        tree.git.run("read-tree", "HEAD", env=env)
        tree.git.run("add", "--all", ".", env=env)
        kept_ignored = tree.ignored_at_imported_paths()
        if kept_ignored:
            tree.git.run("add", "--force", "--", *kept_ignored, env=env)
        for path in nested:
            tree.git.run("rm", "--cached", "-r", "-f", "-q", "--ignore-unmatch", "--", path, env=env)
        return tree.git.out("write-tree", env=env)


def _index_tree(tree: BuildTree) -> str | None:
    """The tree id of what the index holds (read from a copy: the index is not touched); None when it has
    unmerged entries (a conflict in progress) or there is none."""
    index = tree.git_dir() / "index"
    if not index.is_file():
        return None
    with scratch.folder("backup") as tmp:
        copy = Path(tmp) / "index"
        shutil.copyfile(index, copy)
        proc = tree.git.run("write-tree", env={"GIT_INDEX_FILE": str(copy)}, check=False)
        return proc.stdout.decode().strip() if proc.returncode == 0 else None


def nested_repositories(tree: BuildTree) -> list[str]:
    """Untracked folders of the work tree that are git repositories of their own (not ignored ones)."""
    out = tree.git.run("ls-files", "--others", "--exclude-standard", "-z").stdout.decode(errors="surrogateescape")
    return [path.rstrip("/") for path in out.split("\0") if path.endswith("/") and (tree.path / path / ".git").exists()]


def take_tree(project: Project, tree: BuildTree, reason: str) -> Backup | None:
    """Keep everything build/verl holds before it is discarded. None when it has no commit at all."""
    head = tree.head()
    if head is None:
        return None
    backup_id, folder = _new(project.backup_dir, tree)
    ref = f"refs/heads/backup/{backup_id}"
    try:
        return _take_tree(tree, reason, head, backup_id, folder, ref)
    except (OSError, GitError) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        tree.git.run("update-ref", "-d", ref, check=False)
        raise BackupError(f"{project.tree_name}", folder, exc) from exc


def _take_tree(tree: BuildTree, reason: str, head: str, backup_id: str, folder: Path, ref: str) -> Backup:
    git_dir = tree.git_dir()
    branch_tip = tree.git.rev(f"refs/heads/{tree.branch}")
    symbolic = tree.git.run("symbolic-ref", "--quiet", "HEAD", check=False).stdout.decode().strip()
    parents = [head]
    extra = [branch_tip, *tree.branch_tips().values()]
    for marker in ("rebase-merge/orig-head", "rebase-apply/orig-head", "ORIG_HEAD"):
        if (git_dir / marker).is_file():
            extra.append(tree.git.rev((git_dir / marker).read_text().strip()))
    for commit in extra:
        if commit and commit not in parents:
            parents.append(commit)
    in_progress = tree.in_progress()
    dirty = tree.dirty_paths()
    saved_state = []
    for name in GIT_STATE:
        source = git_dir / name
        if source.is_dir():
            shutil.copytree(source, folder / "git-state" / name)
            saved_state.append(name)
        elif source.is_file():
            (folder / "git-state").mkdir(exist_ok=True)
            shutil.copy2(source, folder / "git-state" / name)
            saved_state.append(name)
    nested = nested_repositories(tree)
    for path in nested:
        shutil.copytree(tree.path / path, folder / NESTED / path, symlinks=True)
    snapshot = _snapshot_tree(tree, nested)
    index_tree = _index_tree(tree)
    index_commit = None
    env = {"GIT_AUTHOR_NAME": PROJECT_NAME, "GIT_AUTHOR_EMAIL": PROJECT_EMAIL}
    if index_tree is None and (git_dir / "index").is_file():  # unmerged entries: keep the index file itself
        (folder / "git-state").mkdir(exist_ok=True)
        shutil.copy2(git_dir / "index", folder / "git-state" / "index")
        saved_state.append("index")
    elif index_tree and index_tree not in (snapshot, tree.git.out("rev-parse", f"{head}^{{tree}}")):
        text = f"verl-patches backup {backup_id}: the index (staged content) at backup time\n"
        index_commit = tree.git.out("commit-tree", index_tree, "-p", head, "-F", "-", input=text.encode(), env=env)
        parents.append(index_commit)
    lines = [
        f"verl-patches backup {backup_id}: {reason}",
        "",
        f"HEAD: {head} ({symbolic or 'detached'})",
        f"branch {tree.branch}: {branch_tip}",
        *[f"in progress: {what}" for what in in_progress],
        f"uncommitted or untracked paths: {len(dirty)}",
        *([f"index (staged content): {index_commit}"] if index_commit else []),
        *[f"nested repository, copied to {NESTED}/{path}: {path}" for path in nested],
    ]
    args = ["commit-tree", snapshot, "-F", "-"]
    for parent in parents:
        args += ["-p", parent]
    commit = tree.git.out(*args, input=("\n".join(lines) + "\n").encode(), env=env)
    tree.git.run("update-ref", ref, commit)
    tree.git.run("bundle", "create", "--quiet", str(folder / BUNDLE), ref)
    info = {
        "id": backup_id,
        "kind": "tree",
        "reason": reason,
        "created": utc_stamp(time.time()),
        "tree": str(tree.path),
        "branch": f"backup/{backup_id}",
        "commit": commit,
        "head": head,
        "head_ref": symbolic or None,
        "branch_tip": branch_tip,
        "in_progress": in_progress,
        "dirty": dirty,
        "git_state": saved_state,
        "index": index_commit,
        "nested": nested,
    }
    _finish(folder, info)
    return Backup(backup_id, folder, info)


def take_patches(project: Project, reason: str, queue: str | None = None, backup_dir: Path | None = None) -> Backup:
    """Keep upstream.toml and the queue's series, to-port and *.patch as they are before they are overwritten.
    queue and backup_dir default to the selected base's (given for a base upstream.toml does not declare yet)."""
    queue = queue or project.queue
    backup_id, folder = _new(backup_dir or project.backup_dir, None)
    try:
        return _take_patches(project, reason, queue, backup_id, folder)
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise BackupError(f"{queue}/", folder, exc) from exc


def _take_patches(project: Project, reason: str, queue: str, backup_id: str, folder: Path) -> Backup:
    (folder / "patches").mkdir()
    files = []
    queue_dir = project.root / queue
    for path in [queue_dir / "series", queue_dir / "to-port", *sorted(queue_dir.glob("*.patch"))]:
        if path.is_file():
            shutil.copy2(path, folder / "patches" / path.name)
            files.append(path.name)
    if project.upstream_path.is_file():
        shutil.copy2(project.upstream_path, folder / project.upstream_path.name)
    info = {
        "id": backup_id,
        "kind": "patches",
        "reason": reason,
        "created": utc_stamp(time.time()),
        "files": files,
        "queue": queue,
    }
    _finish(folder, info)
    return Backup(backup_id, folder, info)


def listing(project: Project) -> list[Backup]:
    """Every backup folder, oldest first."""
    if not project.backup_dir.is_dir():
        return []
    found = []
    for folder in sorted(p for p in project.backup_dir.iterdir() if p.is_dir()):
        found.append(Backup(folder.name, folder, *_read_info(folder)))
    return found


def restore_steps(project: Project, backup: Backup) -> list[str]:
    """Shell commands (with comments) that bring the backup back."""
    if backup.kind == "patches":
        queue = backup.info.get("queue") or project.queue
        files = backup.info["files"]
        steps = [
            f"# {queue}/ and upstream.toml as they were ({', '.join(files) or 'no files'}):",
            f"cd {shlex.quote(str(project.root))}",
            f"mkdir -p {shlex.quote(queue)}",
            f"rm -f {shlex.quote(queue)}/*.patch {shlex.quote(queue)}/series {shlex.quote(queue)}/to-port",
        ]
        if files:
            steps.append(f"cp {shlex.quote(str(backup.folder / 'patches'))}/* {shlex.quote(queue)}/")
        return steps + [f"cp {shlex.quote(str(backup.folder / 'upstream.toml'))} upstream.toml"]
    if backup.kind != "tree":
        return []
    branch = backup.info["branch"]
    q = shlex.quote
    steps = [
        f"cd {q(str(project.tree_dir))}",
        f"git rev-parse -q --verify {q(branch)} || git fetch {q(str(backup.folder / BUNDLE))} {q(branch)}:{q(branch)}",
        f"git switch -C {q(BRANCH)} {q(branch + '^1')}   # the commits (HEAD at backup time)",
        f"git restore --source={q(branch)} --worktree -- .   # the uncommitted and untracked files",
    ]
    if backup.info.get("index"):
        steps.append(f"git restore --source={backup.info['index']} --staged -- .   # the staged content")
    for path in backup.info.get("nested", []):
        parent = str(Path(path).parent)
        steps.append(
            f"mkdir -p {q(parent)} && cp -a {q(str(backup.folder / NESTED / path))} {q(path)}   # a nested repository"
        )
    tip = backup.info.get("branch_tip")
    if tip and tip != backup.info.get("head"):
        steps.append(
            f"# branch {BRANCH} was at {tip[:12]}, not at HEAD: `git switch -C "
            f"{BRANCH} {tip[:12]}` brings it back (its commits are in {branch})"
        )
    if len(backup.info.get("in_progress", [])):
        steps.append(
            f"# an operation was in progress: {'; '.join(backup.info['in_progress'])}; its state (todo list, "
            f"mailbox) is in {backup.folder}/git-state; the parents of {branch} are HEAD, the branches and the "
            "ORIG_HEAD of that operation"
        )
    return steps
