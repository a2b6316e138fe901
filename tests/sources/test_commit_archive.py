"""A base laid over a commit archive (the branch a release was cut from) rather than another base's tag archive:
`over = {repository, commit, tree}` in upstream.toml, imported, checked and carried on by `rebase --onto`."""

from __future__ import annotations

import re
import sys

import pytest
from helpers import make_archive, make_sdist, sha256, tree_id_of
from helpers.bases import REPO_ONLY, archive_table, git_in, make_queues, overlay_tree_id, tree_of

from verl_patches.errors import ConfigError
from verl_patches.model.bases import parse_bases

COMMIT = "1dda039b9c6311889a9c9a26040677e1254814f9"
MAIN_ONLY = {**REPO_ONLY, "examples/run.sh": "#!/bin/sh\necho run on main\n"}


def inline_table(version: str, sha: str, tree: str, over_tree: str) -> str:
    return (
        f'[base."{version}"]\nname = "verl"\nqueue = "patches/{version}"\nsource = "sdist-over-archive"\n'
        f'sha256 = "{sha}"\ntree = "{tree}"\n'
        f'over = {{ repository = "verl-project/verl", commit = "{COMMIT}", tree = "{over_tree}" }}\n'
    )


@pytest.fixture
def over_main(checkout, tmp_path, monkeypatch):
    """Base 1.1.0 only: its sdist over the archive of main at COMMIT, which only a mirror folder holds."""
    mirror = tmp_path / "mirror"
    archive = make_archive(mirror, COMMIT, {**MAIN_ONLY, "README.md": "# main\n"}, drop=("PKG-INFO",))
    assert archive.name == f"verl-{COMMIT}.tar.gz"  # GitHub's name for /archive/<commit>.tar.gz
    sdist = make_sdist(checkout.cache, "1.1.0", {"README.md": "# 1.1.0\n"})
    checkout.over_tree = tree_id_of(archive, tmp_path)
    checkout.overlay_tree = overlay_tree_id(archive, sdist, tmp_path)
    checkout.sdist_sha = sha256(sdist)
    (checkout.root / "upstream.toml").write_text(
        inline_table("1.1.0", checkout.sdist_sha, checkout.overlay_tree, checkout.over_tree)
    )
    make_queues(checkout.root, "1.1.0")
    monkeypatch.setenv("VERL_PATCHES_MIRROR", str(mirror))
    monkeypatch.delenv("VERL_PATCHES_BASE", raising=False)
    return checkout


def declared(over) -> dict:
    """upstream.toml's tables, parsed: base 1.1.0 laid over `over`."""
    table = {"name": "verl", "queue": "patches/1.1.0", "source": "sdist-over-archive", "sha256": "3" * 64}
    return {"base": {"1.1.0": {**table, "tree": "4" * 40, "over": over}}}


def test_an_inline_commit_archive_parses_with_its_own_names():
    (base,) = parse_bases(declared({"repository": "verl-project/verl", "commit": COMMIT, "tree": "5" * 40}))
    over = base.upstream.over
    assert (over.version, over.commit, over.tree, over.git_tag) == ("", COMMIT, "5" * 40, "")
    assert over.tag == f"upstream/{COMMIT[:12]}" and over.archive_name == f"commit archive {COMMIT[:12]}"
    assert over.archive_url == f"https://github.com/verl-project/verl/archive/{COMMIT}.tar.gz"
    assert over.archive_filename == f"verl-{COMMIT}.tar.gz"


@pytest.mark.parametrize(
    ("over", "error"),
    [
        ({"repository": "verl-project/verl", "commit": COMMIT}, "needs string keys tree"),
        ({"repository": "verl-project/verl", "commit": "main", "tree": "5" * 40}, "'main' is not a 40-hex-digit"),
        ({"repository": "verl-project/verl", "commit": COMMIT, "tree": "5" * 40, "tag": "v1"}, "unknown keys tag"),
        ("main", "or be a table {repository, commit, tree}"),
    ],
)
def test_a_bad_inline_archive_is_named(over, error):
    with pytest.raises(ConfigError, match=re.escape(error)):
        parse_bases(declared(over))


def test_apply_lays_the_sdist_over_the_commit_archive(over_main, capsys):
    assert over_main.cli("apply") == 0
    tree = tree_of(over_main, "1.1.0")
    assert git_in(tree, "rev-parse", "upstream/1.1.0^{tree}").strip() == over_main.overlay_tree
    parent = f"upstream/{COMMIT[:12]}"
    assert git_in(tree, "rev-parse", f"{parent}^{{tree}}").strip() == over_main.over_tree
    assert git_in(tree, "rev-parse", "upstream/1.1.0^").strip() == git_in(tree, "rev-parse", parent).strip()
    assert git_in(tree, "show", "upstream/1.1.0:README.md") == "# 1.1.0\n"  # the sdist's
    assert git_in(tree, "show", "upstream/1.1.0:examples/run.sh") == MAIN_ONLY["examples/run.sh"]  # main's
    assert (
        git_in(tree, "log", "-1", "--format=%s", parent).strip() == f"Import verl from its commit archive {COMMIT[:12]}"
    )


def test_a_commit_archive_that_is_not_the_pinned_one_is_refused(over_main, capsys):
    text = (over_main.root / "upstream.toml").read_text()
    (over_main.root / "upstream.toml").write_text(text.replace(over_main.over_tree, "6" * 40))
    capsys.readouterr()
    assert over_main.cli("apply") == 1
    err = capsys.readouterr().err
    assert "content mismatch" in err and "6" * 40 in err and over_main.over_tree in err
    assert "upstream/" not in git_in(tree_of(over_main, "1.1.0"), "tag", "--list")


def test_rebase_onto_a_newer_sdist_keeps_the_commit_archive_under_it(over_main, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("VERL_PATCHES_PYTHON", sys.executable)
    assert over_main.cli("apply") == 0
    new = make_sdist(tmp_path / "new", "1.2.0", {"README.md": "# 1.2.0\n"})
    (over_main.cache / new.name).write_bytes(new.read_bytes())
    capsys.readouterr()
    assert over_main.cli("rebase", "--onto", "1.2.0", "--sha256", sha256(new), "--write") == 0
    out = capsys.readouterr().out
    assert f"verl 1.2.0's sdist over the commit archive {COMMIT[:12]}" in out
    declared = (over_main.root / "upstream.toml").read_text()
    assert f'commit = "{COMMIT}", tree = "{over_main.over_tree}"' in declared.split('[base."1.2.0"]')[1]
    assert over_main.cli("apply", "--base", "1.2.0") == 0
    tree = tree_of(over_main, "1.2.0")
    assert git_in(tree, "show", "upstream/1.2.0:README.md") == "# 1.2.0\n"
    assert git_in(tree, "show", "upstream/1.2.0:examples/run.sh") == MAIN_ONLY["examples/run.sh"]


def test_rebase_onto_a_declared_base_lays_the_sdist_over_its_own_archive(checkout, tmp_path, monkeypatch, capsys):
    """1.0.0 is a tag archive; the declared 1.1.0 is its sdist over a commit archive (not over 1.0.0's archive)."""
    monkeypatch.setenv("VERL_PATCHES_PYTHON", sys.executable)
    mirror = tmp_path / "mirror"
    tag = make_archive(mirror, "1.0.0", {**REPO_ONLY, "README.md": "# 1.0.0\n"}, drop=("PKG-INFO",))
    commit = make_archive(mirror, COMMIT, {**MAIN_ONLY, "README.md": "# main\n"}, drop=("PKG-INFO",))
    sdist = make_sdist(checkout.cache, "1.1.0", {"README.md": "# 1.1.0\n"})
    overlay = overlay_tree_id(commit, sdist, tmp_path)
    declared = inline_table("1.1.0", sha256(sdist), overlay, tree_id_of(commit, tmp_path))
    (checkout.root / "upstream.toml").write_text(archive_table("1.0.0", tree_id_of(tag, tmp_path)) + declared)
    make_queues(checkout.root, "1.0.0", "1.1.0")
    monkeypatch.setenv("VERL_PATCHES_MIRROR", str(mirror))
    assert checkout.cli("apply", "--base", "1.0.0") == 0
    capsys.readouterr()
    assert checkout.cli("rebase", "--onto", "1.1.0", "--base", "1.0.0") == 0
    assert f"verl 1.1.0's sdist over the commit archive {COMMIT[:12]}" in capsys.readouterr().out
    tree = tree_of(checkout, "1.0.0")
    assert git_in(tree, "rev-parse", "rebase/1.1.0^{tree}").strip() == overlay  # the pin upstream.toml declares
    assert git_in(tree, "show", "rebase/1.1.0:examples/run.sh") == MAIN_ONLY["examples/run.sh"]
