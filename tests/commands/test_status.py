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
