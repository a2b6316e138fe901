"""Tag-archive source: tree-id pin, offline mirror, no network, cache safety (no network used)."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest
from helpers import make_archive, pin_archive, tree_id_of

from verl_patches.errors import VerlPatchesError
from verl_patches.model.upstream import Upstream
from verl_patches.sources import sdist, source
from verl_patches.sources.source import archive_cache_path

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
    message = "[misc] feat: notes\n\nProblem: p.\n\nFix: f.\n\nTests: t.\n\nForwarded: no\nProve-Exempt: x\n"
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


def _tarball(path: Path, members: list[tarfile.TarInfo], data: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info in members:
            payload = data.get(info.name)
            if payload is not None:
                info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload) if payload is not None else None)
    return path


def test_unpack_refuses_members_written_through_a_symlink(tmp_path):
    """A chain of links inside the tree must not carry a later member outside dest."""
    links = []
    for name, target in (("top/x/b", ".."), ("top/x/b/c", "..")):
        info = tarfile.TarInfo(name)
        info.type, info.linkname = tarfile.SYMTYPE, target
        links.append(info)
    escaped = tarfile.TarInfo("top/x/b/c/escaped.txt")
    folder = tarfile.TarInfo("top/x")
    folder.type = tarfile.DIRTYPE
    archive = _tarball(tmp_path / "bad.tar.gz", [folder, *links, escaped], {escaped.name: b"x"})
    archive_members = {m.name for m in tarfile.open(archive).getmembers()}
    assert "top/x/b/c/escaped.txt" in archive_members
    dest = tmp_path / "out" / "dest"
    dest.mkdir(parents=True)
    with pytest.raises(VerlPatchesError, match="lies below a symlink"):
        sdist.unpack(archive, dest)
    assert not list(tmp_path.rglob("escaped.txt"))


def test_a_cut_short_archive_is_named_not_a_traceback(tmp_path):
    good = _tarball(tmp_path / "good.tar.gz", [tarfile.TarInfo("top/a.txt")], {"top/a.txt": b"y" * 200_000})
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(good.read_bytes()[:100])
    with pytest.raises(VerlPatchesError, match=r"cut\.tar\.gz is not a readable \.tar\.gz.*delete it"):
        sdist.unpack(cut, tmp_path / "dest")


def test_a_download_shorter_than_its_content_length_is_refused():
    handle = io.BytesIO()
    with pytest.raises(VerlPatchesError, match="stopped after 3 of 10 bytes"):
        source._copy_with_progress(io.BytesIO(b"abc"), handle, 10, "verl-1.0.0.tar.gz")
