"""What is imported is what was read and checked: an sdist is unpacked from the bytes its sha256 was computed on,
and a source file that is not a regular file (a FIFO would block forever) is refused (no network used)."""

from __future__ import annotations

import os

import pytest
from helpers import make_sdist

from verl_patches.sources import sdist

UNREACHABLE = "http://127.0.0.1:9/verl.tar.gz"


def test_a_cached_sdist_swapped_after_its_check_is_not_imported(checkout, monkeypatch, capsys):
    """A racing writer that puts the pinned sdist back for every check and another one in its place right after."""
    pinned = (checkout.cache / "verl-1.0.0.tar.gz").read_bytes()
    checked = sdist.verify

    def verify_then_swap(path, expected):
        path.write_bytes(pinned)
        checked(path, expected)
        make_sdist(path.parent, "1.0.0", {"verl/injected.py": "print('not the pinned sdist')\n"})

    monkeypatch.setattr(sdist, "verify", verify_then_swap)
    assert checkout.cli("apply") == 1
    err = capsys.readouterr().err
    assert "sha256 mismatch for" in err and "Nothing was unpacked" in err and "Traceback" not in err
    assert not (checkout.tree / "verl" / "injected.py").exists()
    assert not (checkout.tree / ".git").exists() or not checkout.user_git("tag", "--list", "upstream/*").strip()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("where", ["mirror", "cache"])
def test_a_fifo_in_place_of_the_source_file_is_refused_without_blocking(
    archive_checkout, monkeypatch, tmp_path, capsys, where
):
    monkeypatch.setattr("verl_patches.model.upstream.Upstream.archive_url", property(lambda self: UNREACHABLE))
    mirror = tmp_path / "mirror" / "verl-1.0.0.tar.gz"
    fifo = mirror if where == "mirror" else archive_checkout.cache / "archives" / "verl-project-verl" / mirror.name
    fifo.parent.mkdir(parents=True, exist_ok=True)
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    assert archive_checkout.cli("apply") == 1
    err = capsys.readouterr().err
    assert str(fifo) in err and "Traceback" not in err
    assert ("is not a regular file" if where == "mirror" else "is not a file") in err
