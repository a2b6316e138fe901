"""verl-patches prove: each patch's CPU tests fail without its code and pass with it; every prefix is green."""

from __future__ import annotations

import argparse
import time

from verl_patches.checkout import Project
from verl_patches.cli import Command
from verl_patches.model.table import render
from verl_patches.queue.prove import YES, Proof, prove
from verl_patches.testing import proof_record
from verl_patches.testing.runner import PytestRunner
from verl_patches.testing.venv import ensure, requirements_stamp

COMMAND = Command(
    "prove",
    "per patch: its tests fail without it and pass with it",
    "Per patch: tests fail without its code, pass with it, and earlier patches' tests still pass.",
    build_lock=True,
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-cache", action="store_true", help="ignore cached results (build/prove-cache.json)")


def table(proofs: list[Proof]) -> str:
    rows = [["#", "patch", "tests", "failed-before", "passed-after", "earlier-pass"]]
    for n, proof in enumerate(proofs, start=1):
        tests = ", ".join(t.rsplit("/", 1)[-1] for t in proof.tests) or "-"
        rows.append([str(n), proof.patch.name, tests, proof.failed_before, proof.passed_after, proof.earlier_pass])
    return render(rows)


def run(project: Project, args: argparse.Namespace) -> int:
    start = time.monotonic()
    python = ensure(project.venv_dir, project.requirements_paths, project.tree_dir)
    cache = project.build_dir / "prove-cache.json"
    if args.no_cache and cache.exists():
        cache.unlink()
    stamp = requirements_stamp(project.requirements_paths)
    runner = PytestRunner(python=python, cache_path=cache, env_stamp=stamp)
    proofs = prove(project, runner)
    proof_record.update(
        project.base_build_dir / proof_record.RECORD_FILE,
        {
            p.patch.name: {
                "sha256": proof_record.digest(project.patch_path(p.patch.name).read_bytes()),
                "failed_before": list(p.failures_before),
            }
            for p in proofs
            if p.failed_before == YES
        },
    )
    print(table(proofs))
    bad = [p for p in proofs if not p.ok]
    for proof in bad:
        for problem in proof.problems:
            print(f"{proof.patch.name}: {problem}")
    took = time.monotonic() - start
    print(
        f"prove: {len(proofs)} patch(es), {len(bad)} with violations; "
        f"{runner.runs} pytest run(s), {runner.cached} cached; {took:.0f}s"
    )
    return 1 if bad else 0
