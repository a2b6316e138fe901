"""Hostile archives: nothing of an archive is written outside the folder it is unpacked into, whatever the
shape of the escape; the refusal is an error that names the member, and the cached file is left as it is."""

from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path

import pytest
from helpers import make_archive

from verl_patches.errors import VerlPatchesError
from verl_patches.sources import sdist

TOP = "verl-1.0.0"
CLIMB = "../" * 20  # enough to reach / from the temporary folders here (20 links: below the 40 a path may follow)


def _link(name: str, target: str) -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info, None


def _file(name: str, data: bytes = b"written by the archive\n") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def escapes(outside: Path) -> dict[str, list[tuple[tarfile.TarInfo, bytes | None]]]:
    """Each escape shape: members after the archive's own files; each aims at a file in `outside`."""
    tail = str(outside / "pwned").lstrip("/")
    return {
        # The chain of the issue: `y -> .` makes `y/y/.../..` climb for real where it looks harmless lexically.
        "chain": [_link(f"{TOP}/y", "."), _link(f"{TOP}/s", "y/" * 20 + CLIMB + tail), _file(f"{TOP}/s")],
        "chain-folder": [
            _link(f"{TOP}/y", "."),
            _link(f"{TOP}/d", "y/" * 20 + CLIMB + str(outside).lstrip("/")),
            _file(f"{TOP}/d/pwned"),
        ],
        "dotdot": [_file(f"{TOP}/verl/{CLIMB}{tail}")],
        "absolute": [_file(f"{TOP}/pwned-marker"), _file(str(outside / "pwned"))],
        "absolute-link": [_link(f"{TOP}/d", str(outside)), _file(f"{TOP}/d/pwned")],
        "link-then-file": [_link(f"{TOP}/s", "verl/models/util.py"), _file(f"{TOP}/s")],
        "file-then-link": [_file(f"{TOP}/s"), _link(f"{TOP}/s", "y/" * 20 + CLIMB + tail), _link(f"{TOP}/y", ".")],
        "empty-link": [_link(f"{TOP}/s", "")],  # not an escape: refused by name, not with a bare ENOENT
    }


def hostile_archive(path: Path, extra: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    """The synthetic archive's files followed by the hostile members."""
    good = make_archive(path.parent / "good", "1.0.0")
    buffer = io.BytesIO()
    with tarfile.open(good) as source, tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for member in source.getmembers():
            tar.addfile(member, source.extractfile(member) if member.isfile() else None)
        for info, data in extra:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    path.write_bytes(buffer.getvalue())
    return path


def cached(checkout) -> Path:
    return checkout.cache / "archives" / "verl-project-verl" / "verl-1.0.0.tar.gz"


@pytest.fixture
def outside(tmp_path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


@pytest.fixture
def own_tmp(tmp_path, monkeypatch) -> Path:
    """The tool's temporary folders inside tmp_path, so that 'outside' is measured against a known root."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.mark.attack
@pytest.mark.parametrize("shape", list(escapes(Path("/x"))))
def test_a_hostile_archive_in_the_cache_writes_nothing_outside(
    archive_checkout, outside, own_tmp, tmp_path, capsys, shape
):
    archive = hostile_archive(tmp_path / "evil.tar.gz", escapes(outside)[shape])
    cache = cached(archive_checkout)
    cache.parent.mkdir(parents=True)
    cache.write_bytes(archive.read_bytes())
    capsys.readouterr()
    assert archive_checkout.cli("apply") == 1
    err = capsys.readouterr().err
    assert list(outside.iterdir()) == []
    assert not (tmp_path.parent / "pwned").exists() and not Path("/pwned").exists()
    assert "Traceback" not in err and "delete it" in err, err
    assert cache.read_bytes() == archive.read_bytes()  # kept for inspection
    assert list(own_tmp.iterdir()) == []  # the unpack folder is gone
    # The pin check still works on the next archive: a well-formed one with other content is a clean mismatch.
    other = make_archive(tmp_path / "other", "1.0.0", files={"verl/models/util.py": "other = 1\n"})
    cache.write_bytes(other.read_bytes())
    assert archive_checkout.cli("apply") == 1
    err = capsys.readouterr().err
    assert "content mismatch" in err and "expected (upstream.toml)" in err and "Traceback" not in err
    assert archive_checkout.cli("status") == 0
    assert "an apply was interrupted" not in capsys.readouterr().out


@pytest.mark.attack
@pytest.mark.parametrize("shape", list(escapes(Path("/x"))))
def test_unpack_refuses_each_escape_and_names_the_member(outside, tmp_path, shape):
    archive = hostile_archive(tmp_path / "evil.tar.gz", escapes(outside)[shape])
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(VerlPatchesError, match=r"evil\.tar\.gz: (member|symlink) '"):
        sdist.unpack(archive, dest)
    assert list(outside.iterdir()) == []
    util = dest / "verl/models/util.py"  # when written at all, never written through
    assert not util.exists() or util.read_text().startswith("def build_mask")


def test_symlinks_that_stay_inside_are_kept(tmp_path):
    archive = hostile_archive(
        tmp_path / "ok.tar.gz",
        [_link(f"{TOP}/y", "."), _link(f"{TOP}/docs/util", "../y/y/verl/models/util.py"), _link(f"{TOP}/z", "y")],
    )
    dest = tmp_path / "dest"
    dest.mkdir()
    sdist.unpack(archive, dest)
    assert (dest / "docs/util").read_text().startswith("def build_mask")
    assert (dest / "z").is_symlink()
