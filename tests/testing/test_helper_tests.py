"""A fix whose test is a case added to a shared helper module: its tests are the test files importing it."""

from __future__ import annotations

import pytest
from helpers.clamp import FIXED, GPU_TEST, commit_files, message

from verl_patches.testing.helper_tests import import_pattern

HELPER = "tests/models/_clamp_cases.py"
CASES = "CASES = [(-1, 0), (3, 3)]\n"
CASE_TEST = (
    "import pytest\n\nfrom tests.models._clamp_cases import CASES\nfrom verl.models.clamp import clamp\n\n\n"
    "@pytest.mark.parametrize('x, want', CASES)\ndef test_clamp(x, want):\n    assert clamp(x) == want\n"
)
CAPPED = "def clamp(x):\n    return min(max(x, 0), 10)\n"


@pytest.mark.parametrize(
    "line, imports",
    [
        ("from tests.models._clamp_cases import CASES", True),
        ("from tests.models import _clamp_cases as cases", True),
        ("from tests.models import other, _clamp_cases", True),
        ("    import tests.models._clamp_cases", True),
        ("from tests.models._clamp_cases_extra import CASES", False),
        ("from tests.utils import _clamp_cases", False),
        ("# from tests.models._clamp_cases import CASES", False),
    ],
)
def test_the_import_pattern_names_the_helper_module_only(line, imports):
    assert bool(import_pattern(HELPER).search(f"import os\n{line}\n")) is imports


def add_fix_with_shared_cases(checkout) -> None:
    files = {
        "verl/models/clamp.py": FIXED,
        HELPER: CASES,
        "tests/models/test_clamp_on_cpu.py": CASE_TEST,
        "tests/models/test_clamp_on_gpu.py": GPU_TEST + "\nfrom tests.models._clamp_cases import CASES  # noqa\n",
    }
    commit_files(checkout, files, message("[megatron] fix: clamp negative values"))


def test_prove_and_check_take_a_case_added_to_a_helper_as_the_patch_s_test(lifecycle, capsys):
    add_fix_with_shared_cases(lifecycle)
    commit_files(
        lifecycle,
        {"verl/models/clamp.py": CAPPED, HELPER: CASES.replace("]", ", (11, 10)]")},
        message("[megatron] fix: cap values at 10"),
    )
    assert lifecycle.cli("export") == 0
    assert lifecycle.cli("check") == 0
    capsys.readouterr()
    assert lifecycle.cli("prove") == 0
    row = [ln for ln in capsys.readouterr().out.splitlines() if "cap-values" in ln][0]
    assert "test_clamp_on_cpu.py" in row and row.split()[-3:] == ["yes", "yes", "-"]


def test_prove_rejects_a_helper_case_that_passes_without_the_fix(lifecycle, capsys):
    add_fix_with_shared_cases(lifecycle)
    commit_files(
        lifecycle,
        {"verl/models/clamp.py": FIXED + "\n# cap later\n", HELPER: CASES.replace("]", ", (5, 5)]")},
        message("[megatron] fix: a case that cannot fail"),
    )
    assert lifecycle.cli("export") == 0
    capsys.readouterr()
    assert lifecycle.cli("prove") == 1
    assert "do not fail without its code" in capsys.readouterr().out


def test_check_reports_a_helper_that_no_test_imports(lifecycle, capsys):
    commit_files(
        lifecycle,
        {"verl/models/clamp.py": FIXED, "tests/models/_unused_cases.py": CASES},
        message("[megatron] fix: clamp negative values"),
    )
    assert lifecycle.cli("export") == 0
    capsys.readouterr()
    assert lifecycle.cli("check") == 1
    out = capsys.readouterr().out
    for suffix in ("_on_cpu.py", "_on_gpu.py"):
        assert f"tests only in tests/models/_unused_cases.py, which no tests/**/test_*{suffix} imports" in out
