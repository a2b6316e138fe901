"""Every check of a queue: lint, drift against the other queues, the trial apply, verl's own hooks, the build tree."""

from __future__ import annotations

from verl_patches.checkout import Project
from verl_patches.errors import ConfigError, PatchApplyError
from verl_patches.git.tree import BuildTree
from verl_patches.git.trial import apply_each, scratch_tree
from verl_patches.model.compare import BASE_SPECIFIC
from verl_patches.model.lint import TEST_KINDS, Finding, lint_patch, lint_series
from verl_patches.model.series import Series
from verl_patches.model.upstream import Upstream
from verl_patches.queue import queues
from verl_patches.queue.sync import assess
from verl_patches.testing import verl_checks
from verl_patches.testing.helper_tests import tests_of


def lint_files(project: Project, series: Series) -> list[Finding]:
    on_disk = project.patch_files_on_disk()
    findings = lint_series(series, on_disk, project.queue)
    for name in [name for name in dict.fromkeys(series.names) if name in on_disk]:
        try:
            patch = project.parse_patch(name)
        except ConfigError as exc:
            findings.append(Finding(name, "format", str(exc), "re-export it with `verl-patches export`"))
            continue
        findings.extend(lint_patch(patch))
    return findings


def check_applies(project: Project, series: Series, upstream: Upstream, sanity: bool = True) -> list[Finding]:
    """Trial-apply the series in a scratch tree; when it applies, run upstream's own checks there."""
    with scratch_tree(BuildTree(project.tree_dir), upstream, project.cache_dir, mirror=project.mirror) as trial:
        base = trial.head()
        try:
            commits = apply_each(trial, [(name, project.patch_path(name)) for name in series.names])
        except PatchApplyError as failure:
            detail = failure.detail.replace("\n", " | ")
            todo = (
                f"make it apply: fix it in {project.queue}/, or rebase it in a {project.tree_name} holding the whole "
                "series, export"
            )
            return [Finding(failure.patch, "applies", detail, todo)]
        findings = helper_test_findings(project, trial, commits)
        if not sanity or base is None:
            return findings
        return findings + upstream_sanity(project, trial, base, list(zip(series.names, commits, strict=True)))


def helper_test_findings(project: Project, tree: BuildTree, commits: list[str]) -> list[Finding]:
    """A fix whose tests are cases in a helper module needs a CPU and a GPU test importing it."""
    findings = []
    for patch, commit in zip(project.load_patches(), commits, strict=True):
        if not patch.code_files or not patch.helper_files:
            continue
        helpers = ", ".join(patch.helper_files)
        for suffix, kind in TEST_KINDS:
            if not tests_of(tree.git, commit, patch, suffix):
                what = f"changes verl/ and tests only in {helpers}, which no tests/**/test_*{suffix} imports"
                findings.append(Finding(patch.name, "tests", what, f"add a {kind} that imports it"))
    return findings


def upstream_sanity(project: Project, tree: BuildTree, base: str, commits: list[tuple[str, str]]) -> list[Finding]:
    runner = verl_checks.Runner(tree)
    try:
        findings, notes = verl_checks.hook_findings(runner, base, commits, project.tree_name)
        subjects = [
            (name, patch.subject)
            for name, patch in zip(project.load_series().names, project.load_patches(), strict=True)
        ]
        findings += verl_checks.title_findings(runner, subjects, project.tree_name)
        findings += verl_checks.ruff_findings(runner, base, commits, project.tree_name)
    finally:
        runner.close()
    for note in notes:
        print(f"check: note: {note}")
    return findings


def check_up_to_date(project: Project, upstream: Upstream) -> list[Finding]:
    """patches/ must be what `export` would write; no build tree means nothing to lose."""
    tree = BuildTree(project.tree_dir)
    if not tree.exists() or not tree.head():
        return []

    def finding(what: str, todo: str = "run `verl-patches apply`") -> Finding:
        return Finding(project.tree_name, "up-to-date", what, todo)

    if not tree.import_commit(upstream):
        return [finding(f"the build tree is not on {upstream.tag}")]
    state = assess(project, tree)
    todo = "do what the message says; `verl-patches status` shows the state"
    findings = [finding(item, todo) for item in [*state.incomplete, *([state.behind] if state.behind else [])]]
    if state.stale and state.work:
        todo = (
            "both changed: `verl-patches apply --force` (backs up the tree) or `export --force` "
            f"(backs up {project.queue}/)"
        )
        findings += [finding(item.replace("\n", " | "), todo) for item in [*state.stale, *state.work]]
    elif state.stale:
        findings += [finding(item) for item in state.stale]
    elif state.dirty or state.in_progress:
        findings.append(finding("the build tree has uncommitted changes", "commit and export them, or discard them"))
    elif not state.incomplete:
        todo = "run `verl-patches export` (or `apply --force` to drop tree commits, kept in a backup)"
        findings += [finding(item, todo) for item in state.unexported]
        findings += [finding(item.replace("\n", " | "), todo) for item in state.branches]
        findings += [finding(item, "fix it as it says, then export") for item in state.unmergeable]
        findings += [finding(item, "run `verl-patches export`") for item in state.rewrites]
    return findings


def drift(project: Project) -> list[Finding]:
    """Differences between this queue and every other declared one that no Base-Specific trailer explains."""
    found, others = queues.drift_findings(project)
    findings = []
    for where, what, reason in found:
        if reason:
            print(f"check: note: {where} {what}: {reason}")
            continue
        todo = (
            f"carry the change to the other queue (`verl-patches compare` lists them), or add the trailer "
            f"'{BASE_SPECIFIC}: <why this base needs it so>' to the patch"
        )
        findings.append(Finding(where, "drift", what, todo))
    return findings


def collect(project: Project, apply: bool = True, sanity: bool = True) -> list[Finding]:
    series = project.load_series()
    findings = lint_files(project, series)
    if not any(f.rule.startswith("series-") or f.rule == "format" for f in findings):
        findings += drift(project)
    if not apply or any(f.rule.startswith("series-") or f.rule == "format" for f in findings):
        return findings
    upstream = project.load_upstream()
    applies = check_applies(project, series, upstream, sanity)
    return findings + applies + check_up_to_date(project, upstream)
