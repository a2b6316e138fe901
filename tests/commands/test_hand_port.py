"""A patch that no longer applies, ported by hand: after the failed apply, the port is committed on top of the tree
and `export --force` writes the tree's series (the old queue kept in a backup); a plain export still refuses."""

from __future__ import annotations

from helpers import message
from helpers.steps import _util, three_patches


def test_export_force_writes_a_hand_port_after_a_failed_apply(checkout, capsys):
    names = three_patches(checkout)
    second = checkout.root / "patches" / names[1]
    broken = second.read_bytes().replace(b" STEP_1 = 1\n", b" STEP_1 = 100\n")  # no longer applies
    second.write_bytes(broken)
    assert checkout.cli("apply") == 1
    err = capsys.readouterr().err
    assert "port it and the patches after it by hand" in err and "`verl-patches export --force`" in err
    # The port: step 2 by hand, step 3 dropped.
    checkout.commit_in_tree("verl/models/util.py", _util(2), message("[megatron] fix: step 2, ported"))
    assert checkout.cli("export") == 1
    err = capsys.readouterr().err
    assert "does not hold the whole series" in err and "`export --force` writes the tree's series" in err
    assert second.read_bytes() == broken
    assert checkout.cli("export", "--force") == 0
    out = capsys.readouterr().out
    assert "kept a backup of patches/" in out
    series = [ln for ln in (checkout.root / "patches/series").read_text().splitlines() if not ln.startswith("#")]
    assert series == [names[0], "megatron-fix-step-2-ported.patch"]
    assert not second.exists() and not (checkout.root / "patches" / names[2]).exists()
    assert checkout.cli("apply") == 0 and checkout.cli("status") == 0
    assert (checkout.tree / "verl/models/util.py").read_text() == _util(2)
