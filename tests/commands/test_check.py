"""check driven through the CLI on the synthetic upstream: a good series, lint and staleness, a patch that does not
apply, no build tree (lint and a trial apply)."""

from __future__ import annotations

import shutil

from helpers.steps import export_good_patch


def test_check_passes_on_a_good_series(checkout, capsys):
    export_good_patch(checkout)
    capsys.readouterr()
    assert checkout.cli("check") == 0
    assert "no findings" in capsys.readouterr().out


def test_check_reports_lint_and_staleness(checkout, capsys):
    export_good_patch(checkout)
    checkout.user_git("commit", "-q", "--amend", "-m", "bad subject")
    (checkout.root / "patches" / "stray.patch").write_bytes(b"From x\n")
    capsys.readouterr()
    assert checkout.cli("check") == 1
    out = capsys.readouterr().out
    assert "stray.patch: series-unused:" in out
    # series findings stop before the trial apply; fix them and see the tree comparison.
    (checkout.root / "patches" / "stray.patch").unlink()
    assert checkout.cli("check") == 1
    out = capsys.readouterr().out
    assert "build/1.0.0/verl: up-to-date:" in out and "bad-subject.patch" in out


def test_check_reports_a_patch_that_does_not_apply(checkout, capsys):
    export_good_patch(checkout)
    (name,) = [n for n in checkout.patches() if n != "series"]
    path = checkout.root / "patches" / name
    path.write_bytes(path.read_bytes().replace(b"-    return [[i", b"-    yield [[i").replace(b"index ", b"index-x "))
    capsys.readouterr()
    assert checkout.cli("check", "--no-apply") == 0
    assert checkout.cli("check") == 1
    out = capsys.readouterr().out
    assert f"{name}: applies:" in out and "verl/models/util.py" in out


def test_check_without_a_build_tree_lints_and_trial_applies(checkout, capsys):
    export_good_patch(checkout)

    shutil.rmtree(checkout.root / "build")
    capsys.readouterr()
    assert checkout.cli("check") == 0  # a fresh clone: nothing un-exported to compare with
    assert "no findings" in capsys.readouterr().out
