"""The series' tests (CPU, GPU, NPU, distributed) and verl's own suite, in build/venv."""

from __future__ import annotations

import subprocess
from pathlib import Path

from verl_patches.checkout import Project
from verl_patches.errors import VerlPatchesError
from verl_patches.git.tree import BuildTree
from verl_patches.git.trial import linked_worktree
from verl_patches.testing import pytest_run, verl_suite
from verl_patches.testing.venv import requirements_stamp, run_env

DISTRIBUTED_DIR = "tests/special_distributed/"


# Printed by the device probes below as one line: torch version, device API version, available, device count.
_CUDA_PROBE = (
    "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available(), torch.cuda.device_count())"
)


_NPU_PROBE = (
    "import torch, torch_npu; print(torch.__version__, torch_npu.__version__, torch.npu.is_available(), "
    "torch.npu.device_count())"
)


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
        kept = junit / f"{label}.xml" if junit else None
        return label, pytest_run.command(python, [*args.pytest_args, *targets], 900, ["-rs", *extra], kept)

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
