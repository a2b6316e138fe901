"""The tool's one pytest runner: results read from pytest's junit XML, named as pytest names them."""

from __future__ import annotations

import os
import sys

from verl_patches.testing import pytest_run

TESTS = {
    "tests/models/test_a_on_cpu.py": (
        "import pytest\n\n\ndef test_ok():\n    pass\n\n\ndef test_bad():\n    assert 1 == 2\n\n\n"
        "class TestGroup:\n    @pytest.mark.parametrize('x', [1.5])\n    def test_p(self, x):\n        assert x < 0\n\n"
        "    def test_skip(self):\n        pytest.skip('no')\n"
    ),
    "tests/models/test_b_on_cpu.py": "import not_a_module_anywhere\n",
}


def test_a_run_names_failures_as_pytest_does(tmp_path):
    for path, text in TESTS.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    kept = tmp_path / "kept" / "junit.xml"
    options = ["-q", "--continue-on-collection-errors"]
    result = pytest_run.run(sys.executable, list(TESTS), 60, tmp_path, env, options=options, keep=kept)
    assert result.returncode == 1 and result.complete and kept.is_file()
    assert result.failed == (
        "tests/models/test_a_on_cpu.py::test_bad",
        "tests/models/test_a_on_cpu.py::TestGroup::test_p[1.5]",
        "tests/models/test_b_on_cpu.py",
    )
    assert result.lines[0] == "FAILED tests/models/test_a_on_cpu.py::test_bad - assert 1 == 2"
    assert result.lines[2].startswith("ERROR tests/models/test_b_on_cpu.py - ModuleNotFoundError: "), result.lines
    assert result.summary.startswith("2 failed, 1 passed, 1 skipped, 1 error in ")
    assert result.outcomes["tests.models.test_a_on_cpu.TestGroup::test_skip"] == "skipped"
    only_ok = pytest_run.run(sys.executable, [f"{next(iter(TESTS))}::test_ok"], 60, tmp_path, env)
    assert only_ok.passed and only_ok.failed == () and only_ok.summary.startswith("1 passed in ")


def test_a_command_line_puts_the_targets_last():
    cmd = pytest_run.command("py", ["-k", "x", "t.py"], 9, ["-rs"], junit=None)
    assert cmd == ["py", "-m", "pytest", "-p", "no:cacheprovider", "-rs", "--timeout=9", "-k", "x", "t.py"]


XFAIL = """import pytest


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert 0


def test_xfail_imperative():
    pytest.xfail("later")


@pytest.mark.xfail(reason="fixed?")
def test_xpass():
    pass


@pytest.mark.xfail(reason="must fail", strict=True)
def test_xpass_strict():
    pass


def test_skip():
    pytest.skip("no")


def test_ok():
    pass
"""


def test_xfailed_tests_are_counted_as_pytest_counts_them(tmp_path):
    """junit XML writes an xfail as <skipped type="pytest.xfail">, a strict XPASS as a failure and any other XPASS
    as a pass: the summary says xfailed for the first, as pytest does, and counts an XPASS as what junit says."""
    (tmp_path / "test_xfail_on_cpu.py").write_text(XFAIL)
    result = pytest_run.run(sys.executable, ["test_xfail_on_cpu.py"], 60, tmp_path, dict(os.environ), options=["-q"])
    assert result.returncode == 1 and result.complete
    assert result.summary.startswith("1 failed, 2 passed, 1 skipped, 2 xfailed in "), result.summary
    assert result.lines == ("FAILED test_xfail_on_cpu.py::test_xpass_strict - [XPASS(strict)] must fail",)
    assert result.outcomes["test_xfail_on_cpu::test_xfail"] == "skipped"  # not run to a pass, as before
