"""Writing the queue of a new base (what `rebase --onto X --write` creates): patches/X with its series, the
`to-port` list of the patches that need a hand port, and the base's table in upstream.toml."""

from __future__ import annotations

import logging
import os
import re
import shutil
from pathlib import Path

from verl_patches.checkout import Project
from verl_patches.errors import VerlPatchesError
from verl_patches.git.tree import ExportedPatch
from verl_patches.model.upstream import GIT_ARCHIVE, SDIST_OVER_ARCHIVE, Upstream
from verl_patches.queue import backups
from verl_patches.queue.queues import TO_PORT
from verl_patches.sources import files as state_files

logger = logging.getLogger(__name__)

QUEUE_FILES = ("series", TO_PORT)


def files(project: Project, exported: list[ExportedPatch], unresolved, old: str, new: str) -> dict[str, bytes]:
    """The new queue's files: its patches, its series (the old series' comments kept) and, when some patches
    need a hand port, the to-port list naming each with its failing tests."""
    result = {item.name: item.data for item in exported}
    result["series"] = project.load_series().with_names([item.name for item in exported]).format().encode()
    if unresolved:
        lines = [
            f"# Patches of the {old} queue that verl {new} still needs but that do not apply there, or apply and fail",
            "# their tests there. Port each by hand, add it to series in this order (with the trailer",
            "# 'Base-Specific: <what differs on this base>' when it differs beyond context), and remove it here.",
        ]
        for outcome in unresolved:
            failing = outcome.failing or outcome.patch.tests_matching("_on_cpu.py")
            result_line = re.sub(
                r" in [0-9.]+s\b", "", outcome.tests_on_new_base
            )  # no timings: the same bytes every time
            where = "with the series" if outcome.result.startswith("applies") else "without its code"
            lines += ["", f"# {outcome.patch.subject}", f"# on {new} {where}: {result_line}"]
            lines += [f"#   {test}" for test in failing] + [outcome.patch.name]
        result[TO_PORT] = ("\n".join(lines) + "\n").encode()
    return result


def _queue_file(name: str) -> bool:
    return name.endswith(".patch") or name in QUEUE_FILES


def table(upstream: Upstream, queue: str) -> str:
    """upstream.toml's table for a new base."""
    lines = [f'[base."{upstream.version}"]', f'name = "{upstream.name}"', f'queue = "{queue}"']
    lines.append(f'source = "{upstream.source}"')
    if upstream.source == SDIST_OVER_ARCHIVE and upstream.over is not None:
        over = upstream.over
        lines.insert(0, f"# {upstream.version}: the PyPI sdist's files laid over the {over.archive_name}")
        if over.version:
            lines.append(f'over = "{over.version}"')
        else:
            lines.append(
                f'over = {{ repository = "{over.repository}", commit = "{over.commit}", tree = "{over.tree}" }}'
            )
        lines += [f'sha256 = "{upstream.sha256}"', f'tree = "{upstream.tree}"']
    elif upstream.source == GIT_ARCHIVE:
        lines += [f'repository = "{upstream.repository}"']
        lines += [f'tag = "{upstream.git_tag}"'] if upstream.git_tag else []
        lines += [f'commit = "{upstream.commit}"', f'tree = "{upstream.tree}"']
    else:
        lines.append(f'sha256 = "{upstream.sha256}"')
    return "\n".join(lines) + "\n"


def write(
    project: Project, upstream: Upstream, queue: str, content: dict[str, bytes], declare: bool, force: bool
) -> None:
    """Write the queue folder (and declare the base in upstream.toml when declare). A folder that holds other
    content is replaced only with force, after a backup; identical content is left as it is."""
    target = project.root / queue
    present = {}
    if target.exists():
        if not target.is_dir():
            raise VerlPatchesError(f"{queue} is not a folder: nothing was written")
        present = {p.name: p.read_bytes() for p in target.iterdir() if p.is_file()}
        others = [p.name for p in target.iterdir() if not p.is_file() or not _queue_file(p.name)]
        if others:
            raise VerlPatchesError(
                f"{queue} holds what is not a queue's ({', '.join(sorted(others))}): nothing was written; "
                "move it away first"
            )
    differs = sorted(name for name in set(present) | set(content) if present.get(name) != content.get(name))
    if present and differs and not force:
        raise VerlPatchesError(
            f"--write refused: {queue} already holds a queue that differs from the rebased one in "
            f"{', '.join(differs)}; nothing was written. Rerun with --force to replace it (it is backed up first)."
        )
    if present and differs:
        backup_dir = project.build_dir / upstream.version / "backups"  # the base's, declared or not yet
        kept = backups.take_patches(project, f"{queue} before `rebase --write --force`", queue, backup_dir)
        logger.info(f"kept a backup of {queue}: {kept.id} ({kept.folder})")
    if declare:
        text = project.upstream_path.read_text(encoding="utf-8")
        state_files.write_atomic(project.upstream_path, (text.rstrip("\n") + "\n\n" + table(upstream, queue)).encode())
        logger.info(f"declared base {upstream.version} in upstream.toml")
    if not differs:
        logger.info(f"{queue} already holds this queue; nothing to write")
        return
    _replace_queue(target, content)
    patches = sum(1 for name in content if name.endswith(".patch"))
    listed = f", {TO_PORT}" if TO_PORT in content else ""
    logger.info(f"wrote {queue}: {patches} patch(es), series{listed}")


def _replace_queue(target: Path, content: dict[str, bytes]) -> None:
    """Write the queue folder so that at every moment it holds a whole queue, old or new: a new folder is
    written aside and renamed into place; in an existing one each file is replaced by a rename, the patches
    first, `series` (the switch) last but for the removal of the files the new queue does not have."""
    if not target.exists():
        staging = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for name, data in content.items():
            (staging / name).write_bytes(data)
        os.replace(staging, target)
        return
    order = sorted(content, key=lambda name: (name == "series", name))
    for name in order:
        if not (target / name).is_file() or (target / name).read_bytes() != content[name]:
            state_files.write_atomic(target / name, content[name])
    for path in sorted(target.iterdir()):
        if path.is_file() and _queue_file(path.name) and path.name not in content:
            path.unlink()
