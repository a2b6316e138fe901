"""The Upstream-Status trailer: where a patch stands with respect to verl upstream."""

from __future__ import annotations

import re
from dataclasses import dataclass

_REF = r"(?:[\w.-]+/[\w.-]+#\d+|https?://\S+)"
_VERSION = r"\d+(?:\.\d+)*(?:[a-z]+\d*)?"

# Vocabulary (documented in CONTRIBUTING.md). Each entry: kind, regex of the value, meaning.
VOCABULARY: list[tuple[str, re.Pattern[str], str]] = [
    ("Pending", re.compile(r"^Pending$"), "not sent upstream yet"),
    (
        "Submitted",
        re.compile(rf"^Submitted {_REF}$"),
        "sent upstream, under review: Submitted verl-project/verl#N or a URL",
    ),
    ("Backport", re.compile(rf"^Backport {_REF}$"), "our own implementation of a merged upstream change"),
    (
        "Fixed-in",
        re.compile(rf"^Fixed-in {_VERSION}(?: {_REF})?$"),
        "upstream fixed it in that release (optionally by that change); the patch keeps only its tests",
    ),
    ("Inappropriate", re.compile(r"^Inappropriate \[[^\]]+\]$"), "not meant for upstream: Inappropriate [reason]"),
]

TRAILER = "Upstream-Status"
EXEMPT_TRAILER = "Prove-Exempt"


@dataclass(frozen=True)
class UpstreamStatus:
    kind: str
    value: str

    @classmethod
    def parse(cls, value: str) -> UpstreamStatus | None:
        value = value.strip()
        for kind, pattern, _ in VOCABULARY:
            if pattern.match(value):
                return cls(kind, value)
        return None


def vocabulary_help() -> str:
    return "; ".join(
        f"'{kind} ...' ({meaning})" if kind != "Pending" else "'Pending'" for kind, _, meaning in VOCABULARY
    )
