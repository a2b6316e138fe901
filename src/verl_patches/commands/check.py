"""verl-patches check: lint every patch and the series; check they apply and match the build tree."""

from __future__ import annotations

import argparse

from verl_patches.checkout import Project
from verl_patches.cli import Command
from verl_patches.queue.check import collect

COMMAND = Command(
    "check",
    "lint patches and series, trial-apply, compare with build/verl",
    "Lint the series; one line per finding; non-zero exit on any finding.",
    build_lock=True,
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-apply", action="store_true", help="skip the trial apply and the build-tree comparison")
    p.add_argument(
        "--no-upstream-checks", action="store_true", help="skip upstream's own sanity checks on the patched tree"
    )


def run(project: Project, args: argparse.Namespace) -> int:
    findings = collect(project, apply=not args.no_apply, sanity=not args.no_upstream_checks)
    for finding in findings:
        print(finding)
    count = len(project.load_series().names)
    if findings:
        print(f"check: {len(findings)} finding(s) in a series of {count} patch(es)")
        return 1
    print(f"check: {count} patch(es), no findings")
    return 0
