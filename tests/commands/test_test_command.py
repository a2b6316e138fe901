"""verl-patches test: device checks (--gpu, --npu), --distributed, --list, --venv-only and verl's GPU selection."""

from __future__ import annotations

import sys

import pytest
from helpers import GOOD_MESSAGE, make_sdist, sha256

from verl_patches.testing.verl_workflows import gpu_unit_test_args, pytest_selection

SKIPPING_GPU_TEST = "import pytest\n\n\ndef test_gpu():\n    pytest.skip('no CUDA')\n"
FAKE_TORCH = """\
import os

__version__ = "2.13.0+fake"


class version:
    cuda = os.environ.get("FAKE_CUDA") or None


class cuda:
    @staticmethod
    def is_available():
        return bool(os.environ.get("FAKE_CUDA"))

    @staticmethod
    def device_count():
        return int(os.environ.get("FAKE_GPUS", "0"))
"""
GPU_UNIT_TESTS = """\
jobs:
  gpu_unit_tests:
    steps:
      - run: pip3 install -e .
      - name: Run all GPU unit tests
        run: |
          pytest -s -x --ignore-glob="*on_npu.py" --ignore-glob 'tests/models/' -k "not slow" tests/
"""


@pytest.fixture
def series(checkout, monkeypatch, tmp_path):
    """A series of one patch with a CPU, a GPU and a 2-GPU test; tests run in this interpreter."""
    monkeypatch.setenv("VERL_PATCHES_PYTHON", sys.executable)
    make_sdist(checkout.cache, "1.0.0", {".github/workflows/gpu_unit_tests.yml": GPU_UNIT_TESTS})
    checkout.pin("1.0.0", sha256(checkout.cache / "verl-1.0.0.tar.gz"))
    assert checkout.cli("apply") == 0
    files = {
        "tests/models/test_util_on_cpu.py": "def test_cpu():\n    assert True\n",
        "tests/models/test_util_on_gpu.py": SKIPPING_GPU_TEST,
        "tests/special_distributed/test_util_nccl.py": SKIPPING_GPU_TEST,
        "verl/models/util.py": "def build_mask(lengths, width):\n    return []\n",
    }
    for path, text in files.items():
        checkout.commit_in_tree(path, text, "wip")
    base = checkout.user_git("rev-parse", "upstream/1.0.0").strip()
    checkout.user_git("reset", "--soft", base)
    checkout.user_git("commit", "-q", "-F", "-", input=GOOD_MESSAGE)
    assert checkout.cli("export") == 0
    fake = tmp_path / "fake-torch"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text(FAKE_TORCH)
    monkeypatch.setenv("PYTHONPATH", str(fake))
    monkeypatch.delenv("FAKE_CUDA", raising=False)
    return checkout


def test_gpu_fails_when_torch_sees_no_cuda(series, capsys):
    assert series.cli("test", "--no-apply", "--gpu") == 1
    err = capsys.readouterr().err
    assert "torch 2.13.0+fake" in err and "sees no CUDA device (torch.version.cuda=None)" in err


def test_gpu_fails_when_torch_is_missing(series, monkeypatch, capsys):
    monkeypatch.setenv("PYTHONPATH", "")
    assert series.cli("test", "--no-apply", "--gpu") == 1
    assert "cannot probe its device: ModuleNotFoundError: No module named 'torch'" in capsys.readouterr().err


def test_gpu_runs_the_series_gpu_tests_when_cuda_is_visible(series, monkeypatch, tmp_path, capfd):
    monkeypatch.setenv("FAKE_CUDA", "12.8")
    monkeypatch.setenv("FAKE_GPUS", "1")
    assert series.cli("test", "--no-apply", "--gpu", "--junit-dir", str(tmp_path / "junit")) == 0
    out = capfd.readouterr().out
    assert "1 visible GPU(s)" in out and "tests/models/test_util_on_gpu.py" in out and "1 skipped" in out
    assert (tmp_path / "junit" / "series-gpu.xml").is_file()


def test_distributed_needs_enough_gpus(series, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_CUDA", "12.8")
    monkeypatch.setenv("FAKE_GPUS", "1")
    assert series.cli("test", "--no-apply", "--distributed") == 0
    assert "1 visible GPU(s); the distributed tests need 2: not run" in capsys.readouterr().out


def test_list_prints_the_commands_and_prepares_nothing(series, capsys):
    capsys.readouterr()
    assert series.cli("test", "--list", "--distributed", "--nproc", "4") == 0
    out = capsys.readouterr().out
    assert "-m torch.distributed.run --standalone --nproc_per_node=4 tests/special_distributed/test_util_nccl.py" in out
    assert series.cli("test", "--list", "--gpu", "--upstream") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].endswith("tests/models/test_util_on_gpu.py")
    assert out[2].endswith("'--ignore-glob=*on_npu.py' --ignore-glob=tests/models/ -k 'not slow' tests/")
    assert not (series.root / "build" / "venv").exists()


def test_gpu_upstream_without_upstreams_workflow_names_the_file(series, capsys):
    (series.tree / ".github" / "workflows" / "gpu_unit_tests.yml").unlink()
    assert series.cli("test", "--list", "--gpu", "--upstream") == 1
    assert "gpu_unit_tests.yml does not exist" in capsys.readouterr().err


def test_npu_fails_without_torch_npu(series, capsys):
    assert series.cli("test", "--no-apply", "--npu") == 1
    assert "No module named 'torch_npu'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ('pytest -s -x --ignore-glob="a b" tests/', ["--ignore-glob=a b", "tests/"]),
        (
            "python3 -m pytest --ignore=tests/x -m 'not gpu' tests/ other/",
            ["--ignore=tests/x", "-m", "not gpu", "tests/", "other/"],
        ),
        ("pytest --deselect tests/a.py::t --timeout=5 tests/", ["--deselect=tests/a.py::t", "tests/"]),
    ],
)
def test_pytest_selection_keeps_selecting_options_and_paths(command, expected):
    assert pytest_selection(command) == expected


def test_a_workflow_without_the_pytest_line_is_named(tmp_path):
    path = tmp_path / ".github" / "workflows" / "gpu_unit_tests.yml"
    path.parent.mkdir(parents=True)
    path.write_text("jobs:\n  gpu_unit_tests:\n    steps:\n      - run: pytest tests/\n")
    with pytest.raises(Exception, match=r"no step of job 'gpu_unit_tests' runs `pytest --ignore-glob"):
        gpu_unit_test_args(tmp_path)


def test_the_selection_of_verl_0_9_0s_gpu_unit_tests(verl_0_9_0):
    args = gpu_unit_test_args(verl_0_9_0)
    assert args[-1] == "tests/"
    for ignored in ("*on_npu.py", "*on_cpu.py", "tests/models/", "tests/special*", "tests/experimental", "*_sglang*"):
        assert f"--ignore-glob={ignored}" in args
    assert len(args) == 14 and "-s" not in args and "-x" not in args


def test_npu_needs_the_ascend_environments_python(series, monkeypatch, capsys):
    monkeypatch.delenv("VERL_PATCHES_PYTHON")
    assert series.cli("test", "--no-apply", "--npu") == 1
    assert "--npu runs on the Python of an Ascend environment" in capsys.readouterr().err
    assert not (series.root / "build" / "venv").exists()
