"""range-diff between two refs of the checkout: an amended patch, patches that predate the end marker, an empty
queue."""

from __future__ import annotations

import re
import subprocess

from helpers.clamp import add_clamp_fix, message

from verl_patches.model.patch import END_MARKER


def test_range_diff_between_two_refs(lifecycle, capsys):
    add_clamp_fix(lifecycle)
    assert lifecycle.cli("export") == 0
    project = ["git", "-C", str(lifecycle.root)]
    subprocess.run([*project, "init", "-q"], check=True)
    subprocess.run([*project, "add", "-A"], check=True)
    subprocess.run([*project, "commit", "-qm", "v1"], check=True)
    lifecycle.user_git("commit", "-q", "--amend", "-F", "-", input=message("[megatron] fix: clamp negative values v2"))
    assert lifecycle.cli("export") == 0
    capsys.readouterr()
    assert lifecycle.cli("range-diff", "HEAD") == 0
    out = capsys.readouterr().out
    assert "1:" in out and "! 1:" in out and "clamp negative values v2" in out


def test_range_diff_against_a_ref_whose_patches_predate_the_end_marker(lifecycle, capsys):
    add_clamp_fix(lifecycle)
    assert lifecycle.cli("export") == 0
    exported = {p: p.read_bytes() for p in (lifecycle.root / "patches").glob("*.patch")}
    for path, data in exported.items():  # as export wrote them before it ended them with its marker
        path.write_bytes(data.removesuffix(END_MARKER[1:]))
    project = ["git", "-C", str(lifecycle.root)]
    subprocess.run([*project, "init", "-q"], check=True)
    subprocess.run([*project, "add", "-A"], check=True)
    subprocess.run([*project, "commit", "-qm", "v1"], check=True)
    for path, data in exported.items():
        path.write_bytes(data)
    lifecycle.user_git("commit", "-q", "--amend", "-F", "-", input=message("[megatron] fix: clamp negative values v2"))
    assert lifecycle.cli("export") == 0
    capsys.readouterr()
    assert lifecycle.cli("range-diff", "HEAD") == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "1:" in out and "! 1:" in out and "clamp negative values v2" in out
    (path,) = (lifecycle.root / "patches").glob("*.patch")
    path.write_bytes(path.read_bytes().removesuffix(END_MARKER[1:]))  # the working copy itself must have it
    assert lifecycle.cli("range-diff", "HEAD") == 1
    assert path.name in (err := capsys.readouterr().err) and "end marker" in err, err


def test_range_diff_against_a_ref_whose_queue_is_empty_lists_the_added_patches(lifecycle, capsys):
    project = ["git", "-C", str(lifecycle.root)]
    subprocess.run([*project, "init", "-q"], check=True)
    subprocess.run([*project, "add", "-A"], check=True)
    subprocess.run([*project, "commit", "-qm", "v1"], check=True)
    add_clamp_fix(lifecycle)
    assert lifecycle.cli("export") == 0
    capsys.readouterr()
    assert lifecycle.cli("range-diff", "HEAD") == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert re.search(r"^-:  ------- > 1:  [0-9a-f]{7} \[megatron\] fix: clamp negative values$", out, re.M), out


def test_range_diff_against_a_ref_from_before_per_base_queues(lifecycle, capsys):
    add_clamp_fix(lifecycle)
    assert lifecycle.cli("export") == 0
    upstream_toml = lifecycle.root / "upstream.toml"
    declared = upstream_toml.read_text()
    legacy = declared.replace('[base."1.0.0"]', '[upstream]\nversion = "1.0.0"').replace('queue = "patches"\n', "")
    upstream_toml.write_text(legacy)  # the single table refs from before per-base queues have
    project = ["git", "-C", str(lifecycle.root)]
    subprocess.run([*project, "init", "-q"], check=True)
    subprocess.run([*project, "add", "-A"], check=True)
    subprocess.run([*project, "commit", "-qm", "v1"], check=True)
    upstream_toml.write_text(declared)
    lifecycle.user_git("commit", "-q", "--amend", "-F", "-", input=message("[megatron] fix: clamp negative values v2"))
    assert lifecycle.cli("export") == 0
    capsys.readouterr()
    assert lifecycle.cli("range-diff", "HEAD") == 0, capsys.readouterr().err
    assert "clamp negative values v2" in capsys.readouterr().out
