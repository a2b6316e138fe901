"""Every workflow's `run:` steps replayed in order on a fresh copy of the project, in dry mode (CI_DRY_RUN=1),
with the hardware probes stubbed and a synthetic upstream: a step that would break on a runner breaks here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_sdist, sha256
from replay import Replay, ReplayError, fresh_copy, matrix_runs

from verl_patches.layout import Project

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
JOB_SCRIPT = ROOT / "ci" / "job.sh"
BASES = ("0.9.0", "0.9.1")  # the synthetic copy declares bases of the same versions as upstream.toml

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


@pytest.fixture
def runner(tmp_path, hostile_git, monkeypatch) -> Replay:
    """A fresh copy of the project on a synthetic upstream with an empty series; .venv is this interpreter's."""
    venv = tool_venv()
    cache = tmp_path / "cache"
    files = {".github/workflows/gpu_unit_tests.yml": GPU_UNIT_TESTS, smoke_script_path(): SMOKE_SCRIPT}
    sdists = {version: make_sdist(cache, version, files) for version in BASES}

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
    return Replay(workflow=Path(), workspace=copy, temp=tmp_path / "runner-temp", vars=dict(VARS), env=env)


def replay(runner: Replay, workflow: Path) -> dict[str, list]:
    runner.workflow = workflow
    data = runner.load()
    results = {}
    for name, job in data["jobs"].items():
        for matrix in matrix_runs(job):
            label = " ".join([name, *matrix.values()])
            results[label] = runner.run_job(name, job, data, matrix)
    return results


def failures(results: dict[str, list]) -> list[str]:
    failed = [r for rs in results.values() for r in rs if r.returncode]
    return [f"{r.job} / {r.name}: exit {r.returncode}\n{r.output[-3000:]}" for r in failed]


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=[w.stem for w in WORKFLOWS])
def test_every_step_of_the_workflow_passes_in_dry_mode(runner, workflow):
    results = replay(runner, workflow)
    assert not failures(results), "\n".join(failures(results))
    jobs = runner.load()["jobs"].values()
    expected = [s for job in jobs for _ in matrix_runs(job) for s in job["steps"] if "run" in s]
    assert sum(len(rs) for rs in results.values()) == len(expected)
    # Dry mode builds no test environment and installs no torch.
    assert not (runner.workspace / "build" / "venv").exists()


def step_output(results, name_start: str, base: str = BASES[-1]) -> str:
    (result,) = [r for label, rs in results.items() for r in rs if r.name.startswith(name_start) and base in label]
    return result.output


def test_every_job_runs_once_per_declared_base():
    declared = [base.version for base in Project(ROOT).bases()]
    assert list(BASES) == declared
    for workflow in WORKFLOWS:
        runner = Replay(workflow=workflow, workspace=ROOT, temp=ROOT)
        for name, job in runner.load()["jobs"].items():
            assert [run["base"] for run in matrix_runs(job)] == declared, f"{workflow.name} job {name}"
        assert "BASES: ${{ matrix.base }}" in workflow.read_text()


def test_the_gpu_job_selects_verls_gpu_unit_tests_from_the_patched_tree(runner):
    results = replay(runner, ROOT / ".github" / "workflows" / "gpu.yml")
    assert not failures(results)
    out = step_output(results, "Run verl's own GPU unit tests")
    assert "--ignore-glob=tests/models/" in out and "--ignore-glob=*on_cpu.py" in out
    assert re.search(rf"-m pytest .*--junitxml=\S+/build/ci/{BASES[-1]}/upstream-gpu\.xml .*tests/$", out, re.M)
    assert "--nproc_per_node" not in step_output(results, "Run the series' 2-GPU tests")  # no such test here


def test_verl_extras_are_added_only_on_request(runner):
    gpu = ROOT / ".github" / "workflows" / "gpu.yml"
    assert "no verl extras requested" in step_output(replay(runner, gpu), "Add verl extras")
    runner.given = {"extras": "gpu"}
    out = step_output(replay(runner, gpu), "Add verl extras")
    assert "+ (dry run) env MAX_JOBS=4 build/venv/bin/python -m pip install --no-build-isolation" in out
    assert out.rstrip().endswith("pip uninstall --yes verl")
    runner.given = {"extras": "gpu; rm -rf ~"}
    results = replay(runner, gpu)
    assert "VERL_EXTRAS must be a comma-separated list of extras" in failures(results)[0]


def test_the_npu_job_checks_the_cann_release(runner):
    runner.vars["NPU_CANN_VERSION"] = "8.5.0"
    results = replay(runner, ROOT / ".github" / "workflows" / "npu.yml")
    failed = [r for rs in results.values() for r in rs if r.returncode]
    assert [r.name for r in failed] == ["Show NPUs and the CANN release"] * len(BASES)
    failed = failed[0]
    assert f"CANN {CANN} in the image, but NPU_CANN_VERSION is 8.5.0" in failed.output


def test_the_npu_smoke_needs_its_repository_variables(runner):
    del runner.vars["NPU_SMOKE_MODEL_PATH"]
    results = replay(runner, ROOT / ".github" / "workflows" / "npu.yml")
    failed = [r for rs in results.values() for r in rs if r.returncode]
    assert len(failed) == len(BASES) and all(r.name.startswith("Run the Qwen3.5 THD smoke script") for r in failed)
    failed = failed[0]
    assert "MODEL_PATH is not set: set the repository variable NPU_SMOKE_MODEL_PATH" in failed.output


def test_the_npu_smoke_composes_its_launch_command_with_the_file_logger(runner):
    results = replay(runner, ROOT / ".github" / "workflows" / "npu.yml")
    assert not failures(results)
    out = step_output(results, "Run the Qwen3.5 THD smoke script")
    assert "verl.trainer.main_ppo" in out and "console" in out and "file" in out
    assert f"+ (dry run) bash build/{BASES[-1]}/verl/" + smoke_script_path() in out


BLOCKER = """\
name: blocker
on: [push]
jobs:
  test:
    runs-on: [self-hosted, gpu]
    steps:
      - uses: actions/checkout@v4
      - name: Build the tool and the patched tree
        run: make
      - name: Install extras into build/venv
        run: build/venv/bin/python -m pip --version
      - name: Never reached
        run: "true"
"""


def test_the_replay_stops_at_a_step_that_uses_build_venv_before_anything_created_it(runner, tmp_path):
    workflow = tmp_path / "blocker.yml"
    workflow.write_text(BLOCKER)
    results = replay(runner, workflow)["test"]
    assert [r.name for r in results] == ["Build the tool and the patched tree", "Install extras into build/venv"]
    assert results[0].returncode == 0
    assert results[1].returncode == 127 and "build/venv/bin/python" in results[1].output


def test_expressions_inside_run_are_refused(runner, tmp_path):
    workflow = tmp_path / "expr.yml"
    workflow.write_text("on: [push]\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: echo ${{ inputs.x }}\n")
    with pytest.raises(ReplayError, match="not inside run:"):
        replay(runner, workflow)


@pytest.mark.parametrize("value", ["true", "yes", "2"])
def test_the_dry_run_switch_accepts_only_0_and_1(value):
    proc = subprocess.run(
        ["bash", str(JOB_SCRIPT), "gpu-info"], env={**os.environ, "CI_DRY_RUN": value}, capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert f"CI_DRY_RUN must be 0 or 1, not '{value}'" in proc.stderr


def test_the_npu_smoke_script_path_is_one_the_series_adds():
    oldest = Project(ROOT, base=Project(ROOT).bases()[0].version)
    added = {path for patch in oldest.load_patches() for path in patch.added_files}
    assert smoke_script_path() in added, f"no patch adds {smoke_script_path()} (NPU_SMOKE_SCRIPT in ci/job.sh)"
