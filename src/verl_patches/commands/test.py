"""verl-patches test: run the CPU tests the series adds or changes, in the pinned environment."""

from __future__ import annotations

import subprocess

from verl_patches import upstream_suite
from verl_patches.commands.common import apply_series, parser, project_of, reports_errors
from verl_patches.errors import VerlPatchesError
from verl_patches.layout import Project
from verl_patches.tree import BuildTree
from verl_patches.trial import linked_worktree
from verl_patches.venv import ensure, requirements_stamp, run_env


def build_parser():
    p = parser("test", "Apply the series, prepare build/venv and run the series' tests with pytest.")
    p.add_argument("--no-apply", action="store_true", help="test build/verl as it is (uncommitted edits included)")
    p.add_argument("--gpu", action="store_true", help="run the series' *_on_gpu.py tests instead of *_on_cpu.py")
    p.add_argument(
        "--upstream",
        action="store_true",
        help="also run verl's own CPU suite (as its cpu_unit_tests.yml selects it) on the base and the patched tree; "
        "fail when a test that passes on the base fails with the series",
    )
    p.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    return p


def series_tests(project: Project, suffix: str) -> list[str]:
    """Test files (paths inside the tree) that the series adds or changes, in series order."""
    files: dict[str, None] = {}
    for patch in project.load_patches():
        for path in patch.tests_matching(suffix):
            files[path] = None
    return list(files)


def run_pytest(python, tree: BuildTree, targets: list[str], extra: list[str]) -> int:
    cmd = [str(python), "-m", "pytest", "-p", "no:cacheprovider", "-rs", "--timeout=900", *extra, *targets]
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=tree.path, env=run_env(python)).returncode


@reports_errors
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    project = project_of(args)
    tree = BuildTree(project.tree_dir) if args.no_apply else apply_series(project)
    if not tree.exists():
        raise VerlPatchesError(f"no build tree at {tree.path}: run `verl-patches apply`")
    requirements = [project.requirements_path]
    if args.upstream:
        requirements.append(project.root / "requirements" / "cpu-upstream.txt")
    python = ensure(project.venv_dir, requirements, tree.path)
    suffix = "_on_gpu.py" if args.gpu else "_on_cpu.py"
    targets = [path for path in series_tests(project, suffix) if (tree.path / path).exists()]
    status = 0
    if targets:
        status = run_pytest(python, tree, targets, args.pytest_args)
    else:
        print(f"no *{suffix} tests in the series ({len(project.load_series().names)} patch(es)): nothing to run")
    if args.upstream:
        status = upstream_guard(project, tree, python, requirements, args.pytest_args) or status
    return status


def upstream_guard(project: Project, tree: BuildTree, python, requirements, extra: list[str]) -> int:
    upstream = project.load_upstream()
    base = tree.import_commit(upstream)
    if not base:
        raise VerlPatchesError(f"the build tree has no {upstream.tag}: run `verl-patches apply`")
    base_tree = tree.git.out("rev-parse", f"{base}^{{tree}}")
    key = upstream_suite.cache_key(base_tree, requirements_stamp(requirements), extra)
    cache = project.build_dir / "upstream-suite-base.json"
    before = upstream_suite.cached_base(cache, key)
    if before is None:
        print(f"verl's CPU suite on the base ({upstream.tag}):", flush=True)
        with linked_worktree(tree, base, branch="suite-base") as base_tree:
            before = upstream_suite.run(python, base_tree.path, extra)
        upstream_suite.store_base(cache, key, before)
    else:
        print(f"verl's CPU suite on the base ({upstream.tag}): outcomes from {cache}")
    print("verl's CPU suite with the series (committed HEAD, in a scratch worktree):", flush=True)
    with linked_worktree(tree, tree.head() or "HEAD", branch="suite-series") as series_tree:
        after = upstream_suite.run(python, series_tree.path, extra)
    broken = upstream_suite.regressions(before, after)
    print(f"upstream CPU suite on the base:        {before.counts()}")
    print(f"upstream CPU suite with the series:    {after.counts()}")
    for test_id in upstream_suite.gone(before, after):
        print(f"  passes on the base, not run with the series: {test_id}")
    for test_id in broken:
        print(f"  REGRESSION: passes on the base, fails with the series: {test_id}")
    print(f"upstream CPU suite: {len(broken)} regression(s)")
    return 1 if broken else 0
