"""Conditions a person can cause get an error that says what to do, never a traceback: read-only folders, a
full disk during a backup, an interrupted export, a bad lock timeout or tag; restore commands survive a path
with a space."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess

import pytest
from helpers import Checkout, message, pin_archive, restore_commands

from verl_patches.queue import backups, lock, record, sync

AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
needs_permissions = pytest.mark.skipif(AS_ROOT, reason="root writes through file permissions")


def with_work(checkout: Checkout) -> None:
    assert checkout.cli("apply") == 0
    checkout.commit_in_tree("verl/a.py", "A = 1\n", message("[megatron] fix: exported"))
    assert checkout.cli("export") == 0
    checkout.commit_in_tree("verl/b.py", "B = 1\n", message("[megatron] fix: not exported yet"))


def chmod_tree(folder, writable: bool) -> None:
    subprocess.run(["chmod", "-R", "u+w" if writable else "a-w", str(folder)], check=True)


# -- read-only build/ and .git ------------------------------------------------------------------------------------
@needs_permissions
@pytest.mark.attack
@pytest.mark.parametrize("folder", ["build", "build/1.0.0/verl/.git"])
def test_read_only_folders_give_an_error_that_says_what_to_do(checkout, folder):
    with_work(checkout)
    chmod_tree(checkout.root / folder, writable=False)
    try:
        status = checkout.run("status")
        apply = checkout.run("apply", "--force")
    finally:
        chmod_tree(checkout.root / folder, writable=True)
    assert status.returncode == 1 and "not exported yet" in status.stdout, status.stderr
    assert apply.returncode == 1 and "Traceback" not in apply.stderr, apply.stderr
    assert "writable" in apply.stderr
    assert "not exported yet" in checkout.user_git("log", "-1", "--format=%s")


@pytest.mark.attack
@pytest.mark.parametrize("where", ["lock", "record"])
def test_a_refused_write_is_an_error_that_says_what_to_do(checkout, capsys, monkeypatch, where):
    """The same conditions injected where they strike first (root writes through permissions)."""
    with_work(checkout)
    refused = PermissionError(errno.EACCES, "Permission denied", str(checkout.root / "build"))
    if where == "lock":
        real_open = os.open
        fake = lambda path, flags, *a, **k: (  # noqa: E731
            (_ for _ in ()).throw(refused) if str(path).endswith(lock.LOCK_FILE) and flags & os.O_CREAT
            else real_open(path, flags, *a, **k)
        )  # fmt: skip
        monkeypatch.setattr(os, "open", fake)
        assert checkout.cli("status") == 1
        assert "not exported yet" in capsys.readouterr().out
    monkeypatch.setattr(record, "write", lambda *a, **k: (_ for _ in ()).throw(refused))
    assert checkout.cli("apply", "--force") == 1
    err = capsys.readouterr().err
    assert "Permission denied" in err and "writable" in err


# -- a full disk during a backup ----------------------------------------------------------------------------------
@pytest.mark.attack
@pytest.mark.parametrize("command", [("export", "--force"), ("apply", "--force")])
def test_a_full_disk_during_a_backup_discards_nothing(checkout, capsys, monkeypatch, command):
    with_work(checkout)
    (checkout.root / "patches/series").write_text((checkout.root / "patches/series").read_text() + "# pulled\n")
    before, head = checkout.patches(), checkout.user_git("rev-parse", "HEAD")
    kept = sorted((checkout.build / "backups").iterdir())
    full = OSError(errno.ENOSPC, "No space left on device", str(checkout.build / "backups"))
    monkeypatch.setattr(backups, "_finish", lambda *a: (_ for _ in ()).throw(full))
    capsys.readouterr()
    assert checkout.cli(*command) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and "Free some space" in err and "Traceback" not in err
    assert checkout.patches() == before and checkout.user_git("rev-parse", "HEAD") == head
    assert sorted((checkout.build / "backups").iterdir()) == kept  # the unfinished one is gone
    assert checkout.user_git("branch", "--list", "backup/*") == ""


# -- a pin mismatch is not an interrupted apply ---------------------------------------------------------------
@pytest.mark.attack
def test_status_after_a_tree_id_mismatch_does_not_report_an_interrupted_apply(archive_checkout, capsys):
    assert archive_checkout.cli("apply") == 0
    pin_archive(archive_checkout.root, "1.0.0", "0" * 40)
    assert archive_checkout.cli("apply") == 1
    assert "content mismatch" in capsys.readouterr().err
    assert archive_checkout.cli("status") == 3
    out = capsys.readouterr().out
    assert "interrupted" not in out and "upstream.toml changed" in out


# -- an interrupted export -------------------------------------------------------------------------------------
@pytest.mark.attack
def test_an_interrupted_export_advises_export_again(checkout, capsys, monkeypatch):
    with_work(checkout)
    monkeypatch.setattr(sync, "_write_atomic", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    capsys.readouterr()
    assert checkout.cli("export") == 130
    err = capsys.readouterr().err
    assert "`verl-patches export` again" in err and "verl-patches apply" not in err
    monkeypatch.undo()
    assert checkout.cli("apply") == 1  # the advice a person could have taken instead is refused
    assert checkout.cli("export") == 0 and checkout.cli("status") == 0


# -- restore commands in a path with a space --------------------------------------------------------------------
@pytest.mark.attack
def test_restore_commands_work_in_a_path_with_a_space(checkout, tmp_path, capsys):
    root = tmp_path / "with space" / "the project"
    shutil.copytree(checkout.root, root)
    spaced = Checkout(root=root, cache=checkout.cache)
    with_work(spaced)
    (spaced.tree / "verl/a draft.txt").write_text("draft\n")
    assert spaced.cli("apply", "--force") == 0
    capsys.readouterr()
    assert spaced.cli("backups") == 0
    subprocess.run(restore_commands(capsys.readouterr().out), shell=True, check=True, capture_output=True)
    assert "not exported yet" in spaced.user_git("log", "-1", "--format=%s")
    assert (spaced.tree / "verl/a draft.txt").read_text() == "draft\n"


# -- the lock timeout and the tag --------------------------------------------------------------------------------
@pytest.mark.attack
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "ten"])
def test_a_lock_timeout_that_is_not_a_number_of_seconds_is_refused(checkout, value):
    with lock.held(checkout.root / "build", "apply --test-holder"):
        proc = checkout.run("status", env={lock.TIMEOUT_ENV: value}, timeout=30)
    assert proc.returncode == 1 and lock.TIMEOUT_ENV in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.attack
@pytest.mark.parametrize("tag", ["v../../../../../outside/x", "v1.0.0/../../../outside", "/outside"])
def test_a_tag_that_is_not_a_plain_name_is_refused_before_it_names_a_file(archive_checkout, tmp_path, capsys, tag):
    text = (archive_checkout.root / "upstream.toml").read_text()
    (archive_checkout.root / "upstream.toml").write_text(text.replace('tag = "v1.0.0"', f'tag = "{tag}"'))
    assert archive_checkout.cli("apply") == 1
    assert "not a plain tag name" in capsys.readouterr().err
    assert not (tmp_path / "outside").exists() and not list(archive_checkout.cache.rglob("*.."))
