"""The replay of this project's workflows (tests/ci/test_workflows*.py): a fresh copy of the project on a synthetic
upstream, with the hardware probes stubbed, run in dry mode (CI_DRY_RUN=1)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from helpers import ROOT, make_sdist, sha256
from helpers.fake_index import serve, write_index
from helpers.replay import Replay, StepResult, fresh_copy, matrix_runs
from verl_patches.checkout import Project

WORKFLOW_DIR = ROOT / ".github" / "workflows"
WORKFLOWS = sorted(WORKFLOW_DIR.glob("*.yml"))
QUEUE_WORKFLOWS = [w for w in WORKFLOWS if w.name != "watch.yml"]  # one job per base; watch.yml runs once
JOB_SCRIPT = ROOT / "ci" / "job.sh"
# The synthetic copy declares bases of the same versions as upstream.toml.
BASES = tuple(base.version for base in Project(ROOT).bases())

# A small copy of the part of upstream's gpu_unit_tests.yml that selects the tests.
GPU_UNIT_TESTS = """\
name: GPU unit tests
on: [push]
jobs:
  gpu_unit_tests:
    runs-on: L20x8
    steps:
      - uses: actions/checkout@v4
      - name: Run all GPU unit tests
        run: |
          pytest -s -x --ignore-glob="*on_npu.py" --ignore-glob='*on_cpu.py' --ignore-glob="tests/models/" tests/
"""
SMOKE_SCRIPT = """\
#!/usr/bin/env bash
set -euo pipefail
CMD=(python3 -m verl.trainer.main_ppo trainer.logger=console "$@")
if [ "${DRY_RUN:-0}" = "1" ]; then
    printf '%q ' "${CMD[@]}"
    printf '\\n'
    exit 0
fi
echo "a real launch in a dry replay" >&2
exit 1
"""
STUBS = {
    "nvidia-smi": 'echo "GPU 0: NVIDIA Stub GPU (UUID: GPU-00000000-0000-0000-0000-000000000000)"',
    "npu-smi": 'echo "| npu-smi stub | Version: 0.0.0 |"',
    "gh": 'echo "$*" >> "$(dirname "$0")/gh.calls"; exit 1',  # the replay must never reach GitHub
}
VARS = {
    "NPU_SMOKE_MODEL_PATH": "/models/Qwen3.5-2B",
    "NPU_SMOKE_TRAIN_FILE": "/data/geo3k/train.parquet",
    "NPU_SMOKE_VAL_FILE": "/data/geo3k/test.parquet",
}
CANN = "9.0.0"


def smoke_script_path() -> str:
    match = re.search(r"^NPU_SMOKE_SCRIPT=\$\{NPU_SMOKE_SCRIPT:-(.+)\}$", JOB_SCRIPT.read_text(), re.M)
    assert match, "ci/job.sh defines NPU_SMOKE_SCRIPT"
    return match.group(1)


def tool_venv() -> Path:
    prefix = Path(sys.prefix)
    if not (prefix / "bin" / "verl-patches").exists() or not (prefix / ".installed").exists():
        pytest.skip(f"the replay reuses the tool's .venv as the copy's .venv; {prefix} is not one made by make")
    return prefix


@contextmanager
def replay_runner(tmp_path: Path) -> Iterator[Replay]:
    """A fresh copy of the project on a synthetic upstream with an empty series; .venv is this interpreter's;
    a fake PyPI and GitHub API on localhost (index: its folder) list no release newer than the bases."""
    venv = tool_venv()
    cache = tmp_path / "cache"
    files = {".github/workflows/gpu_unit_tests.yml": GPU_UNIT_TESTS, smoke_script_path(): SMOKE_SCRIPT}
    sdists = {version: make_sdist(cache, version, files) for version in BASES}
    index = write_index(tmp_path / "index", dict(sdists), [f"v{version}" for version in BASES])

    def on_synthetic_upstream(copy: Path) -> None:
        shutil.rmtree(copy / "patches")
        tables = []
        for version, sdist in sdists.items():
            (copy / "patches" / version).mkdir(parents=True)
            (copy / "patches" / version / "series").write_text("# series\n")
            tables.append(
                f'[base."{version}"]\nname = "verl"\nqueue = "patches/{version}"\nsource = "pypi-sdist"\n'
                f'sha256 = "{sha256(sdist)}"\n'
            )
        (copy / "upstream.toml").write_text("\n".join(tables))
        (copy / ".venv").symlink_to(venv)
        # make would reinstall the tool into .venv if pyproject.toml were newer than .venv/.installed.
        stamp = (venv / ".installed").stat().st_mtime
        os.utime(copy / "pyproject.toml", (stamp - 60, stamp - 60))

    copy = fresh_copy(ROOT, tmp_path / "project", on_synthetic_upstream)
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name, body in STUBS.items():
        (stubs / name).write_text(f"#!/bin/sh\n{body}\n")
        (stubs / name).chmod(0o755)
    ascend = tmp_path / "ascend"
    info = ascend / f"{os.uname().machine}-linux" / "ascend_toolkit_install.info"
    info.parent.mkdir(parents=True)
    info.write_text(f"package_name=Ascend-cann-toolkit\nversion={CANN}\n")
    (tmp_path / "runner-temp").mkdir()
    env = {
        "CI_DRY_RUN": "1",
        "VERL_PATCHES_CACHE": str(cache),
        "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}",
        "ASCEND_TOOLKIT_HOME": str(ascend),
    }
    with serve(index) as url:
        env.update(VERL_PATCHES_PYPI_URL=f"{url}/pypi", VERL_PATCHES_GITHUB_API=f"{url}/github")
        yield Replay(workflow=Path(), workspace=copy, temp=tmp_path / "runner-temp", vars=dict(VARS), env=env)
    assert not (stubs / "gh.calls").exists(), (stubs / "gh.calls").read_text()


def replay(runner: Replay, workflow: Path | str) -> dict[str, list[StepResult]]:
    """Every job of the workflow, once per matrix combination, keyed by `job value...`."""
    runner.workflow = WORKFLOW_DIR / workflow if isinstance(workflow, str) else workflow
    data = runner.load()
    results = {}
    runner.needs = {}
    for name, job in data["jobs"].items():  # a job's needs come before it in this project's workflows
        for matrix in matrix_runs(job, runner.needs):
            label = " ".join([name, *matrix.values()])
            results[label] = runner.run_job(name, job, data, matrix)
    return results


def failures(results: dict[str, list[StepResult]]) -> list[str]:
    failed = [r for rs in results.values() for r in rs if r.returncode]
    return [f"{r.job} / {r.name}: exit {r.returncode}\n{r.output[-3000:]}" for r in failed]


def step_result(results: dict[str, list[StepResult]], name_start: str, base: str = BASES[-1]) -> StepResult:
    (result,) = [r for label, rs in results.items() for r in rs if r.name.startswith(name_start) and base in label]
    return result


def step_output(results: dict[str, list[StepResult]], name_start: str, base: str = BASES[-1]) -> str:
    return step_result(results, name_start, base).output
