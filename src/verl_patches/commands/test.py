"""verl-patches test: run the CPU tests the series adds or changes, in the pinned environment."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
from pathlib import Path

from verl_patches.checkout import Project
from verl_patches.cli import Command
from verl_patches.errors import VerlPatchesError
from verl_patches.git.tree import BuildTree
from verl_patches.queue.apply import apply_series
from verl_patches.testing import verl_suite
from verl_patches.testing.series import DISTRIBUTED_DIR, plan, require_device, requirements_of, upstream_guard
from verl_patches.testing.venv import ensure, run_env

COMMAND = Command(
    "test",
    "run the series' CPU (or --gpu) tests in build/venv",
    "Apply the series, prepare build/venv and run the series' tests with pytest.",
    build_lock=True,
    recovery="run `verl-patches test` again; its apply recovers the build tree (keeping a backup of what it held)",
)


def arguments(p: argparse.ArgumentParser) -> None:
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


def run(project: Project, args: argparse.Namespace) -> int:
    if args.upstream and (args.npu or args.distributed):
        raise VerlPatchesError("--upstream goes with the CPU tests or with --gpu only")
    if args.nproc < 1:
        raise VerlPatchesError(f"--nproc must be at least 1, got {args.nproc}")
    if args.npu and not os.environ.get("VERL_PATCHES_PYTHON"):
        raise VerlPatchesError(
            "--npu runs on the Python of an Ascend environment (torch and torch_npu built for its CANN): set "
            "VERL_PATCHES_PYTHON to it (ci/job.sh npu-venv makes one that adds requirements/npu.txt's test packages)"
        )
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
