"""test --upstream: verl's own CPU suite on the base and on the patched tree, compared per test."""

from __future__ import annotations

import sys

import pytest
from helpers import junit_outcomes, make_archive, pin_archive, tree_id_of

UPSTREAM_TEST = (
    "from verl.models.util import build_mask\n\n\n"
    "def test_mask_on_cpu_passes():\n    assert build_mask([1], 2) == [[True, False]]\n\n\n"
    "def test_broken_upstream():\n    assert False\n"
)
VALIDATE_DOCS = "import os\nimport sys\n\nsys.exit('undocumented' if os.path.exists('verl/undocumented.py') else 0)\n"
MESSAGE = "[misc] test: {}\n\nProblem: p.\n\nFix: f.\n\nTests: t.\n\nForwarded: no\nProve-Exempt: x\n"


@pytest.fixture
def suite(checkout, tmp_path, monkeypatch):
    return on_archive(checkout, tmp_path, monkeypatch)


def on_archive(checkout, tmp_path, monkeypatch, extra: dict[str, str] | None = None):
    monkeypatch.setenv("VERL_PATCHES_PYTHON", sys.executable)
    mirror = tmp_path / "mirror"
    files = {
        "tests/models/test_util_on_cpu.py": UPSTREAM_TEST,
        "tests/models/test_gpu_only.py": "x",
        "tests/special_sanity/test_sane.py": "def test_sane():\n    import verl.models.util  # noqa: F401\n",
        "tests/special_sanity/validate_imported_docs.py": VALIDATE_DOCS,
        **(extra or {}),
    }
    archive = make_archive(mirror, "1.0.0", files)
    pin_archive(checkout.root, "1.0.0", tree_id_of(archive, tmp_path))
    monkeypatch.setenv("VERL_PATCHES_MIRROR", str(mirror))
    # A pytest configuration around build/verl (as in this project) must not change the suite's test ids.
    (checkout.root / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-p no:cacheprovider"\n')
    assert checkout.cli("apply") == 0
    return checkout


def run_guard(checkout, capsys) -> tuple[int, str]:
    assert checkout.cli("export") == 0
    capsys.readouterr()
    rc = checkout.cli("test", "--upstream")
    return rc, capsys.readouterr().out


def test_a_series_that_breaks_an_upstream_test_fails(suite, capsys):
    suite.commit_in_tree("verl/models/util.py", "def build_mask(lengths, width):\n    return []\n", MESSAGE.format("x"))
    rc, out = run_guard(suite, capsys)
    assert rc == 1
    assert "on the base:        3 passed, 1 failed, 0 skipped (4 tests)" in out
    assert "with the series:    2 passed, 2 failed, 0 skipped (4 tests)" in out
    assert "REGRESSION: passes on the base, fails with the series: tests.models.test_util_on_cpu::" in out
    assert "test_mask_on_cpu_passes" in out and "1 regression(s)" in out


def test_a_series_that_stops_an_upstream_test_from_running_fails(suite, capsys):
    """A broken import makes a module's tests vanish (a collection error): that is a regression too."""
    broken = UPSTREAM_TEST.replace("from verl.models.util import build_mask", "from verl.models.util import gone")
    suite.commit_in_tree("tests/models/test_util_on_cpu.py", broken, MESSAGE.format("y"))
    rc, out = run_guard(suite, capsys)
    assert rc == 1, out
    assert "REGRESSION: passes on the base, not run with the series" in out and "test_mask_on_cpu_passes" in out


def test_a_harmless_series_passes_and_the_base_run_is_cached(suite, capsys):
    suite.commit_in_tree("verl/notes.py", "NOTE = 1\n", MESSAGE.format("notes"))
    rc, out = run_guard(suite, capsys)
    assert rc == 0, out
    assert "0 regression(s)" in out and "test_gpu_only" not in out  # selected as *_on_cpu.py only
    rc, out = run_guard(suite, capsys)
    assert rc == 0 and "outcomes from" in out


def test_sanity_yml_steps_are_guarded_too(suite, capsys):
    suite.commit_in_tree("verl/undocumented.py", "X = 1\n", MESSAGE.format("undocumented"))
    rc, out = run_guard(suite, capsys)
    assert rc == 1
    assert "tests.special_sanity.test_sane::test_sane" not in out  # still passes
    assert "fails with the series: tests/special_sanity/validate_imported_docs.py::main" in out


STOP = "import pytest\n\n\ndef test_stop():\n    pytest.exit('interrupted', returncode=2)\n"


def test_an_interrupted_run_is_not_compared(suite, capsys):
    suite.commit_in_tree("tests/models/test_stop_on_cpu.py", STOP, MESSAGE.format("stop"))
    assert suite.cli("export") == 0
    capsys.readouterr()
    assert suite.cli("test", "--upstream") == 1
    assert "pytest did not complete (exit 2)" in capsys.readouterr().err


def test_an_interrupted_base_run_is_not_cached(checkout, tmp_path, monkeypatch, capsys):
    tree = on_archive(checkout, tmp_path, monkeypatch, {"tests/models/test_stop_on_cpu.py": STOP})
    capsys.readouterr()
    assert tree.cli("test", "--upstream") == 1
    assert "pytest did not complete (exit 2)" in capsys.readouterr().err
    assert not (tree.root / "build" / "upstream-suite-base.json").exists()


def test_files_the_suite_writes_stay_out_of_the_build_tree(checkout, tmp_path, monkeypatch, capsys):
    writes = (
        "import os\n\n\ndef test_writes():\n    os.makedirs('test_data', exist_ok=True)\n"
        "    open('test_data/x', 'w').close()\n"
    )
    tree = on_archive(checkout, tmp_path, monkeypatch, {"tests/models/test_writes_on_cpu.py": writes})
    assert tree.cli("test", "--upstream") == 0
    assert tree.user_git("status", "--porcelain") == ""
    assert tree.cli("apply") == 0


def test_junit_outcomes_keep_the_worse_of_call_and_teardown():
    xml = (
        '<testsuites><testsuite><testcase classname="t" name="a"/><testcase classname="t" name="a">'
        '<error message="teardown"/></testcase><testcase classname="t" name="b"><skipped/></testcase>'
        "</testsuite></testsuites>"
    )
    assert junit_outcomes(xml) == {"t::a": "failed", "t::b": "skipped"}
