"""The build tree's state against its build record: every branch and a detached HEAD, the index, nested
repositories, ignored files, a folder that lost its .git, empty and merge commits. Nothing is lost, and
`apply --force` always brings the tree back to the series after a backup."""

from __future__ import annotations

import subprocess

import pytest
from helpers import message, restore_commands

from verl_patches.model.upstream import Upstream


def exported_series(checkout, count: int = 2) -> None:
    assert checkout.cli("apply") == 0
    for n in range(count):
        checkout.commit_in_tree(f"verl/step{n}.py", f"STEP = {n}\n", message(f"[megatron] fix: step {n}"))
    assert checkout.cli("export") == 0


def backup_branches(checkout) -> list[str]:
    return checkout.user_git("branch", "--list", "--format=%(refname:short)", "backup/*").split()


def restore_last_backup(checkout, capsys) -> None:
    capsys.readouterr()
    assert checkout.cli("backups", backup_branches(checkout)[-1].split("/", 1)[1]) == 0
    subprocess.run(restore_commands(capsys.readouterr().out), shell=True, check=True, capture_output=True)


# -- 2: commits on a branch that HEAD has left, exactly at the recorded head ------------------------------------
@pytest.mark.attack
@pytest.mark.parametrize("leave", [["checkout", "-q", "--detach", "HEAD~1"], ["switch", "-q", "-c", "other", "HEAD~1"]])
def test_commits_on_the_series_branch_are_work_when_head_is_elsewhere(checkout, capsys, leave):
    exported_series(checkout)
    checkout.commit_in_tree("verl/late.py", "LATE = 1\n", message("[megatron] fix: late work"))
    assert checkout.cli("export") == 0
    checkout.commit_in_tree("verl/later.py", "LATER = 1\n", message("[megatron] fix: later work"))
    checkout.user_git(*leave)  # HEAD now sits exactly on the recorded head; the branch holds one more commit
    capsys.readouterr()
    assert checkout.cli("status") == 1
    out = capsys.readouterr().out
    assert "later work" in out and "git switch series" in out
    assert checkout.cli("apply") == 1
    assert "later work" in checkout.user_git("log", "-1", "--format=%s", "series")
    assert checkout.cli("apply", "--force") == 0
    assert any("later work" in checkout.user_git("log", "--format=%s", b) for b in backup_branches(checkout))
    assert checkout.cli("status") == 0


# -- 10: a detached HEAD behind the build, nothing edited -------------------------------------------------------
def test_a_detached_head_behind_the_build_is_not_work_and_export_refuses(checkout, capsys):
    exported_series(checkout)
    before = checkout.patches()
    checkout.user_git("checkout", "-q", "--detach", "HEAD~1")
    capsys.readouterr()
    assert checkout.cli("status") == 3
    out = capsys.readouterr().out
    assert "git switch series" in out and "`verl-patches export`" not in out
    assert checkout.cli("export") == 1
    assert "git switch series" in capsys.readouterr().err
    assert checkout.patches() == before
    assert checkout.cli("apply") == 0 and checkout.cli("status") == 0


# -- 3: an untracked nested repository --------------------------------------------------------------------------
@pytest.mark.attack
def test_a_nested_repository_is_kept_by_apply_force_and_restored(checkout, capsys):
    exported_series(checkout)
    nested = checkout.tree / "verl/vendor"
    nested.mkdir()
    git = ["git", "-C", str(nested)]
    subprocess.run([*git, "init", "-q"], check=True)
    (nested / "lib.py").write_text("VENDORED = 1\n")
    subprocess.run([*git, "add", "lib.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "vendored history"], check=True)
    (nested / "draft.py").write_text("DRAFT = 1\n")
    assert checkout.cli("apply") == 1
    assert nested.is_dir()
    assert checkout.cli("apply", "--force") == 0
    assert not nested.exists() and checkout.cli("status") == 0
    restore_last_backup(checkout, capsys)
    log = subprocess.run([*git, "log", "--format=%s"], capture_output=True, text=True, check=True).stdout
    assert log == "vendored history\n" and (nested / "draft.py").read_text() == "DRAFT = 1\n"


# -- 4: a build folder that is not a repository -----------------------------------------------------------------
@pytest.mark.attack
@pytest.mark.parametrize("command", [("apply",), ("apply", "--force"), ("status",), ("export",)])
def test_a_folder_without_its_git_folder_is_never_wiped(checkout, capsys, command):
    exported_series(checkout)
    subprocess.run(["rm", "-rf", str(checkout.tree / ".git")], check=True)
    (checkout.tree / "verl/mine.py").write_text("MINE = 1\n")
    capsys.readouterr()
    assert checkout.cli(*command) != 0
    captured = capsys.readouterr()
    assert "is not a git repository" in captured.out + captured.err and "Traceback" not in captured.err
    assert (checkout.tree / "verl/mine.py").read_text() == "MINE = 1\n"
    assert (checkout.tree / "verl/step0.py").exists() and not (checkout.tree / ".git").exists()


# -- 5: files that verl's .gitignore matches --------------------------------------------------------------------
IGNORED = {"verl/utils/lib/helper.py": "HELPER = 1\n", ".env": "TOKEN=x\n", "tmp/notes.txt": "notes\n"}


@pytest.mark.attack
@pytest.mark.parametrize("force", [False, True])
def test_ignored_files_survive_every_rebuild(checkout, force):
    assert checkout.cli("apply") == 0
    checkout.commit_in_tree(".gitignore", "lib/\n.env\ntmp/\n", message("[misc] chore: ignore local files"))
    assert checkout.cli("export") == 0
    for path, text in IGNORED.items():
        (checkout.tree / path).parent.mkdir(parents=True, exist_ok=True)
        (checkout.tree / path).write_text(text)
    assert checkout.user_git("status", "--porcelain") == ""  # all of them ignored
    with open(checkout.root / "patches/series", "a") as handle:
        handle.write("# a pulled note: apply rebuilds the tree\n")
    if force:
        checkout.commit_in_tree("verl/work.py", "W = 1\n", message("[megatron] fix: work"))
    assert checkout.cli("apply", *(["--force"] if force else [])) == 0
    assert {path: (checkout.tree / path).read_text() for path in IGNORED} == IGNORED
    assert checkout.cli("apply") == 0
    assert {path: (checkout.tree / path).read_text() for path in IGNORED} == IGNORED


# -- 6: content only in the index --------------------------------------------------------------------------------
@pytest.mark.attack
def test_staged_content_is_kept_apart_from_the_work_tree(checkout, capsys):
    exported_series(checkout)
    (checkout.tree / "verl/staged.py").write_text("STAGED = 1\n")
    checkout.user_git("add", "verl/staged.py")
    (checkout.tree / "verl/staged.py").write_text("STAGED = 2\n")
    (checkout.tree / "verl/step0.py").write_text("STEP = 'staged'\n")
    checkout.user_git("add", "verl/step0.py")
    (checkout.tree / "verl/step0.py").write_text("STEP = 'edited'\n")
    assert checkout.cli("apply", "--force") == 0
    restore_last_backup(checkout, capsys)
    assert checkout.user_git("show", ":verl/staged.py") == "STAGED = 1\n"
    assert checkout.user_git("show", ":verl/step0.py") == "STEP = 'staged'\n"
    assert (checkout.tree / "verl/staged.py").read_text() == "STAGED = 2\n"
    assert (checkout.tree / "verl/step0.py").read_text() == "STEP = 'edited'\n"


# -- 11: an empty commit, a merge commit -------------------------------------------------------------------------
def empty_commit(checkout) -> None:
    checkout.user_git("commit", "-q", "--allow-empty", "-m", "[misc] chore: nothing")


def merge_commit(checkout) -> None:
    checkout.user_git("switch", "-q", "-c", "side", "HEAD~1")
    checkout.commit_in_tree("verl/side.py", "SIDE = 1\n", message("[megatron] fix: side"))
    checkout.user_git("switch", "-q", "series")
    checkout.user_git("merge", "-q", "--no-edit", "--no-ff", "side")
    checkout.user_git("branch", "-q", "-D", "side")


@pytest.mark.attack
@pytest.mark.parametrize("make", [empty_commit, merge_commit], ids=["empty", "merge"])
def test_an_empty_or_merge_commit_gets_a_fix_and_force_gets_the_series_back(checkout, capsys, make):
    exported_series(checkout)
    before = checkout.patches()
    make(checkout)
    kind = "changes nothing" if make is empty_commit else "is a merge"
    for command in (("status",), ("apply",), ("export",), ("check", "--no-upstream-checks"), ("wheel",)):
        capsys.readouterr()
        assert checkout.cli(*command) != 0, command
        captured = capsys.readouterr()
        assert kind in captured.out + captured.err and "git rebase" in captured.out + captured.err, command
        assert "Traceback" not in captured.err
    assert checkout.patches() == before
    assert checkout.cli("apply", "--force") == 0
    assert checkout.cli("status") == 0
    assert backup_branches(checkout)


def test_a_change_of_how_the_tool_models_a_base_leaves_its_trees_up_to_date(checkout, capsys, monkeypatch):
    """The build record hashes the base's table as upstream.toml declares it, not the tool's model of it."""
    assert checkout.cli("apply") == 0
    monkeypatch.setattr(Upstream, "__repr__", lambda self: "a later version of the model")
    assert checkout.cli("status") == 0, capsys.readouterr()
