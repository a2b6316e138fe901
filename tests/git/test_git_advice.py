"""Hostile archives and damaged build-tree states: each is an error that names what is wrong and what to do
(never git's bare exit-128 text, never a traceback), and doing what it says makes the command work again. A damaged
.git in build/verl is never taken for the repository of the checkout around it."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from helpers import make_archive, make_sdist, message, pin_archive, sha256


# -- archives whose member names git refuses, or skips without a word ------------------------------------------
@pytest.mark.attack
@pytest.mark.parametrize(
    ("files", "member"),
    [
        ({".git/config": "[core]\n"}, ".git/config"),  # git would leave it out silently
        ({".git": "gitdir: /elsewhere\n"}, ".git"),
        ({"verl/vendor/.git/HEAD": "ref: refs/heads/main\n"}, "verl/vendor/.git/HEAD"),  # a repository in a folder
        ({"verl/.GIT/x": "x\n"}, "verl/.GIT/x"),  # git: "invalid path"
        ({"verl/.git./x": "x\n"}, "verl/.git./x"),
        ({"verl/git~1/x": "x\n"}, "verl/git~1/x"),
    ],
    ids=["dot-git-folder", "dot-git-file", "nested-repository", "upper-case", "trailing-dot", "short-name"],
)
def test_a_sdist_with_git_names_is_refused_by_member(checkout, capsys, files, member):
    checkout.pin("1.0.0", sha256(make_sdist(checkout.cache, "1.0.0", files)))
    assert checkout.cli("apply") == 1
    err = capsys.readouterr().err
    assert f"member 'verl-1.0.0/{member}' is a .git path" in err and "delete it" in err, err
    assert "exit code" not in err and "Traceback" not in err
    assert (checkout.cache / "verl-1.0.0.tar.gz").is_file()  # left in the cache as it is


@pytest.mark.attack
def test_a_path_git_refuses_names_the_path_and_the_archive_to_delete(checkout, tmp_path, monkeypatch, capsys):
    mirror = tmp_path / "mirror"
    make_archive(mirror, "1.0.0", symlinks={".gitmodules": "verl/__init__.py"})  # git refuses a symlinked .gitmodules
    pin_archive(checkout.root, "1.0.0", "0" * 40)
    monkeypatch.setenv("VERL_PATCHES_MIRROR", str(mirror))
    assert checkout.cli("apply") == 1
    err = capsys.readouterr().err
    assert "git cannot store the path '.gitmodules'" in err and "Delete the file from the download cache" in err, err


# -- build-tree states a crash or a hand leaves ----------------------------------------------------------------
def lock_left(checkout, name: str):
    (checkout.tree / ".git" / name).write_text("")


def index_damaged(checkout):
    (checkout.tree / ".git/index").write_bytes(b"DIRC" + b"\x00\x00\x00\x63" + b"garbage" * 4)


def gitfile(text: str):
    def write(checkout):
        shutil.rmtree(checkout.tree / ".git")
        (checkout.tree / ".git").write_text(text)

    return write


def head_damaged(checkout):
    (checkout.tree / ".git/HEAD").write_text("garbage\n")


def empty_git_folder(checkout):
    shutil.rmtree(checkout.tree / ".git")
    (checkout.tree / ".git").mkdir()


STATES = {
    "index-lock": (lambda c: lock_left(c, "index.lock"), ["apply", "--force"], "remove it (`rm "),
    "head-lock": (lambda c: lock_left(c, "HEAD.lock"), ["apply", "--force"], "remove it (`rm "),
    "index-damaged-status": (index_damaged, ["status"], "is damaged"),
    "index-damaged-export": (index_damaged, ["export"], "is damaged"),
    "index-damaged-apply": (index_damaged, ["apply", "--force"], "is damaged"),
    "gitfile-to-nowhere": (gitfile("gitdir: /nowhere/at/all\n"), ["status"], "is a file that names no git folder"),
    "gitfile-garbage": (gitfile("not a gitfile\n"), ["apply"], "is a file that names no git folder"),
    "head-damaged": (head_damaged, ["status"], "does not take for a repository"),
    "empty-git-folder": (empty_git_folder, ["apply", "--force"], "does not take for a repository"),
    "empty-git-folder-export": (empty_git_folder, ["export"], "does not take for a repository"),
}


def project_git(checkout, *args: str) -> str:
    return subprocess.run(["git", "-C", str(checkout.root), *args], check=True, capture_output=True, text=True).stdout


@pytest.mark.attack
@pytest.mark.parametrize("state", STATES)
def test_a_damaged_build_tree_says_what_to_do_and_the_advice_works(checkout, capsys, state):
    damage, command, expected = STATES[state]
    assert checkout.cli("apply") == 0
    checkout.commit_in_tree("verl/a.py", "A = 1\n", message("[megatron] fix: first"))
    assert checkout.cli("export") == 0
    project_git(checkout, "init", "-q")  # the checkout is a git repository, as a clone is
    (checkout.root / ".gitignore").write_text("build/\n")
    project_git(checkout, "add", "-A")
    project_git(checkout, "commit", "-qm", "the checkout")
    (checkout.root / "notes.txt").write_text("the user's own uncommitted file\n")
    damage(checkout)
    capsys.readouterr()
    assert checkout.cli(*command) == 1
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err, err
    # Never the checkout's own repository: its branch, files and index are as they were.
    assert project_git(checkout, "status", "--porcelain") == "?? notes.txt\n"
    assert project_git(checkout, "branch", "--show-current").strip() in ("master", "main")
    # The first command the advice names puts things right.
    todo = re.search(r"`((?:rm|mv) [^`]+)`", err)
    assert todo, err
    subprocess.run(todo.group(1), shell=True, check=True, capture_output=True)
    assert checkout.cli("apply") == 0 and checkout.cli("status") == 0


def test_git_messages_without_a_known_condition_get_no_advice(tmp_path):
    from verl_patches.git.repo import advice  # here: the module without it still runs the tests above

    assert advice("fatal: ambiguous argument 'nope'", tmp_path) == ""
    assert "git clone" in advice("fatal: not a git repository", tmp_path, own=False)
