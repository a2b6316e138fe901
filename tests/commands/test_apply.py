"""apply (and the status it leaves) on a synthetic upstream: the pinned sdist imported as a tagged commit, commit ids
the same in every checkout, a hash mismatch, a dirty tree or unexported work refused, --force's backup, a patch
that does not apply, a missing patch file, a series that lists one twice, a bad upstream.toml."""

from __future__ import annotations

import subprocess

import pytest
from helpers import GOOD_MESSAGE, make_sdist, message, series_names, sha256


def add_fix(checkout, name="build_mask", message=GOOD_MESSAGE):
    checkout.commit_in_tree(
        "verl/models/util.py",
        f"def {name}(lengths, width):\n    return [[i < n for i in range(width)] for n in lengths]\n\n\nX = 1\n",
        message,
    )


def head(checkout) -> str:
    return checkout.user_git("rev-parse", "HEAD").strip()


def test_apply_imports_pinned_sdist_as_tagged_commit(checkout, capsys):
    assert checkout.cli("apply") == 0
    log = checkout.user_git("log", "--format=%an|%s|%b", "upstream/1.0.0")
    assert "Import verl 1.0.0 from its PyPI sdist" in log
    assert f"Upstream-Sdist-Sha256: {sha256(checkout.cache / 'verl-1.0.0.tar.gz')}" in log
    assert log.startswith("verl-patches|")
    assert (checkout.tree / "verl/models/util.py").exists()
    assert "applied 0 patch(es)" in capsys.readouterr().out


def test_commit_ids_are_identical_across_checkouts(checkout, tmp_path, monkeypatch):
    assert checkout.cli("apply") == 0
    add_fix(checkout)
    assert checkout.cli("export") == 0
    first = head(checkout)
    # A second checkout elsewhere, with another global git config, gives the same commit ids.
    other = tmp_path / "other"
    subprocess.run(["cp", "-r", str(checkout.root), str(other)], check=True)
    subprocess.run(["rm", "-rf", str(other / "build")], check=True)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    from helpers import Checkout

    second = Checkout(root=other, cache=checkout.cache)
    assert second.cli("apply") == 0
    assert checkout.cli("apply") == 0
    assert head(second) == head(checkout)
    # Both rebuilt trees hold the same patch commit as the hand-made one, re-created deterministically.
    assert checkout.user_git("rev-parse", "HEAD^{tree}") == checkout.user_git("rev-parse", f"{first}^{{tree}}")


def test_gitattributes_in_sdist_cannot_convert_line_endings(checkout):
    assert checkout.cli("apply") == 0
    assert (checkout.tree / ".gitattributes").read_text() == "* text=auto\n"
    blob = subprocess.run(
        ["git", "-C", str(checkout.tree), "cat-file", "-p", "HEAD:verl/windows.txt"], capture_output=True, check=True
    ).stdout
    assert blob == b"line one\r\nline two\r\n"
    assert checkout.user_git("status", "--porcelain") == ""


def test_hash_mismatch_is_an_error_and_keeps_the_file(checkout, capsys):
    sdist = checkout.cache / "verl-1.0.0.tar.gz"
    make_sdist(checkout.cache, "1.0.0", {"verl/extra.py": "tampered = True\n"})
    before = sdist.read_bytes()
    assert checkout.cli("apply") == 1
    err = capsys.readouterr().err
    assert "sha256 mismatch" in err
    assert sha256(sdist) in err  # the actual hash
    assert (checkout.root / "upstream.toml").read_text().split('sha256 = "')[1][:64] in err  # the pinned one
    assert sdist.read_bytes() == before  # not overwritten, not deleted
    assert not checkout.tree.exists()  # nothing unpacked


def test_dirty_tree_blocks_apply_and_status_reports_it(checkout, capsys):
    assert checkout.cli("apply") == 0
    (checkout.tree / "verl/models/util.py").write_text("edited = True\n")
    capsys.readouterr()
    assert checkout.cli("status") == 1
    assert "verl/models/util.py" in capsys.readouterr().out
    assert checkout.cli("apply") == 1
    err = capsys.readouterr().err
    assert "refusing to rebuild" in err and "verl-patches export" in err and "--force" in err
    assert (checkout.tree / "verl/models/util.py").read_text() == "edited = True\n"  # untouched


def test_unexported_commit_blocks_apply_then_export_clears_it(checkout, capsys):
    assert checkout.cli("apply") == 0
    add_fix(checkout)
    assert checkout.cli("status") == 1
    assert "build boolean masks" in capsys.readouterr().out
    assert checkout.cli("apply") == 1
    assert checkout.cli("export") == 0
    assert checkout.cli("status") == 0
    assert checkout.cli("apply") == 0


def test_force_keeps_a_backup_of_the_work(checkout, capsys):
    assert checkout.cli("apply") == 0
    add_fix(checkout)
    (checkout.tree / "verl/new_file.py").write_text("untracked = 1\n")
    assert checkout.cli("apply", "--force") == 0
    out = capsys.readouterr().out
    assert "backup" in out
    branches = checkout.user_git("branch", "--list", "backup/*").split()
    assert branches, "a backup branch exists"
    files = checkout.user_git("show", "--name-only", "--format=", branches[-1])
    assert "verl/new_file.py" in files
    assert "build boolean masks" in checkout.user_git("log", "--format=%s", branches[-1])
    assert list((checkout.build / "backups").glob("*/tree.bundle"))
    assert not (checkout.tree / "verl/new_file.py").exists()


def test_patch_that_does_not_apply_names_patch_and_file_and_leaves_no_am(checkout, capsys):
    assert checkout.cli("apply") == 0
    add_fix(checkout)
    assert checkout.cli("export") == 0
    # Corrupt the context of the patch so that neither a clean nor a 3-way apply works.
    (name,) = [n for n in checkout.patches() if n.endswith(".patch")]
    path = checkout.root / "patches" / name
    original = path.read_bytes()
    data = original.replace(b" def build_mask", b" def something_else").replace(b"index ", b"index-broken ")
    path.write_bytes(data)
    capsys.readouterr()
    assert checkout.cli("apply") == 1
    err = capsys.readouterr().err
    assert name in err and "verl/models/util.py" in err
    assert not (checkout.tree / ".git/rebase-apply").exists()
    assert checkout.user_git("status", "--porcelain") == ""
    # The failed apply left only what came from patches/ (so a corrected series applies at once, without
    # --force), but the tree is not the series: status says so.
    assert checkout.cli("status") == 3
    path.write_bytes(original)
    assert checkout.cli("apply") == 0


def test_missing_patch_file_is_named(checkout, capsys):
    (checkout.root / "patches/series").write_text("absent.patch\n")
    assert checkout.cli("apply") == 1
    assert "absent.patch" in capsys.readouterr().err


@pytest.mark.parametrize("broken", ['[upstream]\nname = "verl"\n', "not toml ==="])
def test_bad_upstream_toml_is_reported(checkout, capsys, broken):
    (checkout.root / "upstream.toml").write_text(broken)
    assert checkout.cli("apply") == 1
    assert "upstream.toml" in capsys.readouterr().err


def test_duplicate_series_entry_is_named(checkout, capsys):
    assert checkout.cli("apply") == 0
    checkout.commit_in_tree("verl/a.py", "A = 1\n", message("[megatron] fix: a"))
    assert checkout.cli("export") == 0
    (name,) = series_names(checkout)
    with open(checkout.root / "patches/series", "a") as handle:
        handle.write(f"{name}\n")
    capsys.readouterr()
    assert checkout.cli("apply") == 1
    err = capsys.readouterr().err
    assert f"patches/series lists {name} more than once" in err and "CONFLICT" not in err
