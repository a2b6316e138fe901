"""The tool's timestamps: UTC, in one format for the records it writes and one for the ids it names things by.
The caller reads the clock (time.time()); these only format."""

from __future__ import annotations

import time


def utc_stamp(seconds: float) -> str:
    """A time, e.g. 2026-01-31T12:00:00Z (records, backup descriptions, lock holders)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def utc_id(seconds: float) -> str:
    """A time as part of a name, e.g. 20260131-120000 (backup ids)."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime(seconds))
