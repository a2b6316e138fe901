"""Every workflow's `run:` steps replayed in order on a fresh copy of the project, in dry mode (CI_DRY_RUN=1),
with the hardware probes stubbed and a synthetic upstream (ci_replay.py): a step that would break on a runner
breaks here. The replay itself and the GPU job; the NPU job in test_workflows_npu.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.ci_replay import (
    JOB_SCRIPT,
    QUEUE_WORKFLOWS,
    ROOT,
    WORKFLOW_DIR,
    WORKFLOWS,
    failures,
    replay,
    step_output,
    step_result,
)
from helpers.conditions import evaluate
from helpers.replay import Replay, ReplayError, matrix_runs

from verl_patches.checkout import Project

GPU = "gpu.yml"
SERIES_GPU = "Run the series' GPU tests"
UPSTREAM_GPU = "Run verl's own GPU unit tests"


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=[w.stem for w in WORKFLOWS])
def test_every_step_of_the_workflow_passes_in_dry_mode(runner, workflow):
    results = replay(runner, workflow)
    assert not failures(results), "\n".join(failures(results))
    jobs = runner.load()["jobs"].values()
    expected = [s for job in jobs for _ in matrix_runs(job, runner.needs) for s in job["steps"] if "run" in s]
    ran = [r for rs in results.values() for r in rs if r.outcome == "success"]
    assert len(ran) == len(expected)
    # Dry mode builds no test environment and installs no torch.
    assert not (runner.workspace / "build" / "venv").exists()


@pytest.mark.parametrize("added", [None, "0.9.2"], ids=["upstream.toml", "with a new base"])
def test_every_job_runs_once_per_base_that_upstream_toml_declares(tmp_path, added):
    # The first job of each workflow prints the bases (make ci-bases-json); a new table changes every matrix.
    text = (ROOT / "upstream.toml").read_text()
    if added:  # with a comment on its header line, which TOML allows
        text += f'\n[base."{added}"]  # newest\nname = "verl"\nqueue = "patches/{added}"\nsource = "pypi-sdist"\n'
    (tmp_path / "upstream.toml").write_text(text)
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    printed = subprocess.run(["make", "-s", "ci-bases-json"], cwd=tmp_path, capture_output=True, text=True, check=True)
    declared = [base.version for base in Project(ROOT).bases()] + ([added] if added else [])
    assert json.loads(printed.stdout) == declared
    for workflow in QUEUE_WORKFLOWS:
        runner = Replay(workflow=workflow, workspace=ROOT, temp=tmp_path)
        jobs = runner.load()["jobs"]
        assert jobs["bases"]["outputs"] == {"bases": "${{ steps.bases.outputs.bases }}"}
        job = jobs["test"]
        assert job["needs"] == "bases" and "BASES: ${{ matrix.base }}" in workflow.read_text()
        runs = matrix_runs(job, {"bases.outputs.bases": printed.stdout.strip()})
        assert [run["base"] for run in runs] == declared, workflow.name


def test_the_gpu_job_compares_verls_gpu_unit_tests_with_the_base(runner):
    results = replay(runner, GPU)
    assert not failures(results)
    out = step_output(results, UPSTREAM_GPU)
    assert "verl's GPU unit tests on the base and with the series, compared per test" in out
    assert "--ignore-glob=tests/models/" in out and "--ignore-glob=*on_cpu.py" in out


def test_each_gpu_test_step_runs_whatever_the_test_steps_before_it_gave(runner):
    runner.failing = {SERIES_GPU}
    upstream = step_result(replay(runner, GPU), UPSTREAM_GPU)
    assert upstream.outcome == "success", upstream.output


def test_the_torchrun_step_runs_when_and_only_when_the_series_has_a_distributed_test():
    # Without one, a torchrun step over tests/special_distributed prints "nothing to run" and passes unchecked.
    patches = sorted((ROOT / "patches").glob("*/*.patch"))
    added = [p for p in patches if "\n+++ b/tests/special_distributed/test_" in p.read_text(errors="replace")]
    assert ("make ci-gpu-distributed" in (WORKFLOW_DIR / GPU).read_text()) == bool(added)


@pytest.mark.parametrize(("failing", "outcome"), [("Run the CPU tests", "success"), ("Build the tool", "skipped")])
def test_verls_cpu_suite_runs_whatever_the_cpu_tests_gave(runner, failing, outcome):
    runner.failing = {failing}
    assert step_result(replay(runner, "cpu.yml"), "Run verl's own CPU suite").outcome == outcome


def test_no_gpu_test_step_runs_without_build_venv(runner):
    runner.failing = {"Prepare build/venv"}
    results = replay(runner, GPU)
    assert [step_result(results, name).outcome for name in (SERIES_GPU, UPSTREAM_GPU)] == ["skipped"] * 2


def test_the_model_files_come_from_a_repository_variable(runner, tmp_path):
    models = tmp_path / "models-on-the-runner"
    models.mkdir()
    runner.vars["GPU_MODELS_DIR"] = str(models)
    out = step_output(replay(runner, GPU), "Link the model files")
    assert f"+ (dry run) ln -s {models} {Path.home() / 'models'}" in out
    runner.vars["GPU_MODELS_DIR"] = str(tmp_path / "missing")
    result = step_result(replay(runner, GPU), "Link the model files")
    assert result.outcome == "failure" and f"GPU_MODELS_DIR {tmp_path / 'missing'} is not a folder" in result.output


def test_flash_attn_comes_only_as_a_prebuilt_wheel(runner):
    assert "no flash-attn wheel given" in step_output(replay(runner, GPU), "Add a prebuilt flash-attn wheel")
    wheel = "https://example.invalid/wheels/flash_attn-2.8.3-cp311-cp311-linux_x86_64.whl"
    runner.given = {"flash_attn_wheel": wheel}
    out = step_output(replay(runner, GPU), "Add a prebuilt flash-attn wheel")
    assert f"-m pip install --only-binary=:all: --constraint requirements/cpu-test.txt {wheel}" in out
    runner.given = {"flash_attn_wheel": "flash-attn==2.8.3"}
    result = step_result(replay(runner, GPU), "Add a prebuilt flash-attn wheel")
    assert result.outcome == "failure"
    assert "FLASH_ATTN_WHEEL must be the URL or path of a prebuilt flash_attn-*.whl" in result.output
    for path in (JOB_SCRIPT, WORKFLOW_DIR / GPU):
        assert "--no-build-isolation" not in path.read_text(), f"{path.name} builds a package from source"


def test_no_workflow_hard_codes_the_torch_index():
    for workflow in WORKFLOWS:
        for line in workflow.read_text().splitlines():
            if line.strip().startswith("TORCH_INDEX_URL:"):
                assert "vars." in line, f"{workflow.name}: {line.strip()}"


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
    assert [r.outcome for r in results] == ["success", "failure", "skipped"]
    assert results[1].returncode == 127 and "build/venv/bin/python" in results[1].output


@pytest.mark.parametrize(
    ("workflow", "message"),
    [
        ("jobs:\n  a:\n    runs-on: x\n    steps:\n      - run: echo ${{ inputs.x }}\n", "not inside run:"),
        (
            "jobs:\n  a:\n    runs-on: x\n    container: {image: i}\n    steps:\n      - run: 'true'\n"
            "        env:\n          T: ${{ runner.temp }}/x\n",
            "names the runner host's path, not the container's",
        ),
    ],
    ids=["expression in run", "host path in a container job"],
)
def test_what_breaks_on_a_runner_is_refused(runner, tmp_path, workflow, message):
    path = tmp_path / "refused.yml"
    path.write_text("on: [push]\n" + workflow)
    with pytest.raises(ReplayError, match=message):
        replay(runner, path)


@pytest.mark.parametrize(
    ("condition", "failed", "runs"),
    [
        ("", False, True),
        ("", True, False),
        ("always()", True, True),
        ("${{ !cancelled() && steps.venv.outcome == 'success' }}", True, True),
        ("${{ !cancelled() && steps.venv.outcome == 'success' }}", False, True),
        ("!cancelled() && steps.other.outcome == 'success'", False, False),
        ("steps.venv.outcome == 'success'", True, False),  # no status function: success() && ...
        ("failure() || (steps.venv.outcome != 'failure')", True, True),
    ],
)
def test_step_conditions_evaluate_as_on_github(condition, failed, runs):
    contexts = {"steps": {"venv": {"outcome": "success"}, "other": {"outcome": "failure"}}}
    assert evaluate(condition, failed, contexts, "step") is runs


@pytest.mark.parametrize("value", ["true", "yes", "2"])
def test_the_dry_run_switch_accepts_only_0_and_1(value):
    proc = subprocess.run(
        ["bash", str(JOB_SCRIPT), "gpu-info"], env={**os.environ, "CI_DRY_RUN": value}, capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert f"CI_DRY_RUN must be 0 or 1, not '{value}'" in proc.stderr
