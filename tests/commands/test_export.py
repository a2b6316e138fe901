"""export on a synthetic upstream: byte-stable patches under a hostile git config and with sha256 repositories,
file names from subjects that survive a reordering (clashing ones too), the comments of series kept, a dirty tree
refused."""

from __future__ import annotations

import os
import stat
import subprocess

import pytest
from helpers import GOOD_MESSAGE, message, series_names

from verl_patches.model.patch import END_MARKER


def add_fix(checkout, name="build_mask", message=GOOD_MESSAGE):
    checkout.commit_in_tree(
        "verl/models/util.py",
        f"def {name}(lengths, width):\n    return [[i < n for i in range(width)] for n in lengths]\n\n\nX = 1\n",
        message,
    )


def test_export_round_trip_is_byte_stable_under_hostile_config(checkout):
    assert checkout.cli("apply") == 0
    add_fix(checkout)
    checkout.commit_in_tree("verl/windows.txt", b"line one\r\nline 2\r\n", GOOD_MESSAGE.replace("build_mask", "crlf"))
    assert checkout.cli("export") == 0
    exported = checkout.patches()
    text = b"".join(exported.values())
    assert b"diff --git a/verl/models/util.py b/verl/models/util.py" in text  # no noprefix leak
    assert b"hostile signature" not in text
    assert all(data.endswith(END_MARKER) for name, data in exported.items() if name.endswith(".patch"))
    assert b"From 0000000000000000000000000000000000000000" in text
    assert b"line 2\r\n" in text  # CRLF kept as bytes
    assert b"[PATCH" not in text
    # Rebuild from patches/ and export again: nothing changes.
    assert checkout.cli("apply") == 0
    assert checkout.cli("export") == 0
    assert checkout.patches() == exported
    assert (checkout.tree / "verl/windows.txt").read_bytes() == b"line one\r\nline 2\r\n"


def test_file_names_come_from_subjects_and_survive_reordering(checkout):
    assert checkout.cli("apply") == 0
    add_fix(checkout, "first", GOOD_MESSAGE.replace("build boolean masks in build_mask", "first change"))
    checkout.commit_in_tree(
        "verl/other.py", "Y = 2\n", GOOD_MESSAGE.replace("build boolean masks in build_mask", "second")
    )
    assert checkout.cli("export") == 0
    series = (checkout.root / "patches/series").read_text().split("\n")
    assert "megatron-fix-first-change.patch" in series and "megatron-fix-second.patch" in series
    # Reorder in the build tree with git rebase: names stay, only the order changes.
    base = checkout.user_git("rev-parse", "upstream/1.0.0").strip()
    checkout.user_git("-c", "sequence.editor=sed -i -e '1{h;d}' -e '2G'", "rebase", "-q", "-i", base)
    assert checkout.cli("export") == 0
    names = [ln for ln in (checkout.root / "patches/series").read_text().splitlines() if not ln.startswith("#")]
    assert names == ["megatron-fix-second.patch", "megatron-fix-first-change.patch"]


def test_export_refuses_a_dirty_tree(checkout, capsys):
    assert checkout.cli("apply") == 0
    (checkout.tree / "verl/models/util.py").write_text("edited = True\n")
    assert checkout.cli("export") == 1
    assert "uncommitted" in capsys.readouterr().err


def test_git_default_hash_does_not_change_the_patches(checkout, monkeypatch):
    assert checkout.cli("apply") == 0
    checkout.commit_in_tree("verl/a.py", "A = 1\n", message("[megatron] fix: a"))
    assert checkout.cli("export") == 0
    before = checkout.patches()
    subprocess.run(["rm", "-rf", str(checkout.root / "build")], check=True)
    monkeypatch.setenv("GIT_DEFAULT_HASH", "sha256")
    assert checkout.cli("apply") == 0
    assert checkout.cli("export") == 0
    assert checkout.patches() == before


def test_export_keeps_the_comments_of_series(checkout):
    assert checkout.cli("apply") == 0
    for n in range(3):
        checkout.commit_in_tree(f"verl/m{n}.py", f"M = {n}\n", message(f"[megatron] fix: part {n}"))
    assert checkout.cli("export") == 0
    a, b, c = series_names(checkout)
    text = f"# head\n\n# backports\n{a}\n# follow-ups: keep together\n{b}  # inline note\n{c}\n# end\n"
    (checkout.root / "patches/series").write_text(text)
    assert checkout.cli("apply") == 0
    assert checkout.cli("export") == 0
    assert (checkout.root / "patches/series").read_text() == text  # unchanged tree: byte-identical
    base = checkout.user_git("rev-parse", "upstream/1.0.0").strip()
    checkout.user_git("-c", "sequence.editor=sed -i -e '1{h;d}' -e '2G'", "rebase", "-q", "-i", base)  # swap 1, 2
    assert checkout.cli("export") == 0
    assert (checkout.root / "patches/series").read_text() == (
        f"# head\n\n# follow-ups: keep together\n{b}  # inline note\n# backports\n{a}\n{c}\n# end\n"
    )


def test_clashing_file_names_do_not_swap_on_reorder(checkout):
    assert checkout.cli("apply") == 0
    checkout.commit_in_tree("verl/a.py", "A = 1\n", message("[megatron] fix: mask (a)"))
    checkout.commit_in_tree("verl/b.py", "B = 1\n", message("[megatron] fix: mask [a]"))
    assert checkout.cli("export") == 0
    before = {name: data for name, data in checkout.patches().items() if name != "series"}
    assert len(before) == 2
    base = checkout.user_git("rev-parse", "upstream/1.0.0").strip()
    checkout.user_git("-c", "sequence.editor=sed -i -e '1{h;d}' -e '2G'", "rebase", "-q", "-i", base)
    assert checkout.cli("export") == 0
    after = {name: data for name, data in checkout.patches().items() if name != "series"}
    assert sorted(after) == sorted(before)
    for name, data in after.items():
        subject = [ln for ln in data.split(b"\n") if ln.startswith(b"Subject:")]
        assert subject == [ln for ln in before[name].split(b"\n") if ln.startswith(b"Subject:")]


@pytest.mark.parametrize("umask", [0o022, 0o002], ids=lambda m: f"umask-{m:03o}")
def test_exported_files_follow_the_umask(checkout, umask):
    """patches/ is shared like any checkout's files: what export writes has the modes git checkout would give."""
    assert checkout.cli("apply") == 0
    add_fix(checkout)
    previous = os.umask(umask)
    try:
        assert checkout.cli("export") == 0
    finally:
        os.umask(previous)
    modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in (checkout.root / "patches").iterdir()}
    assert "series" in modes and len(modes) == 2
    assert modes == dict.fromkeys(modes, 0o666 & ~umask)
