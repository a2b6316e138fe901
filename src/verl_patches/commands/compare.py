"""verl-patches compare [OLD NEW]: which patches of one queue are missing from the other, and which differ."""

from __future__ import annotations

import argparse

from verl_patches.checkout import Project
from verl_patches.cli import Command
from verl_patches.errors import ConfigError
from verl_patches.model.bases import select
from verl_patches.model.compare import CONTEXT, DIFFERS, SAME
from verl_patches.model.table import render
from verl_patches.queue import queues

COMMAND = Command(
    "compare",
    "compare two queues (bases): patches missing from one, and patches that differ",
    "Compare the queues of two bases by subject and patch-id: patches missing from one, and patches that "
    "differ. Non-zero exit when a difference is not explained by a Base-Specific trailer or a to-port entry.",
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bases", nargs="*", metavar="VERSION", help="two declared bases (default: the two newest)")


def run(project: Project, args: argparse.Namespace) -> int:
    declared = [base.version for base in project.bases()]
    if args.bases and len(args.bases) != 2:
        raise ConfigError(f"name two bases to compare, or none for the two newest (declared: {', '.join(declared)})")
    if not args.bases and len(declared) < 2:
        raise ConfigError(f"upstream.toml declares one base ({declared[0]}): there is no other queue to compare")
    one, other = args.bases or declared[-2:]
    for version in (one, other):
        select(project.bases(), version, f"compare {one} {other}")
    if one == other:
        raise ConfigError(f"compare {one} {other}: name two different bases (declared: {', '.join(declared)})")
    comparison = queues.between(project, one, other)
    pending = set(queues.pending(project.for_base(comparison.new)))
    reasons = {where: reason for where, _, reason in comparison.drift(pending)}
    rows = [[comparison.old, comparison.new, "comparison", "explained by"]]
    for a, b, level in comparison.pairs:
        where = f"{comparison.new}:{b.patch.name}"
        rows.append([a.patch.name, b.patch.name, level, (reasons.get(where) or "-") if level == DIFFERS else ""])
    for entry in comparison.only_old:
        rows.append([entry.patch.name, "-", "missing", reasons.get(f"{comparison.old}:{entry.patch.name}") or "-"])
    for entry in comparison.only_new:
        rows.append(["-", entry.patch.name, "missing", reasons.get(f"{comparison.new}:{entry.patch.name}") or "-"])
    print(render(rows))
    unexplained = [where for where, reason in reasons.items() if reason is None]
    counts = {level: sum(1 for *_, lv in comparison.pairs if lv == level) for level in (SAME, CONTEXT, DIFFERS)}
    print(
        f"compare: {counts[SAME]} same, {counts[CONTEXT]} same change in other context, {counts[DIFFERS]} differ, "
        f"{len(comparison.only_old)} only in {comparison.old}, {len(comparison.only_new)} only in {comparison.new}; "
        f"unexplained: {len(unexplained)}"
    )
    return 1 if unexplained else 0
