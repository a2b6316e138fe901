"""verl-patches backups: list the backups taken before work was discarded, and how to restore each."""

from __future__ import annotations

import argparse

from verl_patches.checkout import Project
from verl_patches.cli import Command
from verl_patches.queue import backups

COMMAND = Command(
    "backups",
    "list the backups taken before work was discarded, and how to restore them",
    "List the backups in build/backups (newest last) and the commands that restore each.",
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", nargs="?", help="show only this backup")


def describe(project, backup: backups.Backup) -> list[str]:
    lines = [backup.summary()]
    info = backup.info
    if backup.kind == "tree":
        lines.append(f"  taken {info['created']}: branch {info['branch']} in {info['tree']}, bundle {backup.folder}")
        lines.append(f"  HEAD was {info['head'][:12]} ({info['head_ref'] or 'detached'})")
        lines += [f"  in progress: {what}" for what in info.get("in_progress", [])]
        if info.get("dirty"):
            lines.append(f"  {len(info['dirty'])} uncommitted or untracked path(s)")
    elif backup.kind == "patches":
        lines.append(f"  taken {info['created']}: {len(info['files'])} file(s) in {backup.folder}/patches")
    steps = backups.restore_steps(project, backup)
    if steps:
        lines.append("  restore:")
        lines += [f"    {step}" for step in steps]
    return lines


def run(project: Project, args: argparse.Namespace) -> int:
    found = backups.listing(project)
    if args.id:
        found = [b for b in found if b.id == args.id]
        if not found:
            print(f"verl-patches: error: no backup {args.id!r} in {project.backup_dir}")
            return 1
    if not found:
        print(f"no backups in {project.backup_dir}")
        return 0
    for backup in found:
        print("\n".join(describe(project, backup)))
    print(f"{len(found)} backup(s) in {project.backup_dir}")
    return 0
