"""An ignored file at a path the upstream import tracks (recreated by the user after a patch deleted it) is work:
a rebuild would check the import out over it. apply refuses; apply --force keeps it in its backup."""

from __future__ import annotations

import pytest
from helpers import make_sdist, message, sha256


@pytest.fixture
def recreated(checkout):
    files = {".gitignore": "*.local\n", "config.local": "upstream's\n"}
    checkout.pin("1.0.0", sha256(make_sdist(checkout.cache, "1.0.0", files)))
    assert checkout.cli("apply") == 0
    checkout.user_git("rm", "-q", "config.local")
    checkout.user_git("commit", "-q", "-F", "-", input=message("[megatron] fix: drop config.local"))
    assert checkout.cli("export") == 0
    (checkout.tree / "config.local").write_text("mine\n")
    series = checkout.root / "patches" / "series"
    series.write_text(series.read_text() + "# reordered later\n")  # patches/ changed: apply rebuilds
    return checkout


def test_apply_refuses_to_overwrite_it(recreated, capsys):
    assert recreated.cli("status") == 1
    assert recreated.cli("apply") == 1
    assert "ignored files at paths the upstream import tracks" in capsys.readouterr().err
    assert (recreated.tree / "config.local").read_text() == "mine\n"


def test_apply_force_keeps_it_in_the_backup(recreated, capsys):
    assert recreated.cli("apply", "--force") == 0
    (backup,) = recreated.user_git("for-each-ref", "--format=%(refname:short)", "refs/heads/backup/").split()
    assert recreated.user_git("show", f"{backup}:config.local") == "mine\n"
