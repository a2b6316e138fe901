"""verl-patches test: run the CPU tests the series adds or changes, in the pinned environment."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from verl_patches.checkout import Project
from verl_patches.commands.common import apply_series, parser, project_of, reports_errors
from verl_patches.errors import VerlPatchesError
from verl_patches.git.tree import BuildTree
from verl_patches.git.trial import linked_worktree
from verl_patches.testing import verl_suite
from verl_patches.testing.venv import ensure, requirements_stamp, run_env

DISTRIBUTED_DIR = "tests/special_distributed/"

# Printed by the device probes below as one line: torch version, device API version, available, device count.
_CUDA_PROBE = (
    "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), torch.cuda.device_count())"
)
_NPU_PROBE = (
    "import torch, torch_npu; print(torch.__version__, torch_npu.__version__, torch.npu.is_available(), "
    "torch.npu.device_count())"
)


def build_parser():
    p = parser("test", "Apply the series, prepare build/venv and run the series' tests with pytest.")
    p.add_argument("--no-apply", action="store_true", help="test build/verl as it is (uncommitted edits included)")
    device = p.add_mutually_exclusive_group()
    device.add_argument(
        "--gpu",
        action="store_true",
        help="run the series' *_on_gpu.py tests instead of *_on_cpu.py; fails when torch in build/venv sees no CUDA",
    )
    device.add_argument(
        "--npu",
        action="store_true",
        help="run the series' *_on_cpu.py tests with torch_npu live, on the Ascend environment's Python named by "
        "VERL_PATCHES_PYTHON; fails without an NPU",
    )
    device.add_argument(
        "--distributed",
        action="store_true",
        help=f"run the series' {DISTRIBUTED_DIR}test_*.py under torchrun when --nproc CUDA devices are visible",
    )
    p.add_argument("--nproc", type=int, default=2, help="processes per torchrun with --distributed (default 2)")
    p.add_argument(
        "--upstream",
        action="store_true",
        help="also run verl's own suite on the base and the patched tree, failing when a test that passes on the "
        "base fails, or is not run, with the series: its CPU suite (as its cpu_unit_tests.yml selects it), or with "
        "--gpu its GPU unit tests (as each tree's .github/workflows/gpu_unit_tests.yml selects them)",
    )
    p.add_argument("--junit-dir", metavar="DIR", help="write one junit XML per pytest run into DIR")
    p.add_argument("--venv-only", action="store_true", help="prepare build/venv and run nothing")
    p.add_argument("--list", action="store_true", help="print the commands that would run; prepare and run nothing")
    p.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    return p


def series_tests(project: Project, suffix: str) -> list[str]:
    """Test files (paths inside the tree) that the series adds or changes, in series order."""
    files: dict[str, None] = {}
    for patch in project.load_patches():
        for path in patch.tests_matching(suffix):
            files[path] = None
    return list(files)


def requirements_of(project: Project, args) -> list[Path]:
    requirements = list(project.requirements_paths)
    if args.upstream:  # what verl's own suite needs beyond the series' tests (CPU or GPU)
        requirements.append(project.root / "requirements" / "cpu-upstream.txt")
    return requirements


def plan(project: Project, tree: BuildTree, python: Path, args) -> list[tuple[str, list[str]]]:
    """The commands to run, each with a label (its junit file name), in order."""
    junit = Path(args.junit_dir).resolve() if args.junit_dir else None

    def pytest(label: str, targets: list[str], extra: list[str]) -> tuple[str, list[str]]:
        cmd = [str(python), "-m", "pytest", "-p", "no:cacheprovider", "-rs", "--timeout=900", *extra]
        if junit:
            cmd.append(f"--junitxml={junit / (label + '.xml')}")
        return label, [*cmd, *args.pytest_args, *targets]

    if args.distributed:
        files = [f for f in series_tests(project, ".py") if f.startswith(DISTRIBUTED_DIR)]
        files = [f for f in files if Path(f).name.startswith("test_") and (tree.path / f).exists()]
        if not files:
            print(f"no {DISTRIBUTED_DIR}test_*.py in the series: nothing to run")
        run = [str(python), "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={args.nproc}"]
        return [(f"torchrun-{Path(f).stem}", [*run, f]) for f in files]
    suffix = "_on_gpu.py" if args.gpu else "_on_cpu.py"
    targets = [path for path in series_tests(project, suffix) if (tree.path / path).exists()]
    commands = []
    if targets:
        commands.append(pytest("series-gpu" if args.gpu else "series-npu" if args.npu else "series-cpu", targets, []))
    else:
        print(f"no *{suffix} tests in the series ({len(project.load_series().names)} patch(es)): nothing to run")
    return commands


def probe(python: Path, script: str) -> list[str]:
    proc = subprocess.run([str(python), "-c", script], capture_output=True, text=True, env=run_env(python))
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise VerlPatchesError(f"{python} cannot probe its device: {tail}")
    return proc.stdout.split()


def require_device(python: Path, args) -> int:
    """Fail unless the device the tests are for is visible; returns the number of devices."""
    if args.gpu or args.distributed:
        version, cuda, available, count = probe(python, _CUDA_PROBE)
        if available != "True":
            raise VerlPatchesError(
                f"torch {version} in {python} sees no CUDA device (torch.version.cuda={cuda}): the GPU tests would "
                "only skip. Install a CUDA build (TORCH_INDEX_URL) on a host with a visible GPU."
            )
        print(f"torch {version}, CUDA {cuda}, {count} visible GPU(s)")
        return int(count)
    if args.npu:
        version, npu_version, available, count = probe(python, _NPU_PROBE)
        if available != "True":
            raise VerlPatchesError(f"torch {version} with torch_npu {npu_version} in {python} sees no NPU")
        print(f"torch {version}, torch_npu {npu_version}, {count} visible NPU(s)")
        return int(count)
    return 0


@reports_errors
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.upstream and (args.npu or args.distributed):
        raise VerlPatchesError("--upstream goes with the CPU tests or with --gpu only")
    if args.nproc < 1:
        raise VerlPatchesError(f"--nproc must be at least 1, got {args.nproc}")
    if args.npu and not os.environ.get("VERL_PATCHES_PYTHON"):
        raise VerlPatchesError(
            "--npu runs on the Python of an Ascend environment (torch and torch_npu built for its CANN): set "
            "VERL_PATCHES_PYTHON to it (ci/job.sh npu-venv makes one that adds requirements/npu.txt's test packages)"
        )
    project = project_of(args)
    tree = BuildTree(project.tree_dir) if args.no_apply or args.list else apply_series(project)
    if not tree.exists():
        raise VerlPatchesError(f"no build tree at {tree.path}: run `verl-patches apply`")
    requirements = requirements_of(project, args)
    if args.list:
        override = os.environ.get("VERL_PATCHES_PYTHON")
        python = Path(override or project.venv_dir / "bin" / "python")
        if override:
            print(f"+ run with {override} (VERL_PATCHES_PYTHON)")
        else:
            print(f"+ prepare {project.venv_dir} from {', '.join(p.name for p in requirements)}")
        if not args.venv_only:
            for _, cmd in plan(project, tree, python, args):
                print("+ " + shlex.join(cmd))
            if args.upstream:
                suite = verl_suite.GPU if args.gpu else verl_suite.CPU
                selection = shlex.join(suite.selection(tree.path))
                print(f"+ verl's {suite.name} on the base and with the series, compared per test: pytest {selection}")
        return 0
    python = ensure(project.venv_dir, requirements, tree.path)
    if args.venv_only:
        return 0
    devices = require_device(python, args)
    commands = plan(project, tree, python, args)
    if args.distributed and devices < args.nproc:
        print(f"{devices} visible GPU(s); the distributed tests need {args.nproc}: not run")
        return 0
    status = 0
    for _, cmd in commands:
        print("+ " + shlex.join(cmd), flush=True)
        returncode = subprocess.run(cmd, cwd=tree.path, env=run_env(python)).returncode
        status = status or returncode
    if args.upstream:
        suite = verl_suite.GPU if args.gpu else verl_suite.CPU
        junit = Path(args.junit_dir).resolve() / f"upstream-{suite.label}" if args.junit_dir else None
        return upstream_guard(project, tree, python, requirements, args.pytest_args, suite, junit) or status
    return status


def upstream_guard(
    project: Project,
    tree: BuildTree,
    python,
    requirements,
    extra: list[str],
    suite: verl_suite.Suite = verl_suite.CPU,
    junit: Path | None = None,
) -> int:
    """verl's suite on the base (cached) and with the series, compared per test; junit: prefix of the kept
    junit files (PREFIX-base*.xml, PREFIX-series*.xml)."""
    upstream = project.load_upstream()
    base = tree.import_commit(upstream)
    if not base:
        raise VerlPatchesError(f"the build tree has no {upstream.tag}: run `verl-patches apply`")
    base_tree = tree.git.out("rev-parse", f"{base}^{{tree}}")
    key = verl_suite.cache_key(base_tree, requirements_stamp(requirements), extra, suite)
    cache = project.base_build_dir / suite.cache_file
    before = verl_suite.cached_base(cache, key)
    name = suite.name
    if before is None:
        print(f"verl's {name} on the base ({upstream.tag}):", flush=True)
        with linked_worktree(tree, base) as base_checkout:
            keep = junit and junit.with_name(junit.name + "-base")
            before = verl_suite.run(python, base_checkout.path, extra, suite, keep=keep)
        verl_suite.store_base(cache, key, before)
    else:
        print(f"verl's {name} on the base ({upstream.tag}): outcomes from {cache}")
    print(f"verl's {name} with the series (committed HEAD, in a scratch worktree):", flush=True)
    with linked_worktree(tree, tree.head() or "HEAD") as series_tree:
        keep = junit and junit.with_name(junit.name + "-series")
        after = verl_suite.run(python, series_tree.path, extra, suite, keep=keep)
    broken = verl_suite.regressions(before, after)
    label = f"upstream {suite.label.upper()} suite"
    print(f"{label} on the base:        {before.counts()}")
    print(f"{label} with the series:    {after.counts()}")
    missing = verl_suite.gone(before, after)
    for test_id in missing:
        print(f"  REGRESSION: passes on the base, not run with the series (removed, renamed or skipped): {test_id}")
    for test_id in broken:
        print(f"  REGRESSION: passes on the base, fails with the series: {test_id}")
    print(f"{label}: {len(broken) + len(missing)} regression(s)")
    return 1 if broken or missing else 0
