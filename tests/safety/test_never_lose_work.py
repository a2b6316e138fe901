"""Never lose work: failed and interrupted applies, rebases in progress, stale trees, backups, the lock."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from helpers import ROOT, Checkout, message
from helpers.steps import _util, three_patches


# -- 1: a failed apply is not marked synced ----------------------------------------------------------------
def test_failed_apply_is_not_taken_for_a_clean_tree_and_export_refuses(checkout, capsys):
    names = three_patches(checkout)
    second = checkout.root / "patches" / names[1]
    edited = second.read_bytes().replace(b" STEP_1 = 1\n", b" STEP_1 = 100\n")  # a context line, edited by hand
    second.write_bytes(edited)
    third = (checkout.root / "patches" / names[2]).read_bytes()
    capsys.readouterr()
    assert checkout.cli("apply") == 1
    assert names[1] in capsys.readouterr().err
    assert checkout.cli("status") == 3
    out = capsys.readouterr().out
    assert f"stopped at {names[1]}" in out and "clean" not in out
    assert checkout.cli("export") == 1
    assert "does not hold the whole series" in capsys.readouterr().err
    assert second.read_bytes() == edited and (checkout.root / "patches" / names[2]).read_bytes() == third
    assert checkout.cli("check") == 1
    out = capsys.readouterr().out
    assert "stopped at" in out and "run `verl-patches export`" not in out


# -- 2: apply --force in the middle of git rebase -i ---------------------------------------------------------
def test_force_during_rebase_keeps_the_amended_commit_and_uncommitted_edits(checkout, capsys):
    three_patches(checkout)
    base = checkout.user_git("rev-parse", "upstream/1.0.0").strip()
    checkout.user_git("-c", "sequence.editor=sed -i -e '1s/^pick/edit/'", "rebase", "-q", "-i", base)
    (checkout.tree / "verl/models/util.py").write_text(_util(1) + "AMENDED = True\n")
    checkout.user_git("commit", "-q", "-a", "--amend", "--no-edit")
    amended = checkout.user_git("rev-parse", "HEAD").strip()
    (checkout.tree / "verl/models/notes.txt").write_text("uncommitted edit\n")
    (checkout.tree / "verl/__init__.py").write_text("changed = 1\n")
    capsys.readouterr()
    assert checkout.cli("apply", "--force") == 0
    err = capsys.readouterr().err  # the backup is named among the progress messages
    (branch,) = checkout.user_git("branch", "--list", "--format=%(refname:short)", "backup/*").split()
    assert branch in err or branch.split("/", 1)[1] in err
    assert checkout.user_git("rev-parse", f"{branch}^1").strip() == amended
    assert checkout.user_git("show", f"{branch}:verl/models/notes.txt") == "uncommitted edit\n"
    assert checkout.user_git("show", f"{branch}:verl/__init__.py") == "changed = 1\n"
    assert "AMENDED = True" in checkout.user_git("show", f"{branch}:verl/models/util.py")
    # The rebase's todo list is kept with the backup, and the branch before the rebase is a parent.
    folder = checkout.build / "backups" / branch.split("/", 1)[1]
    assert (folder / "git-state/rebase-merge/git-rebase-todo").exists()
    assert "step 3" in checkout.user_git("log", "--format=%s", f"{branch}^2")
    # The tree is rebuilt from patches/ and no operation is left in progress.
    assert not (checkout.tree / ".git/rebase-merge").exists()
    assert checkout.cli("status") == 0


# -- 4: patches/ changed since apply ---------------------------------------------------------------------------
def pull_an_edit(checkout, name: str) -> tuple[Path, bytes]:
    """Change a patch file's message as a `git pull` would; returns the file and its new bytes."""
    path = checkout.root / "patches" / name
    pulled = path.read_bytes().replace(b"Problem: build_mask returned", b"Problem: (pulled) build_mask returned")
    path.write_bytes(pulled)
    return path, pulled


def test_patches_changed_since_apply_is_stale_not_work_and_export_refuses(checkout, capsys):
    names = three_patches(checkout)
    path, pulled = pull_an_edit(checkout, names[0])
    capsys.readouterr()
    assert checkout.cli("status") == 3
    out = capsys.readouterr().out
    assert "changed since" in out and "holds work" not in out
    assert checkout.cli("export") == 1
    assert "patches/ changed since build/1.0.0/verl was built" in capsys.readouterr().err
    assert path.read_bytes() == pulled
    assert checkout.cli("check") == 1
    out = capsys.readouterr().out
    assert "changed since build/1.0.0/verl was built" in out and "run `verl-patches export`" not in out
    assert checkout.cli("wheel") == 1
    assert checkout.cli("apply") == 0
    assert "(pulled)" in checkout.user_git("log", "--format=%B")
    assert checkout.cli("status") == 0


def test_both_sides_changed_is_reported_and_neither_side_is_overwritten(checkout, capsys):
    names = three_patches(checkout)
    checkout.commit_in_tree("verl/new.py", "NEW = 1\n", message("[megatron] fix: tree work"))
    path, pulled = pull_an_edit(checkout, names[0])
    capsys.readouterr()
    assert checkout.cli("status") == 1
    out = capsys.readouterr().out
    assert "tree work" in out and "changed since" in out and "Both sides changed" in out
    assert checkout.cli("export") == 1
    assert checkout.cli("apply") == 1
    assert path.read_bytes() == pulled
    assert "tree work" in checkout.user_git("log", "-1", "--format=%s")
    # Explicitly: export --force keeps patches/ in a backup before overwriting it.
    assert checkout.cli("export", "--force") == 0
    kept = [p for p in (checkout.build / "backups").iterdir() if (p / "patches" / names[0]).exists()]
    assert any((p / "patches" / names[0]).read_bytes() == pulled for p in kept)


# -- 5: Ctrl-C during apply leaves rebase-apply and index.lock --------------------------------------------------
GIT_SHIM = """#!/bin/sh
# git, except that `git am -3 <patch named $INTERRUPT_ON>` is followed by the index and ORIG_HEAD locks a killed
# git leaves, and Ctrl-C to the caller.
case " $* " in
  *" am -3 "*"$INTERRUPT_ON"*)
    "$REAL_GIT" "$@"
    gitdir=$("$REAL_GIT" -C "$2" rev-parse --absolute-git-dir)
    : > "$gitdir/index.lock"
    : > "$gitdir/ORIG_HEAD.lock"
    kill -INT "$PPID"
    sleep 5
    exit 130 ;;
esac
exec "$REAL_GIT" "$@"
"""


def test_apply_recovers_from_an_interrupted_am_with_git_locks(checkout, tmp_path, capsys):
    names = three_patches(checkout)
    second = checkout.root / "patches" / names[1]
    original = second.read_bytes()
    second.write_bytes(original.replace(b" STEP_1 = 1\n", b" STEP_1 = 100\n"))  # git am stops on this one
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "git").write_text(GIT_SHIM)
    (shim / "git").chmod(0o755)
    env = {"PATH": f"{shim}:{os.environ['PATH']}", "REAL_GIT": shutil.which("git"), "INTERRUPT_ON": names[1]}
    # SIGINT as in a terminal, even when pytest runs where it is ignored (a background job of a script).
    proc = checkout.run("apply", env=env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.returncode == 130, proc.stderr
    assert "interrupted" in proc.stderr and "Traceback" not in proc.stderr
    assert (checkout.tree / ".git/index.lock").exists() and (checkout.tree / ".git/rebase-apply").exists()
    capsys.readouterr()
    assert checkout.cli("status") != 0
    second.write_bytes(original)
    assert checkout.cli("apply") == 0  # no manual step
    assert not (checkout.tree / ".git/index.lock").exists()
    assert not (checkout.tree / ".git/ORIG_HEAD.lock").exists()
    assert not (checkout.tree / ".git/rebase-apply").exists()
    assert checkout.cli("status") == 0
    assert "step 3" in checkout.user_git("log", "-1", "--format=%s")


# -- 7: backups in the same second -------------------------------------------------------------------------------
def test_two_backups_in_one_second_get_distinct_names(checkout, monkeypatch, capsys):
    three_patches(checkout)
    frozen = time.gmtime()
    monkeypatch.setattr(time, "gmtime", lambda *args: frozen)
    checkout.commit_in_tree("verl/a.py", "A = 1\n", message("[megatron] fix: first work"))
    assert checkout.cli("apply", "--force") == 0
    checkout.commit_in_tree("verl/b.py", "B = 1\n", message("[megatron] fix: second work"))
    assert checkout.cli("apply", "--force") == 0
    branches = checkout.user_git("branch", "--list", "--format=%(refname:short)", "backup/*").split()
    assert len(branches) == 2
    subjects = {checkout.user_git("log", "-1", "--format=%s", f"{b}^1").strip() for b in branches}
    assert subjects == {"[megatron] fix: first work", "[megatron] fix: second work"}
    bundles = sorted((checkout.build / "backups").glob("*/tree.bundle"))
    assert len(bundles) == 2
    capsys.readouterr()
    assert checkout.cli("backups") == 0
    out = capsys.readouterr().out
    assert all(b.split("/", 1)[1] in out for b in branches) and "git restore --source=" in out


def test_a_backup_restores_with_the_listed_commands(checkout, capsys):
    three_patches(checkout)
    checkout.commit_in_tree("verl/a.py", "A = 1\n", message("[megatron] fix: keep me"))
    (checkout.tree / "verl/untracked.txt").write_text("draft\n")
    assert checkout.cli("apply", "--force") == 0
    shutil.rmtree(checkout.tree)  # even the tree is gone: the bundle has it all
    assert checkout.cli("apply") == 0
    capsys.readouterr()
    assert checkout.cli("backups") == 0
    out = capsys.readouterr().out
    steps = [ln.strip().split("   #")[0] for ln in out.splitlines() if ln.startswith("    ") and "#" != ln.strip()[0]]
    subprocess.run(" && ".join(steps), shell=True, check=True, capture_output=True)
    assert checkout.user_git("log", "-1", "--format=%s").strip() == "[megatron] fix: keep me"
    assert (checkout.tree / "verl/untracked.txt").read_text() == "draft\n"
    assert checkout.cli("status") == 1  # the restored work is un-exported work again


# -- 6: .gitattributes -----------------------------------------------------------------------------------------
def test_a_clone_with_autocrlf_checks_the_patches_out_byte_exact(checkout, tmp_path, monkeypatch):
    three_patches(checkout)
    exported = checkout.patches()
    origin = tmp_path / "origin"
    shutil.copytree(checkout.root, origin, ignore=shutil.ignore_patterns("build"))
    if (ROOT / ".gitattributes").exists():
        shutil.copy(ROOT / ".gitattributes", origin / ".gitattributes")
    plain = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull}
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "s"]):
        subprocess.run(["git", "-C", str(origin), *args], check=True, env=plain)
    clone = tmp_path / "clone"
    subprocess.run(["git", "-c", "core.autocrlf=true", "clone", "-q", str(origin), str(clone)], check=True, env=plain)
    subprocess.run(["git", "-C", str(clone), "config", "core.autocrlf", "true"], check=True, env=plain)
    copy = Checkout(root=clone, cache=checkout.cache)
    assert copy.patches() == exported
    assert copy.cli("apply") == 0


def test_a_tree_that_already_exports_to_the_changed_patches_is_clean(checkout, capsys):
    three_patches(checkout)
    # A new commit id with the same patch (only the committer date differs), and a comment added to series.
    subprocess.run(
        ["git", "-C", str(checkout.tree), "commit", "-q", "--amend", "--no-edit"],
        env={**os.environ, "GIT_COMMITTER_DATE": "2001-01-01T00:00:00Z"},
        check=True,
    )
    with open(checkout.root / "patches/series", "a") as handle:
        handle.write("# a note from a pull\n")
    capsys.readouterr()
    assert checkout.cli("status") == 0
    assert "clean" in capsys.readouterr().out


def test_apply_force_leaves_a_git_lock_that_an_apply_did_not_leave(checkout, capsys):
    """A user's git may still hold index.lock in build/verl (an open commit editor): --force must not remove it."""
    three_patches(checkout)
    lock = checkout.tree / ".git" / "index.lock"
    lock.write_text("")
    capsys.readouterr()
    assert checkout.cli("apply", "--force") == 1
    assert lock.exists()
    assert "index.lock" in capsys.readouterr().err
