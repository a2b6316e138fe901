"""What `prove` saw per patch, kept for `pr`: the failures its tests show without its code.

Entries are keyed by patch name and hold the sha256 of the patch file they were taken from, so an entry
of an older version of a patch is never shown for a newer one."""

from __future__ import annotations

import hashlib
from pathlib import Path

from verl_patches.sources import files

RECORD_FILE = "prove-record.json"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load(path: Path) -> dict[str, dict]:
    data = files.read_json(path)
    return data if isinstance(data, dict) else {}


def update(path: Path, entries: dict[str, dict]) -> None:
    """Add or replace entries (name -> {"sha256": ..., "failed_before": [...]}) in the record file."""
    record = load(path)
    record.update(entries)
    files.write_json(path, record)


def failures_for(record: dict[str, dict], name: str, data: bytes) -> list[str] | None:
    """The recorded failure lines of this exact patch file, or None when prove has not seen it."""
    entry = record.get(name)
    if not isinstance(entry, dict) or entry.get("sha256") != digest(data):
        return None
    lines = entry.get("failed_before")
    return [str(line) for line in lines] if isinstance(lines, list) else None
