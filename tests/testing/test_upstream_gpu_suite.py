"""test --gpu --upstream: verl's GPU unit tests, as each tree's gpu_unit_tests.yml selects them, on the base and with
the series, compared per test (as the CPU suite is: test_upstream_suite.py). torch is a fake that reports CUDA."""

from __future__ import annotations

import sys

import pytest
from helpers import GOOD_MESSAGE, junit_outcomes, make_sdist, sha256

WORKFLOW = ".github/workflows/gpu_unit_tests.yml"
GPU_UNIT_TESTS = """\
jobs:
  gpu_unit_tests:
    steps:
      - name: Run all GPU unit tests
        run: |
          pytest -s -x --ignore-glob='*on_cpu.py' {ignore}tests/
"""
UPSTREAM_TEST = """\
from verl.models.util import build_mask


def test_mask():
    assert build_mask([1], 2) == [[True, False]]


def test_needs_flash_attn():
    import flash_attn  # noqa: F401
"""
FAKE_TORCH = """\
__version__ = "2.13.0+fake"


class version:
    cuda = "12.8"


class cuda:
    is_available = staticmethod(lambda: True)
    device_count = staticmethod(lambda: 1)
"""
MASK_TEST = "tests.models.test_util::test_mask"


@pytest.fixture
def gpu_suite(checkout, monkeypatch, tmp_path):
    monkeypatch.setenv("VERL_PATCHES_PYTHON", sys.executable)
    files = {
        WORKFLOW: GPU_UNIT_TESTS.format(ignore=""),
        "tests/models/__init__.py": "",
        "tests/models/test_util.py": UPSTREAM_TEST,
        "tests/models/test_util_on_cpu.py": "def test_cpu():\n    pass\n",
    }
    make_sdist(checkout.cache, "1.0.0", files)
    checkout.pin("1.0.0", sha256(checkout.cache / "verl-1.0.0.tar.gz"))
    assert checkout.cli("apply") == 0
    fake = tmp_path / "fake-torch"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text(FAKE_TORCH)
    monkeypatch.setenv("PYTHONPATH", str(fake))
    return checkout


def run_guard(checkout, capsys, *args: str) -> tuple[int, str]:
    assert checkout.cli("export") == 0
    capsys.readouterr()
    rc = checkout.cli("test", "--gpu", "--upstream", *args)
    return rc, capsys.readouterr().out


def test_a_gpu_test_that_the_series_breaks_fails_and_one_that_fails_on_the_base_does_not(gpu_suite, tmp_path, capsys):
    gpu_suite.commit_in_tree("verl/models/util.py", "def build_mask(lengths, width):\n    return []\n", GOOD_MESSAGE)
    rc, out = run_guard(gpu_suite, capsys, "--junit-dir", str(tmp_path / "junit"))
    assert rc == 1
    assert "upstream GPU suite on the base:        1 passed, 1 failed, 0 skipped (2 tests)" in out
    assert f"REGRESSION: passes on the base, fails with the series: {MASK_TEST}" in out
    assert "test_needs_flash_attn" not in out and "1 regression(s)" in out
    base = junit_outcomes((tmp_path / "junit" / "upstream-gpu-base.xml").read_text())
    series = junit_outcomes((tmp_path / "junit" / "upstream-gpu-series.xml").read_text())
    assert base[MASK_TEST] == "passed" and series[MASK_TEST] == "failed"


def test_a_harmless_series_passes_and_the_base_run_is_cached_apart_from_the_cpu_suites(gpu_suite, capsys):
    gpu_suite.commit_in_tree("verl/notes.py", "NOTE = 1\n", GOOD_MESSAGE)
    rc, out = run_guard(gpu_suite, capsys)
    assert rc == 0, out
    assert "upstream GPU suite: 0 regression(s)" in out
    build = gpu_suite.build
    assert (build / "upstream-gpu-suite-base.json").is_file() and not (build / "upstream-suite-base.json").exists()
    rc, out = run_guard(gpu_suite, capsys)
    assert rc == 0 and "verl's GPU unit tests on the base (upstream/1.0.0): outcomes from" in out


def test_the_selection_is_each_trees_own(gpu_suite, capsys):
    """A series that makes upstream's GPU workflow skip a folder stops its tests from running: a regression."""
    gpu_suite.commit_in_tree(WORKFLOW, GPU_UNIT_TESTS.format(ignore="--ignore-glob='tests/models/*' "), GOOD_MESSAGE)
    rc, out = run_guard(gpu_suite, capsys)
    assert rc == 1
    assert f"not run with the series (removed, renamed or skipped): {MASK_TEST}" in out
