"""verl-patches watch: the verl releases newer than the newest declared base, from PyPI's JSON API and GitHub's
tags; with --prs, the state of the pull request each patch's Forwarded trailer names.

Exit status: 0 up to date; 3 a newer release; 4 neither PyPI nor GitHub could be asked (either one alone
missing is said, and the other one's answer counts)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from packaging.version import Version

from verl_patches.checkout import Project
from verl_patches.cli import Command
from verl_patches.model.releases import BadIndexDocument, github_tags, newer_releases, pull_state, pypi_releases
from verl_patches.model.table import render
from verl_patches.model.trailers import APPLIED_UPSTREAM, HOME, GitHubRef
from verl_patches.sources.index import GITHUB_API, GITHUB_ENV, PYPI_ENV, PYPI_URL, Index, Unreachable

UP_TO_DATE = 0
NEW_RELEASE = 3
UNREACHABLE = 4


COMMAND = Command(
    "watch",
    "list verl releases newer than the newest base (PyPI, GitHub tags); --prs: forwarded PRs",
    "List the verl releases newer than the newest declared base (PyPI's JSON API and GitHub's tags). Exit "
    f"status {UP_TO_DATE}: up to date; {NEW_RELEASE}: a newer release; {UNREACHABLE}: neither could be asked.",
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--prs", action="store_true", help="also print the state of each Forwarded pull request (GitHub's API)"
    )
    p.add_argument(
        "--write-env",
        metavar="FILE",
        help="with a newer release, append to FILE (e.g. $GITHUB_ENV) WATCH_BASE=<the newest base>, "
        "WATCH_VERSION=<the newest release>, WATCH_SHA256=<its sdist's sha256 on PyPI> and WATCH_TAG=<its GitHub "
        "tag> (each empty when not known)",
    )
    p.add_argument("--pypi", metavar="URL", help=f"PyPI's JSON API (default: ${PYPI_ENV}, else {PYPI_URL})")
    p.add_argument("--github-api", metavar="URL", help=f"GitHub's REST API (default: ${GITHUB_ENV}, else {GITHUB_API})")


def ask(source: str, question: Callable[[], dict[str, str]]) -> dict[str, str] | None:
    """The answer, or None after saying on stderr that the source could not be asked."""
    try:
        return question()
    except (Unreachable, BadIndexDocument) as exc:
        print(f"watch: {source} could not be asked: {exc}; going on without it", file=sys.stderr)
        return None


def repository_of(project: Project) -> str:
    """The upstream repository a tag-archive base names (the newest), else verl's."""
    named = [base.upstream.repository for base in project.bases() if base.upstream.repository]
    return named[-1] if named else HOME


def forwarded_prs(project: Project, index: Index) -> None:
    """Print the state of each distinct pull request that a patch of any queue is Forwarded to."""
    seen: dict[str, tuple[GitHubRef, list[str]]] = {}
    for base in project.bases():
        for patch in project.for_base(base.version).load_patches():
            if patch.forwarded is not None and patch.forwarded.pr is not None:
                pr = patch.forwarded.pr
                seen.setdefault(pr.url, (pr, []))[1].append(f"{base.version}:{patch.name}")
    if not seen:
        print("no patch is Forwarded to a pull request")
        return
    rows = [["pull request", "state", "patches"]]
    merged = []
    for url, (pr, names) in seen.items():
        try:
            state = pull_state(index.pull_request(pr.repository, pr.number))
        except (Unreachable, BadIndexDocument) as exc:
            state = f"unknown ({exc})"
        if state == "merged":
            merged.append(url)
        rows.append([url, state, ", ".join(names)])
    print(render(rows))
    for url in merged:
        print(f"merged: {url}; once a release has it, add '{APPLIED_UPSTREAM}: <that version>, {url}' to its patches")


def run(project: Project, args: argparse.Namespace) -> int:
    newest = max(project.bases(), key=lambda base: Version(base.version))
    name, repository = newest.upstream.name, repository_of(project)
    index = Index.from_environment(args.pypi, args.github_api)
    pypi = ask(f"PyPI ({index.pypi})", lambda: pypi_releases(index.pypi_project(name)))
    tags = ask(f"GitHub ({index.github}, {repository})", lambda: github_tags(index.github_tags(repository)))
    if args.prs:
        forwarded_prs(project, index)
    if pypi is None and tags is None:
        print(f"watch: neither PyPI nor GitHub could be asked: no answer on releases newer than {newest.version}")
        return UNREACHABLE
    asked = " and ".join(s for s, answer in (("PyPI", pypi), ("GitHub's tags", tags)) if answer is not None)
    releases = newer_releases(newest.version, pypi, tags)
    if not releases:
        print(f"up to date: no {name} release newer than {newest.version} (asked {asked})")
        return UP_TO_DATE
    print(f"newer {name} release(s) than the newest base {newest.version} (asked {asked}):")
    for release in releases:
        print(f"  {release.describe()}")
    if args.write_env:
        latest = releases[-1]
        with Path(args.write_env).open("a", encoding="utf-8") as env:
            env.write(
                f"WATCH_BASE={newest.version}\nWATCH_VERSION={latest.version}\nWATCH_SHA256={latest.sdist_sha256}\n"
                f"WATCH_TAG={latest.tag}\n"
            )
    return NEW_RELEASE
