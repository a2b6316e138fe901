"""The build record: what build/verl was built from, and whether the last apply or export finished.

It lives in the tree's git folder (removed with the tree) as a small JSON file, written atomically.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypedDict

from verl_patches.checkout import UPSTREAM_FILE, Project
from verl_patches.model.timestamps import utc_stamp
from verl_patches.sources import files

RECORD_FILE = "verl-patches-record.json"

APPLYING = "applying"  # an apply started and has not finished (interrupted, or running)
FAILED = "failed"  # an apply stopped at a patch that does not apply; the tree holds the patches before it
COMPLETE = "complete"  # the tree is exactly what `source` describes at commit `head`
EXPORTING = "exporting"  # an export started writing patches/ and has not finished
STATES = (APPLYING, FAILED, COMPLETE, EXPORTING)


@dataclass
class Record:
    state: str
    source: str  # source_digest() of the project files the tree was built from (or exported to)
    head: str | None = None  # the tree's HEAD when the record was written
    patch: str | None = None  # FAILED: the patch that did not apply
    updated: str = ""
    # COMPLETE after an apply: files of the queue that an export of `head` would rewrite (bytes export does not
    # write: a signature block, another encoding, ...)
    rewrites: list[str] = field(default_factory=list)
    # declaration_digest() of the base's declaration alone, which `source` also covers: None in a record an older
    # version wrote, where the declaration may have changed
    declaration: str | None = None


class Digests(TypedDict):
    source: str
    declaration: str


def built_from(project: Project) -> Digests:
    """A record's digests of what the selected base's tree is built from (or exported to): Record(state, **these)."""
    return {"source": source_digest(project), "declaration": declaration_digest(project)}


def declaration_digest(project: Project) -> str:
    """sha256 over the selected base's declaration in upstream.toml alone (see source_digest)."""
    return hashlib.sha256(project.selected().declaration.encode()).hexdigest()


def declaration_unchanged(project: Project, rec: Record | None) -> bool:
    """The record says the selected base is declared as it was when the record was written (a record without the
    declaration's own digest does not)."""
    return rec is not None and rec.declaration == declaration_digest(project)


def source_digest(project: Project) -> str:
    """sha256 over the selected base's declaration in upstream.toml (its table, and the table of the base it is laid
    over; not the other bases': declaring another base changes nothing of this one's tree), its series and every
    patch file the series lists, as bytes."""
    digest = hashlib.sha256()
    declaration = project.selected().declaration.encode()
    digest.update(f"{UPSTREAM_FILE}\0{len(declaration)}\0".encode() + declaration)
    paths = [project.series_path] + [project.patch_path(name) for name in project.load_series().names]
    for path in paths:
        data = path.read_bytes() if path.is_file() else None
        label = path.relative_to(project.root).as_posix() if path.is_relative_to(project.root) else path.name
        digest.update(f"{label}\0{-1 if data is None else len(data)}\0".encode())
        digest.update(data or b"")
    return digest.hexdigest()


def path_in(git_dir: Path) -> Path:
    return git_dir / RECORD_FILE


def read(git_dir: Path) -> Record | None:
    """The record, or None when there is none (a tree made by an older version) or it is unreadable."""
    data = files.read_json(path_in(git_dir))
    try:
        record = Record(**data)
    except TypeError:  # missing, unreadable, not an object or with other keys
        return None
    return record if record.state in STATES else None


def write(git_dir: Path, record: Record) -> None:
    record.updated = utc_stamp(time.time())
    files.write_json(path_in(git_dir), asdict(record))


def put_back(git_dir: Path, previous: Record | None) -> None:
    """Restore a record read earlier (remove the record when there was none)."""
    if previous is None:
        path_in(git_dir).unlink(missing_ok=True)
    else:
        write(git_dir, previous)
