"""verl-patches table: one row per patch: subject, where it stands upstream, files touched, tests added."""

from __future__ import annotations

import argparse

from verl_patches.checkout import Project
from verl_patches.cli import Command
from verl_patches.model.table import render, rows, totals
from verl_patches.model.upstream import local_version

COMMAND = Command("table", "print the series as a table", "Print the series (the queue of a base) as a table.")


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action="store_true", help="every declared base's queue, oldest first")


def run(project: Project, args: argparse.Namespace) -> int:
    chosen = [project.for_base(base.version) for base in project.bases()] if args.all else [project]
    for n, one in enumerate(chosen):
        patches = one.load_patches()
        upstream = one.load_upstream()
        wheel = f"{upstream.name}-{local_version(upstream.version, len(patches))}-py3-none-any.whl"
        print(("\n" if n else "") + f"verl {upstream.version} ({one.queue}) + {len(patches)} patch(es): {wheel}")
        print(render(rows(patches)))
        print(totals(patches))
    return 0
