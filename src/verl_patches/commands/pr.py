"""verl-patches pr: print a patch of the series as a verl pull request (title, branch, body)."""

from __future__ import annotations

import sys

from verl_patches import proof_record
from verl_patches.commands.common import parser, project_of, reports_errors
from verl_patches.errors import ConfigError, GitError, VerlPatchesError
from verl_patches.layout import Project
from verl_patches.model.patch import Patch
from verl_patches.model.pull_request import PullRequest, build
from verl_patches.tree import BuildTree

TEMPLATE = ".github/PULL_REQUEST_TEMPLATE.md"
FIELDS = ("title", "branch", "body")


def build_parser():
    p = parser("pr", "Print a patch as a verl pull request: title, branch name and a body in verl's PR template.")
    p.add_argument("patch", help="the patch: its 1-based position in patches/series, or its file name")
    p.add_argument("--field", choices=FIELDS, help="print only this part (e.g. for `gh pr create --title`)")
    return p


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


def render(pr: PullRequest, field: str | None) -> str:
    if field:
        return getattr(pr, field).rstrip("\n")
    return f"title: {pr.title}\nbranch: {pr.branch}\n\n{pr.body}".rstrip("\n")


@reports_errors
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    project = project_of(args)
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
    return 0
