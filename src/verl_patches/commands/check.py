"""verl-patches check: lint every patch and the series; check they apply and match the build tree."""

from __future__ import annotations

from verl_patches.commands.common import parser, project_of, reports_errors
from verl_patches.errors import ConfigError
from verl_patches.lint import Finding, lint_patch, lint_series
from verl_patches.model.patch import Patch
from verl_patches.sync import export_differences
from verl_patches.tree import BuildTree
from verl_patches.trial import scratch_tree, trial_apply


def build_parser():
    p = parser("check", "Lint the series; one line per finding; non-zero exit on any finding.")
    p.add_argument("--no-apply", action="store_true", help="skip the trial apply and the build-tree comparison")
    return p


def collect(project, apply: bool = True) -> list[Finding]:
    series = project.load_series()
    on_disk = project.patch_files_on_disk()
    findings = lint_series(series, on_disk)
    present = [name for name in dict.fromkeys(series.names) if name in on_disk]
    for name in present:
        try:
            patch = Patch.parse(name, project.patch_path(name).read_bytes())
        except ConfigError as exc:
            findings.append(Finding(name, "format", str(exc), "re-export it with `verl-patches export`"))
            continue
        findings.extend(lint_patch(patch))
    if not apply or findings and any(f.rule.startswith("series-") for f in findings):
        return findings
    upstream = project.load_upstream()
    main = BuildTree(project.tree_dir)
    with scratch_tree(main, upstream, project.cache_dir) as trial:
        failure = trial_apply(trial, [(name, project.patch_path(name)) for name in series.names])
    if failure:
        findings.append(
            Finding(
                failure.patch,
                "applies",
                failure.detail.replace("\n", " | "),
                "rebase the patch in build/verl and export",
            )
        )
        return findings
    tree = BuildTree(project.tree_dir)
    base = tree.import_commit(upstream)
    if not base:
        findings.append(
            Finding("build/verl", "up-to-date", "no build tree for this upstream", "run `verl-patches apply`")
        )
    elif tree.dirty_paths():
        findings.append(
            Finding(
                "build/verl",
                "up-to-date",
                "the build tree has uncommitted changes",
                "commit and export them, or discard them",
            )
        )
    elif tree.git.out("merge-base", base, "HEAD") != base:
        findings.append(
            Finding("build/verl", "up-to-date", "HEAD is not above the upstream import", "run `verl-patches apply`")
        )
    else:
        for diff in export_differences(project, tree.export(base)):
            findings.append(
                Finding("build/verl", "up-to-date", diff, "run `verl-patches export` (or `apply` to drop tree commits)")
            )
    return findings


@reports_errors
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    project = project_of(args)
    findings = collect(project, apply=not args.no_apply)
    for finding in findings:
        print(finding)
    count = len(project.load_series().names)
    if findings:
        print(f"check: {len(findings)} finding(s) in a series of {count} patch(es)")
        return 1
    print(f"check: {count} patch(es), no findings")
    return 0
