"""verl-patches rebase --onto VERSION: replay the series on a newer verl sdist and classify every patch.

From a tag-archive base the new base is the old one with the sdist's files written over it."""

from __future__ import annotations

import argparse

from packaging.version import InvalidVersion, Version

from verl_patches.checkout import Project
from verl_patches.cli import Command
from verl_patches.queue.rebase import rebase

COMMAND = Command(
    "rebase",
    "replay the series onto a newer verl sdist and classify each patch",
    "Replay the series onto a newer verl sdist; report clean / upstream / partly / conflict.",
    build_lock=True,
    queue_lock=True,
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--onto", required=True, metavar="VERSION", type=release_version, help="the newer verl release, e.g. 0.9.1"
    )
    p.add_argument("--sha256", help="expected sha256 of the new sdist (default: trust the first download, and say so)")
    p.add_argument("--report", metavar="FILE", help="also write the report as Markdown to FILE")
    p.add_argument(
        "--write",
        action="store_true",
        help="create the new base's queue (patches/VERSION, its upstream.toml table and a to-port list of the "
        "conflicts)",
    )
    p.add_argument(
        "--force", action="store_true", help="with --write: replace a queue folder that holds other content (backed up)"
    )
    p.add_argument(
        "--tag-archive",
        metavar="TAG",
        help="make the new base GitHub's archive of TAG (from the mirror, else GitHub), pinned by the commit the "
        "archive names and the tree id of its files, both computed here from the download: review them",
    )


def release_version(text: str) -> str:
    """--onto's value, when it is a version (PEP 440) that can be ordered against the base's."""
    try:
        Version(text)
    except InvalidVersion:
        raise argparse.ArgumentTypeError(f"{text!r} is not a version (PEP 440), e.g. 0.9.1") from None
    return text


def command_line(args) -> str:
    """The rebase command as given (without -C), for the report."""
    parts = ["verl-patches", "rebase", "--onto", args.onto]
    parts += ["--sha256", args.sha256] if args.sha256 else []
    parts += ["--report", args.report] if args.report else []
    parts += ["--base", args.base] if args.base else []
    parts += ["--tag-archive", args.tag_archive] if args.tag_archive else []
    return " ".join(parts + (["--write"] if args.write else []) + (["--force"] if args.force else []))


def run(project: Project, args: argparse.Namespace) -> int:
    return rebase(project, args, command_line(args))
