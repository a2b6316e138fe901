"""The series as a table: one row per patch (subject, where it stands upstream, lines and tests)."""

from __future__ import annotations

from verl_patches.model.patch import Patch
from verl_patches.model.trailers import APPLIED_UPSTREAM, FORWARDED, GitHubRef


def forwarded(patch: Patch) -> str:
    """The Forwarded trailer in short: no, not-needed, or the PR as #N; a backport says of which PR."""
    value = patch.forwarded
    if value is None:
        return "(missing)" if not patch.trailer_values(FORWARDED) else "(malformed)"
    shown = value.pr.short if value.pr else value.value
    return f"{shown} (backport of {patch.origin.pr.short})" if patch.origin else shown


def applied_upstream(patch: Patch) -> str:
    if not patch.trailer_values(APPLIED_UPSTREAM):
        return "-"
    value = patch.applied_upstream
    if value is None:
        return "(malformed)"
    ref = GitHubRef.parse(value.url) if value.url else None
    return ", ".join(filter(None, [value.version, ref.short if ref else value.url]))


def rows(patches: list[Patch]) -> list[list[str]]:
    table = [["#", "subject", "forwarded", "applied upstream", "code lines", "test lines", "tests added or changed"]]
    for index, patch in enumerate(patches, start=1):
        tests = [f.rsplit("/", 1)[-1] for f in patch.test_files + patch.helper_files]
        table.append(
            [
                str(index),
                patch.subject,
                forwarded(patch),
                applied_upstream(patch),
                str(patch.lines_under("verl/")),
                str(patch.lines_under("tests/")),
                ", ".join(tests) or "-",
            ]
        )
    return table


def totals(patches: list[Patch]) -> str:
    """The queue's changed lines under verl/ and tests/ (added plus removed) and their ratio."""
    code = sum(p.lines_under("verl/") for p in patches)
    tests = sum(p.lines_under("tests/") for p in patches)
    ratio = f"{tests / code:.1f} test lines per code line" if code else "no code lines"
    return f"changed lines: {code} in verl/, {tests} in tests/ ({ratio})"


def render(table: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = []
    for n, row in enumerate(table):
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)
