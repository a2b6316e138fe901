"""table: the series as a table, subjects (non-ASCII too), trailers, tests and the code count."""

from __future__ import annotations

import re

from helpers import message
from helpers.steps import GPU_TEST, export_good_patch


def test_table_lists_subject_status_and_tests(checkout, capsys):
    export_good_patch(checkout)
    capsys.readouterr()
    assert checkout.cli("table") == 0
    out = capsys.readouterr().out
    assert "[megatron] fix: build boolean masks in build_mask" in out
    header, _, row = (re.split(r"  +", line) for line in out.splitlines()[1:4])
    assert header[2:6] == ["forwarded", "applied upstream", "code lines", "test lines"]
    test_lines = 2 + len(GPU_TEST.splitlines())  # both test files are new
    assert row[2:6] == ["no", "-", "2", str(test_lines)]  # util.py: one line removed, one added
    assert "test_util_on_cpu.py" in out
    assert f"changed lines: 2 in verl/, {test_lines} in tests/ ({test_lines / 2:.1f} test lines per code line)" in out


def test_non_ascii_subjects_in_table_and_check(checkout, capsys):
    assert checkout.cli("apply") == 0
    checkout.commit_in_tree("verl/a.py", "A = 1\n", message("[misc] fix: naïve dates — ü"))
    checkout.commit_in_tree("verl/b.py", "B = 1\n", message("Ünïcode subject"))
    assert checkout.cli("export") == 0
    capsys.readouterr()
    assert checkout.cli("table") == 0
    assert "[misc] fix: naïve dates — ü" in capsys.readouterr().out
    assert checkout.cli("check", "--no-apply") == 1
    assert "subject 'Ünïcode subject' is not in verl's PR-title form" in capsys.readouterr().out


def test_table_does_not_count_test_package_files_as_code(checkout, capsys):
    assert checkout.cli("apply") == 0
    for path in ("tests/models/__init__.py", "tests/models/test_x_on_cpu.py", "verl/models/util.py"):
        target = checkout.tree / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("X = 1\n")
        checkout.user_git("add", path)
    checkout.user_git("commit", "-q", "-F", "-", input=message("[megatron] fix: counted"))
    assert checkout.cli("export") == 0
    capsys.readouterr()
    assert checkout.cli("table") == 0
    # util.py: its two lines replaced by one (3 code lines); the two test files: one line each
    assert "changed lines: 3 in verl/, 2 in tests/" in capsys.readouterr().out
