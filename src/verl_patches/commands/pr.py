"""verl-patches pr: print a patch of the series as a verl pull request (title, branch, body).

Exit status: 0, or 3 when the patch is not to be sent upstream (a backport of a merged PR, or
`Forwarded: not-needed`) or not yet (it adds a CI job on a self-hosted runner and no `Hardware-Run:` trailer names a
green run of it): the PR is printed all the same, and a note on stderr says why."""

from __future__ import annotations

import argparse
import sys

from verl_patches.checkout import Project
from verl_patches.cli import Command
from verl_patches.errors import ConfigError, GitError, VerlPatchesError
from verl_patches.git.tree import BuildTree
from verl_patches.model.patch import Patch
from verl_patches.model.pull_request import PullRequest, build
from verl_patches.model.trailers import FORWARDED, HARDWARE_RUN, NOT_NEEDED
from verl_patches.testing import proof_record

TEMPLATE = ".github/PULL_REQUEST_TEMPLATE.md"
FIELDS = ("title", "branch", "body")
NOT_FOR_UPSTREAM = 3


COMMAND = Command(
    "pr",
    "print a patch as a verl pull request (title, branch, body)",
    "Print a patch as a verl pull request: title, branch name and a body in verl's PR template. "
    f"Exit status {NOT_FOR_UPSTREAM}: the patch is not to be sent upstream (a backport, Forwarded: not-needed), "
    f"or not before a run of the self-hosted CI job it adds (a {HARDWARE_RUN}: <URL> trailer names it).",
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("patch", help="the patch: its 1-based position in patches/series, or its file name")
    p.add_argument("--field", choices=FIELDS, help="print only this part (e.g. for `gh pr create --title`)")


def select(project: Project, which: str) -> Patch:
    patches = project.load_patches()
    if which.isdigit():
        index = int(which)
        if not 1 <= index <= len(patches):
            raise ConfigError(f"no patch number {index}: the series has {len(patches)} patch(es)")
        return patches[index - 1]
    for patch in patches:
        if which in (patch.name, patch.name.removesuffix(".patch")):
            return patch
    raise ConfigError(f"no patch named {which!r} in {project.queue}/series (see `verl-patches table`)")


def template_text(tree: BuildTree) -> str:
    if not tree.exists() or not tree.head():
        raise VerlPatchesError(
            f"no build tree at {tree.path}: run `verl-patches apply` first (the PR template is read there)"
        )
    try:
        return tree.git.out("show", f"HEAD:{TEMPLATE}")
    except GitError as exc:
        raise VerlPatchesError(
            f"the build tree has no {TEMPLATE}; the base must be verl's repository, not an sdist"
        ) from exc


def meant_for_upstream(patch: Patch) -> bool:
    sendable = not patch.self_hosted_runners or patch.hardware_run is not None
    return sendable and patch.origin is None and (patch.forwarded is None or patch.forwarded.needed)


def upstream_note(patch: Patch) -> str | None:
    """Why the patch is not to be sent upstream, or where it already was; None when it is to be sent."""
    if patch.origin is not None:
        pr = patch.origin.pr
        return (
            f"{patch.name} is a backport of {pr.repository}#{pr.number} ({pr.url}), which upstream has merged: "
            "it is not meant to be sent upstream"
        )
    forwarded = patch.forwarded
    if patch.self_hosted_runners and patch.hardware_run is None:
        return (
            f"{patch.name} adds a CI job on the self-hosted runner {', '.join(patch.self_hosted_runners)}, which has "
            f"never run there: send it once a green run exists, named by a trailer '{HARDWARE_RUN}: <URL of the run>'"
        )
    if forwarded is not None and not forwarded.needed:
        return f"{patch.name} is '{FORWARDED}: {NOT_NEEDED}': it is not meant to be sent upstream"
    if forwarded is not None and forwarded.pr is not None:
        return f"{patch.name} was already sent upstream as {forwarded.pr.url}"
    return None


def render(pr: PullRequest, field: str | None) -> str:
    if field:
        return getattr(pr, field).rstrip("\n")
    return f"title: {pr.title}\nbranch: {pr.branch}\n\n{pr.body}".rstrip("\n")


def run(project: Project, args: argparse.Namespace) -> int:
    patch = select(project, args.patch)
    record = proof_record.load(project.base_build_dir / proof_record.RECORD_FILE)
    failures = proof_record.failures_for(record, patch.name, project.patch_path(patch.name).read_bytes())
    pr = build(patch, template_text(BuildTree(project.tree_dir)), failures)
    print(render(pr, args.field))
    if failures is None and patch.exemption is None:
        print(
            f"note: `verl-patches prove` has not recorded this version of {patch.name}; "
            "the Test section lacks the failures without the change",
            file=sys.stderr,
        )
    if pr.unfilled:
        print(f"note: left as in the template, for the author: {', '.join(pr.unfilled)}", file=sys.stderr)
    note = upstream_note(patch)
    if note:
        print(f"note: {note}", file=sys.stderr)
    return 0 if meant_for_upstream(patch) else NOT_FOR_UPSTREAM
