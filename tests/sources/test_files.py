"""The tool's one way to write a file whole (sources/files): the file appears whole or not at all, with the modes
the umask gives a new file, or the mode asked for."""

from __future__ import annotations

import os
import stat

import pytest

from verl_patches.sources import files


def mode_of(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask():
    """Sets the process umask for the test, and puts the one of before back."""
    previous = os.umask(0o022)
    yield os.umask
    os.umask(previous)


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077], ids=lambda m: f"umask-{m:03o}")
def test_a_written_file_has_the_mode_the_umask_gives(tmp_path, umask, mask):
    umask(mask)
    files.write_atomic(tmp_path / "new", b"one\n")
    (tmp_path / "old").write_bytes(b"old\n")
    os.chmod(tmp_path / "old", 0o600)
    files.write_json(tmp_path / "old", {"a": 1})  # replaced like a new file, as open() and os.replace did
    assert mode_of(tmp_path / "new") == mode_of(tmp_path / "old") == 0o666 & ~mask
    assert (tmp_path / "new").read_bytes() == b"one\n" and files.read_json(tmp_path / "old") == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new", "old"]


def test_a_mode_asked_for_is_kept(tmp_path, umask):
    umask(0o077)
    with files.atomic(tmp_path / "archive", mode=0o644) as handle:
        handle.write(b"bytes")
    assert mode_of(tmp_path / "archive") == 0o644


def test_an_error_leaves_no_file_and_the_target_as_it_was(tmp_path):
    (tmp_path / "kept").write_bytes(b"old\n")
    with pytest.raises(RuntimeError), files.atomic(tmp_path / "kept") as handle:
        handle.write(b"half")
        raise RuntimeError("killed halfway")
    with files.atomic(tmp_path / "kept", replace=False) as handle:
        handle.write(b"other process lost\n")
    assert [p.name for p in tmp_path.iterdir()] == ["kept"] and (tmp_path / "kept").read_bytes() == b"old\n"
