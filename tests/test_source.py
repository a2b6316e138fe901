"""Tag-archive source: tree-id pin, offline mirror, no network, cache safety (no network used)."""

from __future__ import annotations

import os
import subprocess

import pytest
from conftest import make_archive, pin_archive, tree_id_of

from verl_patches.model.upstream import Upstream
from verl_patches.source import archive_cache_path

UNREACHABLE = "http://127.0.0.1:9/verl.tar.gz"


@pytest.fixture
def no_github(monkeypatch):
    monkeypatch.setattr(Upstream, "archive_url", property(lambda self: UNREACHABLE))


def cached(checkout):
    return checkout.cache / "archives" / "verl-project-verl" / "verl-1.0.0.tar.gz"


def tree_of(checkout, ref: str = "upstream/1.0.0") -> str:
    return checkout.user_git("rev-parse", f"{ref}^{{tree}}").strip()


def test_archive_from_a_mirror_folder_imports_every_file_and_keeps_symlinks(archive_checkout, no_github, capsys):
    assert archive_checkout.cli("apply") == 0
    tree = archive_checkout.tree
    assert os.readlink(tree / "CLAUDE.md") == "verl/__init__.py"
    assert archive_checkout.user_git("ls-files", "-s", "CLAUDE.md").startswith("120000 ")
    assert (tree / ".gitattributes").read_text() == "* text=auto\n"  # imported as it is
    assert "from its tag archive v1.0.0" in archive_checkout.user_git("log", "-1", "--format=%s", "upstream/1.0.0")
    assert cached(archive_checkout).is_file()
    assert "verl-1.0.0.tar.gz:" in capsys.readouterr().err  # the progress line


def test_archive_from_a_mirror_url_prefix_option(archive_checkout, no_github, monkeypatch, tmp_path):
    monkeypatch.delenv("VERL_PATCHES_MIRROR")
    assert archive_checkout.cli("apply", "--mirror", (tmp_path / "mirror").as_uri() + "/") == 0
    assert cached(archive_checkout).is_file()


def test_the_pin_is_the_tree_id(archive_checkout, no_github, tmp_path):
    archive = tmp_path / "mirror" / "verl-1.0.0.tar.gz"
    assert archive_checkout.cli("apply") == 0
    assert tree_of(archive_checkout) == tree_id_of(archive, tmp_path)


def test_a_recompressed_archive_still_verifies(archive_checkout, no_github, tmp_path):
    original = tmp_path / "mirror" / "verl-1.0.0.tar.gz"
    again = make_archive(tmp_path / "other", "1.0.0", symlinks={"CLAUDE.md": "verl/__init__.py"}, compresslevel=1)
    assert again.read_bytes() != original.read_bytes()
    again.replace(original)
    assert archive_checkout.cli("apply") == 0


@pytest.mark.parametrize(
    "change",
    [{"files": {"verl/models/util.py": "changed = True\n"}}, {"drop": ("verl/models/util.py",)}],
    ids=["changed-file", "missing-file"],
)
def test_other_content_is_refused_and_the_cached_file_kept(archive_checkout, no_github, tmp_path, capsys, change):
    bad = make_archive(tmp_path / "bad", "1.0.0", symlinks={"CLAUDE.md": "verl/__init__.py"}, **change)
    cache = cached(archive_checkout)
    cache.parent.mkdir(parents=True)
    cache.write_bytes(bad.read_bytes())
    assert archive_checkout.cli("apply") == 1
    err = capsys.readouterr().err
    assert f"content mismatch for {cache}" in err
    assert tree_id_of(bad, tmp_path) in err and "expected (upstream.toml)" in err
    assert "delete it and run again" in err
    assert cache.read_bytes() == bad.read_bytes()  # never overwritten
    assert not (archive_checkout.tree / "verl").exists()  # nothing imported


def test_a_wrong_tree_leaves_an_existing_build_tree_alone(archive_checkout, no_github, tmp_path, capsys):
    assert archive_checkout.cli("apply") == 0
    head = archive_checkout.user_git("rev-parse", "HEAD")
    pin_archive(archive_checkout.root, "1.0.0", "0" * 40)
    assert archive_checkout.cli("apply") == 1
    assert "content mismatch" in capsys.readouterr().err
    assert archive_checkout.user_git("rev-parse", "HEAD") == head
    assert archive_checkout.user_git("status", "--porcelain") == ""


def test_no_network_and_no_mirror_names_both_ways(archive_checkout, no_github, monkeypatch, capsys):
    monkeypatch.delenv("VERL_PATCHES_MIRROR")
    assert archive_checkout.cli("apply") == 1
    err = capsys.readouterr().err
    assert UNREACHABLE in err
    assert "reach github.com" in err and "--mirror" in err and "VERL_PATCHES_MIRROR" in err
    assert not cached(archive_checkout).exists()


def test_a_mirror_without_the_file_falls_back_and_reports_both(archive_checkout, no_github, tmp_path, capsys):
    assert archive_checkout.cli("apply", "--mirror", str(tmp_path / "empty")) == 1
    err = capsys.readouterr().err
    assert str(tmp_path / "empty") in err and UNREACHABLE in err


def test_a_folder_in_place_of_the_cached_file_is_an_error(archive_checkout, no_github, capsys):
    cached(archive_checkout).mkdir(parents=True)
    assert archive_checkout.cli("apply") == 1
    assert "is not a file: remove it" in capsys.readouterr().err


def test_a_folder_in_place_of_the_cached_sdist_is_an_error(checkout, capsys):
    sdist = checkout.cache / "verl-1.0.0.tar.gz"
    sdist.unlink()
    sdist.mkdir()
    assert checkout.cli("apply") == 1
    assert f"the cached download {sdist} is not a file" in capsys.readouterr().err


def test_cache_path_helper_keeps_archives_apart_from_sdists(tmp_path):
    upstream = Upstream(name="verl", version="1.0.0", source="git-archive", repository="a/verl", git_tag="v1.0.0")
    assert archive_cache_path(upstream, tmp_path) == tmp_path / "archives" / "a-verl" / "verl-1.0.0.tar.gz"


def test_symlinks_escaping_the_tree_are_refused(archive_checkout, no_github, tmp_path, capsys):
    evil = make_archive(tmp_path / "evil", "1.0.0", symlinks={"docs/x": "../../outside"})
    cache = cached(archive_checkout)
    cache.parent.mkdir(parents=True)
    cache.write_bytes(evil.read_bytes())
    assert archive_checkout.cli("apply") == 1
    assert "points outside the tree" in capsys.readouterr().err


def test_commit_ids_do_not_depend_on_the_machine(archive_checkout, no_github, tmp_path):
    assert archive_checkout.cli("apply") == 0
    first = archive_checkout.user_git("rev-parse", "upstream/1.0.0")
    subprocess.run(["rm", "-rf", str(archive_checkout.tree)], check=True)
    os.umask(0o077)
    try:
        assert archive_checkout.cli("apply") == 0
    finally:
        os.umask(0o022)
    assert archive_checkout.user_git("rev-parse", "upstream/1.0.0") == first


def test_range_diff_across_a_change_of_source_kind(checkout, tmp_path, monkeypatch, capsys):
    """A ref pinned to the sdist against a working copy pinned to the tag archive of the same release."""
    message = "[misc] feat: notes\n\nProblem: p.\n\nFix: f.\n\nTests: t.\n\nUpstream-Status: Pending\nProve-Exempt: x\n"
    assert checkout.cli("apply") == 0
    checkout.commit_in_tree("verl/notes.py", "NOTE = 1\n", message)
    assert checkout.cli("export") == 0
    project = ["git", "-C", str(checkout.root)]
    subprocess.run([*project, "init", "-q"], check=True)
    subprocess.run([*project, "add", "-A"], check=True)
    subprocess.run([*project, "commit", "-qm", "on the sdist"], check=True)
    mirror = tmp_path / "mirror"
    pin_archive(checkout.root, "1.0.0", tree_id_of(make_archive(mirror, "1.0.0"), tmp_path))
    monkeypatch.setenv("VERL_PATCHES_MIRROR", str(mirror))
    subprocess.run(["rm", "-rf", str(checkout.tree)], check=True)  # no objects of the sdist import left
    assert checkout.cli("apply") == 0
    capsys.readouterr()
    assert checkout.cli("range-diff", "HEAD") == 0, capsys.readouterr().err
    assert "1:" in capsys.readouterr().out
