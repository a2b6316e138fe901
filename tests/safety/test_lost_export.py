"""`git checkout -- patches/` after an export: the build tree is then the only copy of the exported commits, and
status names them (short id and subject) with what to do, instead of calling the tree stale; a pull that changed
patches/ (the tree's patches are in the checkout's history), or a change of the base's declaration in upstream.toml
(the tree was built from another one), is still stale."""

from __future__ import annotations

import json
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


def redeclare(checkout, first: str) -> None:
    """The base's table in upstream.toml gains a tree pin: not the declaration the tree was built from."""
    path = checkout.root / "upstream.toml"
    path.write_text(path.read_text() + f'tree = "{"1" * 40}"\n')


def older_record(checkout, first: str) -> None:
    """A build record without the declaration's own digest (an older version wrote it): it may have changed."""
    path = checkout.tree / ".git" / "verl-patches-record.json"
    data = json.loads(path.read_text())
    data.pop("declaration", None)
    path.write_text(json.dumps(data))


@pytest.mark.attack
@pytest.mark.parametrize("work", [add_a_patch, amend_the_patch])
@pytest.mark.parametrize(
    "after",
    [None, pull, redeclare, older_record],
    ids=["discarded", "discarded-then-pulled", "discarded-then-redeclared", "discarded-with-an-older-record"],
)
def test_an_export_undone_in_the_checkout_is_named_as_work(checkout, capsys, work, after):
    first = committed_series(checkout)
    subject = work(checkout, first)
    sha = checkout.user_git("rev-parse", "--short=12", "HEAD").strip()
    assert checkout.cli("export") == 0
    project_git(checkout, "checkout", "--", "patches/")
    if after:
        after(checkout, first)
    capsys.readouterr()
    assert checkout.cli("status") == 1
    out = capsys.readouterr().out
    assert f"{sha} [megatron] fix: {subject}" in out and "lost it since the tree was exported" in out, out
    assert checkout.cli("apply") == 1  # the tree's commits are work: no rebuild over them
    capsys.readouterr()
    if after or work is amend_the_patch:  # patches/ changed the patch too, a pull or upstream.toml did: both stay
        assert "Both sides changed" in out and "upstream.toml changed since" in out
        # an export over the tree of another declaration is no way back: only undoing the export is told to redo it
        assert ("`verl-patches export --force` writes it again" in out) == (after in (None, pull)), out
        assert checkout.cli("export") == 1
        assert sha in capsys.readouterr().err
        assert after or (checkout.cli("export", "--force") == 0 and checkout.cli("status") == 0)
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
