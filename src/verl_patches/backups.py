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
import os
import shlex
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from verl_patches.git import PROJECT_EMAIL, PROJECT_NAME
from verl_patches.layout import Project
from verl_patches.tree import BuildTree

INFO_FILE = "backup.json"
BUNDLE = "tree.bundle"
# Files and folders of the git folder that hold an operation in progress.
GIT_STATE = (
    "rebase-merge", "rebase-apply", "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "CHERRY_PICK_HEAD", "REVERT_HEAD",
    "ORIG_HEAD", "AUTO_MERGE",
)  # fmt: skip


@dataclass
class Backup:
    id: str
    folder: Path
    info: dict

    @property
    def kind(self) -> str:
        return self.info.get("kind", "incomplete")

    def summary(self) -> str:
        if not self.info:
            return f"{self.id}: incomplete (the command was interrupted while taking it); nothing to restore"
        return f"{self.id}: {self.kind} backup, {self.info['reason']}"


def _new(backup_dir: Path, tree: BuildTree | None) -> tuple[str, Path]:
    """A fresh id (UTC time plus a counter) whose folder and branch do not exist yet; the folder is created."""
    backup_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
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
    tmp = folder / f".{INFO_FILE}.tmp"
    tmp.write_text(json.dumps(info, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, folder / INFO_FILE)


def _snapshot_tree(tree: BuildTree) -> str:
    """The tree id of the work tree's files (tracked and untracked, not ignored), without touching the index."""
    with tempfile.TemporaryDirectory(prefix="verl-patches-backup-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        tree.git.run("read-tree", "HEAD", env=env)
        tree.git.run("add", "--all", ".", env=env)
        return tree.git.out("write-tree", env=env)


def take_tree(project: Project, tree: BuildTree, reason: str) -> Backup | None:
    """Keep everything build/verl holds before it is discarded. None when it has no commit at all."""
    head = tree.head()
    if head is None:
        return None
    backup_id, folder = _new(project.backup_dir, tree)
    git_dir = tree.git_dir()
    branch_tip = tree.git.rev(f"refs/heads/{tree.branch}")
    symbolic = tree.git.run("symbolic-ref", "--quiet", "HEAD", check=False).stdout.decode().strip()
    parents = [head]
    extra = [branch_tip]
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
    lines = [
        f"verl-patches backup {backup_id}: {reason}",
        "",
        f"HEAD: {head} ({symbolic or 'detached'})",
        f"branch {tree.branch}: {branch_tip}",
        *[f"in progress: {what}" for what in in_progress],
        f"uncommitted or untracked paths: {len(dirty)}",
    ]
    env = {"GIT_AUTHOR_NAME": PROJECT_NAME, "GIT_AUTHOR_EMAIL": PROJECT_EMAIL}
    args = ["commit-tree", _snapshot_tree(tree), "-F", "-"]
    for parent in parents:
        args += ["-p", parent]
    commit = tree.git.out(*args, input=("\n".join(lines) + "\n").encode(), env=env)
    ref = f"refs/heads/backup/{backup_id}"
    tree.git.run("update-ref", ref, commit)
    tree.git.run("bundle", "create", "--quiet", str(folder / BUNDLE), ref)
    info = {
        "id": backup_id,
        "kind": "tree",
        "reason": reason,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "tree": str(tree.path),
        "branch": f"backup/{backup_id}",
        "commit": commit,
        "head": head,
        "head_ref": symbolic or None,
        "branch_tip": branch_tip,
        "in_progress": in_progress,
        "dirty": dirty,
        "git_state": saved_state,
    }
    _finish(folder, info)
    return Backup(backup_id, folder, info)


def take_patches(project: Project, reason: str, queue: str | None = None, backup_dir: Path | None = None) -> Backup:
    """Keep upstream.toml and the queue's series, to-port and *.patch as they are before they are overwritten.
    queue and backup_dir default to the selected base's (given for a base upstream.toml does not declare yet)."""
    queue = queue or project.queue
    backup_id, folder = _new(backup_dir or project.backup_dir, None)
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
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
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
        try:
            info = json.loads((folder / INFO_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            info = {}
        found.append(Backup(folder.name, folder, info if isinstance(info, dict) else {}))
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
    steps = [
        f"cd {project.tree_dir}",
        f"git rev-parse -q --verify {branch} || git fetch {backup.folder / BUNDLE} {branch}:{branch}",
        f"git switch -C {BuildTree(project.tree_dir).branch} {branch}^1   # the commits (HEAD at backup time)",
        f"git restore --source={branch} --worktree -- .   # the uncommitted and untracked files",
    ]
    if len(backup.info.get("in_progress", [])):
        steps.append(
            f"# an operation was in progress: {'; '.join(backup.info['in_progress'])}; its state (todo list, "
            f"mailbox) is in {backup.folder}/git-state; {branch}^2 is the branch before it started"
        )
    return steps
