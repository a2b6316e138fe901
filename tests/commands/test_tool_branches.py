"""Branches in the build tree: the tool writes only its own. A user's branch that shares a name with a scratch
branch is never moved, and the rebase branch it leaves for the user is not rewritten once the user commits there."""

from __future__ import annotations

from helpers import make_sdist, message, sha256
from helpers.clamp import add_clamp_fix, rebase


def tip(checkout, ref: str) -> str:
    return checkout.user_git("rev-parse", ref).strip()


def test_a_user_commit_on_the_rebase_branch_is_not_rewritten(lifecycle, tmp_path, capsys):  # noqa: F811
    add_clamp_fix(lifecycle)
    _, out, _ = rebase(lifecycle, tmp_path, capsys, "def clamp(x):\n    return x\n", write=False)
    assert "kept on branch rebase/1.1.0" in out
    rebase(lifecycle, tmp_path, capsys, "def clamp(x):\n    return x\n", write=False)  # the tool's own: rewritten
    lifecycle.user_git("switch", "-q", "rebase/1.1.0")
    lifecycle.commit_in_tree("verl/models/port.py", "PORT = 1\n", message("[megatron] fix: a hand port"))
    mine = tip(lifecycle, "HEAD")
    lifecycle.user_git("switch", "-q", "series")
    assert lifecycle.cli("rebase", "--onto", "1.1.0", "--sha256", sha256(lifecycle.cache / "verl-1.1.0.tar.gz")) == 1
    assert "refusing to rewrite branch rebase/1.1.0" in capsys.readouterr().err
    assert tip(lifecycle, "rebase/1.1.0") == mine


def test_a_user_branch_named_scratch_is_not_moved_by_a_trial_apply(checkout, capsys):
    assert checkout.cli("apply") == 0
    checkout.user_git("switch", "-q", "-c", "scratch")
    checkout.commit_in_tree("verl/mine.py", "MINE = 1\n", message("[megatron] fix: my own work"))
    mine = tip(checkout, "scratch")
    checkout.user_git("switch", "-q", "series")
    # Re-pinned to other content: the trial apply of check imports it in a scratch worktree of the build tree.
    checkout.pin("1.0.0", sha256(make_sdist(checkout.cache, "1.0.0", {"verl/new.py": "NEW = 1\n"})))
    capsys.readouterr()
    assert checkout.cli("check") == 1  # its one finding: the tree is not on the re-pinned base yet
    out = capsys.readouterr()
    assert "fatal:" not in out.err and "the build tree is not on upstream/1.0.0" in out.out
    assert tip(checkout, "scratch") == mine
    assert not checkout.user_git("for-each-ref", "refs/heads/verl-patches/").strip()  # its own: gone
