"""The tool's timestamps: UTC, in one format for the records it writes and one for the ids it names things by."""

from __future__ import annotations

import time


def utc_now() -> str:
    """The time now, e.g. 2026-01-31T12:00:00Z (records, backup descriptions, lock holders)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def utc_id() -> str:
    """The time now as part of a name, e.g. 20260131-120000 (backup ids)."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime())
