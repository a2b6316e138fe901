"""`git checkout -- patches/` after an export: the build tree is then the only copy of the exported commits, and
status names them (short id and subject) with what to do, instead of calling the tree stale; a pull that changed
patches/ (the tree's patches are in the checkout's history) is still stale."""

from __future__ import annotations

import subprocess

import pytest
from helpers import message


def project_git(checkout, *args: str) -> str:
    return subprocess.run(["git", "-C", str(checkout.root), *args], check=True, capture_output=True, text=True).stdout


def committed_series(checkout) -> str:
    """A git checkout of the project whose queue holds one exported, committed patch; returns the patch's name."""
    project_git(checkout, "init", "-q")
    (checkout.root / ".gitignore").write_text("build/\n")
    assert checkout.cli("apply") == 0
    checkout.commit_in_tree("verl/a.py", "A = 1\n", message("[megatron] fix: first"))
    assert checkout.cli("export") == 0
    project_git(checkout, "add", "-A")
    project_git(checkout, "commit", "-qm", "queue")
    return [n for n in checkout.patches() if n.endswith(".patch")][0]


def add_a_patch(checkout, first: str) -> str:
    checkout.commit_in_tree("verl/b.py", "B = 1\n", message("[megatron] fix: second"))
    return "second"


def amend_the_patch(checkout, first: str) -> str:
    (checkout.tree / "verl/a.py").write_text("A = 2\n")
    checkout.user_git("commit", "-q", "-a", "--amend", "--no-edit")
    return "first"


def pull(checkout, first: str) -> None:
    path = checkout.root / "patches" / first
    path.write_bytes(path.read_bytes().replace(b"Problem: build_mask", b"Problem: (pulled) build_mask"))
    project_git(checkout, "commit", "-qam", "a pull")


@pytest.mark.attack
@pytest.mark.parametrize("work", [add_a_patch, amend_the_patch])
@pytest.mark.parametrize("pulled", [False, True], ids=["discarded", "discarded-then-pulled"])
def test_an_export_undone_in_the_checkout_is_named_as_work(checkout, capsys, work, pulled):
    first = committed_series(checkout)
    subject = work(checkout, first)
    sha = checkout.user_git("rev-parse", "--short=12", "HEAD").strip()
    assert checkout.cli("export") == 0
    project_git(checkout, "checkout", "--", "patches/")
    if pulled:
        pull(checkout, first)
    capsys.readouterr()
    assert checkout.cli("status") == 1
    out = capsys.readouterr().out
    assert f"{sha} [megatron] fix: {subject}" in out and "lost it since the tree was exported" in out, out
    assert checkout.cli("apply") == 1  # the tree's commits are work: no rebuild over them
    capsys.readouterr()
    if pulled or work is amend_the_patch:  # patches/ changed the patch too, or a pull did: neither is overwritten
        assert "Both sides changed" in out and "`verl-patches export --force` writes it again" in out
        assert checkout.cli("export") == 1
        assert sha in capsys.readouterr().err
        assert pulled or (checkout.cli("export", "--force") == 0 and checkout.cli("status") == 0)
        return
    assert "Export it with `verl-patches export`" in out and "changed since" not in out
    assert checkout.cli("export") == 0
    assert f"megatron-fix-{subject}.patch" in checkout.patches()["series"].decode()
    assert checkout.cli("status") == 0


def test_a_pull_over_a_committed_export_is_stale_not_work(checkout, capsys):
    first = committed_series(checkout)
    pull(checkout, first)
    capsys.readouterr()
    assert checkout.cli("status") == 3
    out = capsys.readouterr().out
    assert "changed since" in out and "holds work" not in out
    assert checkout.cli("apply") == 0
    assert "(pulled)" in checkout.user_git("log", "--format=%B")
