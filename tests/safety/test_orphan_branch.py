"""A user's orphan branch in the build tree (HEAD on a branch without a commit) is work: status reports it, and
neither apply nor apply --force, which could back up no commit of it, touches its files."""

from __future__ import annotations

import pytest


@pytest.fixture
def orphan(checkout):
    assert checkout.cli("apply") == 0
    checkout.user_git("checkout", "-q", "--orphan", "experiment")
    (checkout.tree / "verl" / "models" / "util.py").write_text("EDITED = True\n")
    (checkout.tree / "verl" / "draft.py").write_text("DRAFT = 1\n")
    return checkout


def test_status_reports_the_orphan_branch_as_work(orphan, capsys):
    assert orphan.cli("status") == 1
    assert "HEAD is on branch experiment, which has no commit yet" in capsys.readouterr().out


@pytest.mark.parametrize("force", [(), ("--force",)], ids=["apply", "apply --force"])
def test_apply_leaves_the_orphan_branchs_files_alone(orphan, capsys, force):
    assert orphan.cli("apply", *force) == 1
    err = capsys.readouterr().err
    assert "is on branch experiment, which has no commit yet" in err and "Nothing was changed" in err
    assert (orphan.tree / "verl" / "models" / "util.py").read_text() == "EDITED = True\n"
    assert (orphan.tree / "verl" / "draft.py").read_text() == "DRAFT = 1\n"
    assert orphan.user_git("symbolic-ref", "--short", "HEAD").strip() == "experiment"


def test_an_empty_orphan_branch_holds_nothing_to_lose(checkout):
    assert checkout.cli("apply") == 0
    checkout.user_git("checkout", "-q", "--orphan", "empty")
    checkout.user_git("rm", "-rfq", ".")
    assert checkout.cli("apply") == 0
    assert checkout.user_git("symbolic-ref", "--short", "HEAD").strip() == "series"
