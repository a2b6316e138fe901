"""Malformed files of the checkout and bad arguments get an error naming what is wrong and what to do, never a
traceback; a damaged backup record is shown as such beside the others, its files kept."""

from __future__ import annotations

import json

import pytest
from helpers import message


def error_of(checkout, capsys, *argv: str) -> str:
    assert checkout.cli(*argv) != 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return captured.err + captured.out


@pytest.mark.parametrize("where", ["upstream.toml", "patches/series"])
def test_a_byte_that_is_not_utf8_is_named_with_its_line(checkout, capsys, where):
    path = checkout.root / where
    path.write_bytes(path.read_bytes() + b"# caf\xe9\n")
    line = path.read_bytes().count(b"\n")
    assert f"{where} is not UTF-8: byte 0xe9 on line {line}" in error_of(checkout, capsys, "table")


def test_a_folder_in_place_of_the_series_or_of_a_listed_patch_is_named(checkout, capsys):
    series = checkout.root / "patches" / "series"
    series.write_text("0001-fix.patch\n")
    (checkout.root / "patches" / "0001-fix.patch").mkdir()
    assert "patches/0001-fix.patch is a folder, not a patch" in error_of(checkout, capsys, "table")
    series.unlink()
    series.mkdir()
    assert "patches/series is a folder" in error_of(checkout, capsys, "table")


def test_rebase_onto_a_string_that_is_not_a_version_is_a_usage_error(checkout, capsys):
    with pytest.raises(SystemExit) as exit_:
        checkout.cli("rebase", "--onto", "bogus version")
    assert exit_.value.code == 2
    assert "--onto: 'bogus version' is not a version (PEP 440), e.g. 0.9.1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("record", "damage"),
    [
        ('{"kind": "tree", "created": "x"', "backup.json cannot be read"),
        ("[1, 2]", "backup.json holds a JSON list, not an object"),
        ('{"kind": "patches", "created": "x", "files": []}', "backup.json of a patches backup lacks reason"),
        ('{"kind": "other"}', "backup.json names no known kind of backup (kind 'other')"),
        (
            '{"kind": "tree", "reason": "r", "created": "c", "tree": "t", "branch": "b", "head": null, "head_ref": 0}',
            "backup.json of a tree backup has values of the wrong type for head, head_ref",
        ),
    ],
    ids=["not JSON", "a list", "no reason", "unknown kind", "a null head"],
)
def test_a_damaged_backup_record_is_named_and_the_other_backups_still_listed(checkout, capsys, record, damage):
    assert checkout.cli("apply") == 0
    checkout.commit_in_tree("verl/a.py", "A = 1\n", message("[megatron] fix: kept in a backup"))
    assert checkout.cli("apply", "--force") == 0
    (good,) = (checkout.build / "backups").iterdir()
    damaged = good.with_name("00000000-000000-1")
    damaged.mkdir()
    (damaged / "backup.json").write_text(record)
    (damaged / "tree.bundle").write_bytes(b"")
    capsys.readouterr()
    assert checkout.cli("backups") == 0
    out = capsys.readouterr().out
    assert f"{damaged.name}: damaged backup: {damage}" in out and "tree.bundle holds branch backup/" in out
    assert f"{good.name}: tree backup" in out and "2 backup(s)" in out
    assert json.loads((good / "backup.json").read_text())["kind"] == "tree"
