"""status: what the build tree holds that patches/ lacks, named one commit at a time."""

from __future__ import annotations

from helpers import message


def test_unexported_listing_names_only_the_new_commit(checkout, capsys):
    assert checkout.cli("apply") == 0
    for n in range(4):
        checkout.commit_in_tree(f"verl/m{n}.py", f"M = {n}\n", message(f"[megatron] fix: old {n}"))
    assert checkout.cli("export") == 0
    checkout.commit_in_tree("verl/new.py", "N = 1\n", message("[megatron] fix: the new one"))
    capsys.readouterr()
    assert checkout.cli("status") == 1
    out = capsys.readouterr().out
    assert "new: " in out and "[megatron] fix: the new one" in out
    assert "old 0" not in out and "old 3" not in out
    assert "['" not in out and "[]" not in out


def test_a_tree_that_exports_as_patches_says_but_built_from_another_declaration_is_stale(checkout, capsys, monkeypatch):
    """A commit amended without a change exports as patches/ says, but upstream.toml's base is not the one the
    tree was built from: the tree stays stale."""
    assert checkout.cli("apply") == 0
    checkout.commit_in_tree("verl/a.py", "A = 1\n", message("[megatron] fix: a"))
    assert checkout.cli("export") == 0
    exported = checkout.user_git("rev-parse", "HEAD")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2001-02-03T04:05:06+00:00")  # another commit, the same patch
    checkout.user_git("commit", "-q", "--amend", "--no-edit")
    assert checkout.user_git("rev-parse", "HEAD") != exported
    upstream = checkout.root / "upstream.toml"
    upstream.write_text(upstream.read_text() + f'tree = "{"1" * 40}"\n')
    capsys.readouterr()
    assert checkout.cli("status") == 3
    assert "upstream.toml changed since build/1.0.0/verl was built" in capsys.readouterr().out
