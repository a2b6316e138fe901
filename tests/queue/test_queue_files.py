"""The queue's files as input: a patch file is checked whole before `git am`, CRLF is named as such, a missing
queue folder is an error, and status, check and export agree byte for byte on what export would write."""

from __future__ import annotations

import pytest
from helpers import message

from verl_patches.model.patch import END_MARKER


def two_file_patch(checkout) -> tuple:
    """One exported patch that changes two files; returns its path and bytes."""
    assert checkout.cli("apply") == 0
    (checkout.tree / "verl/models/util.py").write_text("def build_mask(lengths, width):\n    return None\n")
    (checkout.tree / "verl/second.py").write_text("".join(f"LINE_{n} = {n}\n" for n in range(8)))
    checkout.user_git("add", "-A")
    checkout.user_git("commit", "-q", "-F", "-", input=message("[megatron] fix: two files"))
    assert checkout.cli("export") == 0
    (path,) = (checkout.root / "patches").glob("*.patch")
    return path, path.read_bytes()


def cut_after(data: bytes, marker: bytes, extra_lines: int = 0) -> bytes:
    """The bytes up to the line that starts with marker (in the last diff section), plus extra_lines lines."""
    at = data.rindex(b"\n" + marker) + 1
    end = at
    for _ in range(extra_lines + 1):
        end = data.index(b"\n", end) + 1
    return data[:end]


CUTS = {
    "before-the-second-section": lambda d: d[: d.rindex(b"\ndiff --git ") + 1],  # every section left is whole
    "after-the-index-line": lambda d: cut_after(d, b"index ", 0),
    "after-the-file-names": lambda d: cut_after(d, b"+++ ", 0),
    "inside-a-hunk": lambda d: cut_after(d, b"@@ ", 3),
    "inside-a-line": lambda d: d[: -len(END_MARKER) - 2],
    "inside-the-end-marker": lambda d: d[:-3],
}
NO_MARKER = ("before-the-second-section", "inside-the-end-marker")  # every diff section left is whole


@pytest.mark.attack
@pytest.mark.parametrize("cut", list(CUTS))
def test_a_cut_short_patch_is_refused_before_git_am(checkout, capsys, cut):
    path, whole = two_file_patch(checkout)
    path.write_bytes(CUTS[cut](whole))
    head = checkout.user_git("rev-parse", "HEAD")
    capsys.readouterr()
    assert checkout.cli("apply") == 1
    err = capsys.readouterr().err
    assert "cut short" in err and path.name in err, err
    if cut in NO_MARKER:
        assert "end marker" in err and "verl-patches export" in err, err
    else:
        assert "verl/second.py" in err, err
    assert "git am --" not in err and "Traceback" not in err
    assert checkout.user_git("rev-parse", "HEAD") == head  # refused before the tree was touched
    assert checkout.cli("check", "--no-upstream-checks") == 1
    assert "cut short" in capsys.readouterr().out
    path.write_bytes(whole)
    assert checkout.cli("apply") == 0


@pytest.mark.attack
def test_crlf_line_endings_are_named(checkout, capsys):
    path, whole = two_file_patch(checkout)
    path.write_bytes(whole.replace(b"\n", b"\r\n"))
    capsys.readouterr()
    assert checkout.cli("apply") == 1
    err = capsys.readouterr().err
    assert "CRLF" in err and path.name in err and "no blank line" not in err
    assert checkout.cli("check", "--no-upstream-checks") == 1
    assert "CRLF" in capsys.readouterr().out


BREAKS = {
    "no-diff": lambda d: d[: d.index(b"\ndiff --git") + 1] + END_MARKER[1:],  # git am: "Patch is empty", advice
    "conflict": lambda d: d.replace(b" def build_mask", b" def something_else").replace(b"index ", b"index-broken "),
}


@pytest.mark.attack
@pytest.mark.parametrize("broken", list(BREAKS))
def test_a_patch_that_does_not_apply_passes_on_no_git_am_advice(checkout, capsys, broken):
    path, whole = two_file_patch(checkout)
    path.write_bytes(BREAKS[broken](whole))
    capsys.readouterr()
    assert checkout.cli("apply") == 1
    err = capsys.readouterr().err
    for advice in ("--continue", "--skip", "--abort", "--show-current-patch", "hint:"):
        assert advice not in err, err
    assert path.name in err and "verl-patches apply" in err


@pytest.mark.attack
@pytest.mark.parametrize("command", [("apply",), ("wheel",), ("export",), ("check", "--no-apply")])
def test_a_missing_queue_folder_is_an_error_not_an_empty_queue(checkout, capsys, command):
    two_file_patch(checkout)
    for path in (checkout.root / "patches").iterdir():
        path.unlink()
    (checkout.root / "patches").rmdir()
    capsys.readouterr()
    assert checkout.cli(*command) == 1
    captured = capsys.readouterr()
    assert "patches/ does not exist" in captured.out + captured.err, captured
    assert "two files" in checkout.user_git("log", "-1", "--format=%s")  # the tree is left as it is
    assert not (checkout.root / "dist").exists()


def signature(data: bytes) -> bytes:
    """Another signature block before export's end marker: the file is whole, but not what export writes."""
    return data[: -len(END_MARKER) + 1] + b"-- \n2.39.5\n\n" + END_MARKER[1:]


def foreign_signature(data: bytes) -> bytes:
    """A signature block in place of export's end marker (git format-patch's default, by hand)."""
    return data[: -len(END_MARKER) + 1] + b"-- \n2.39.5\n\n"


def latin1_subject(data: bytes) -> bytes:
    return data.replace(b"two files", b"two fil\xe9s", 1)


@pytest.mark.attack
@pytest.mark.parametrize("change", [signature, latin1_subject], ids=["signature-block", "latin-1-subject"])
def test_status_check_and_export_agree_on_what_export_writes(checkout, capsys, change):
    path, whole = two_file_patch(checkout)
    path.write_bytes(change(whole))
    assert checkout.cli("apply") == 0
    capsys.readouterr()
    assert checkout.cli("status") == 3
    out = capsys.readouterr().out
    assert path.name in out and "verl-patches export" in out and "clean" not in out
    assert checkout.cli("check", "--no-upstream-checks") == 1
    assert path.name in capsys.readouterr().out
    assert checkout.cli("apply") == 0  # nothing to lose: a plain apply still rebuilds
    assert checkout.cli("export") == 0
    assert not path.exists() or path.read_bytes() != change(whole)
    assert checkout.cli("status") == 0


@pytest.mark.attack
def test_a_foreign_signature_block_is_refused_and_reported(checkout, capsys):
    path, whole = two_file_patch(checkout)
    head = checkout.user_git("rev-parse", "HEAD")
    path.write_bytes(foreign_signature(whole))
    capsys.readouterr()
    assert checkout.cli("apply") == 1
    err = capsys.readouterr().err
    assert path.name in err and "end marker" in err and "verl-patches export" in err, err
    assert checkout.user_git("rev-parse", "HEAD") == head
    assert checkout.cli("check", "--no-upstream-checks") == 1
    out = capsys.readouterr().out
    assert path.name in out and "end marker" in out, out
    assert checkout.cli("status") != 0
    out = capsys.readouterr().out
    assert "changed since" in out and "clean" not in out, out
    assert checkout.cli("export", "--force") == 0  # the tree still holds the patch: export writes it whole
    assert path.read_bytes() == whole
    assert checkout.cli("status") == 0
    assert checkout.cli("apply") == 0
