"""rebase from a tag-archive base onto a newer sdist: the sdist's paths from the sdist, the rest kept."""

from __future__ import annotations

import sys

import pytest
from helpers import BASE_FILES, make_archive, make_sdist, pin_archive, sha256, tree_id_of
from helpers.clamp import BUGGY, UPSTREAM_OWN_FIX, add_clamp_fix, commit_files, message

REPO_ONLY = {
    ".github/workflows/ci.yml": "name: ci\n",
    "examples/run.sh": "#!/bin/sh\necho run\n",
    "verl/old_module.py": "OLD = 1\n",
}


@pytest.fixture
def on_archive(checkout, tmp_path, monkeypatch):
    monkeypatch.setenv("VERL_PATCHES_PYTHON", sys.executable)
    mirror = tmp_path / "mirror"
    archive = make_archive(mirror, "1.0.0", {"verl/models/clamp.py": BUGGY, **REPO_ONLY}, drop=("PKG-INFO",))
    pin_archive(checkout.root, "1.0.0", tree_id_of(archive, tmp_path))
    monkeypatch.setenv("VERL_PATCHES_MIRROR", str(mirror))
    assert checkout.cli("apply") == 0
    return checkout


def test_rebase_overlays_the_sdist_and_reports_what_was_carried(on_archive, tmp_path, capsys):
    add_clamp_fix(on_archive)
    commit_files(on_archive, {".github/workflows/ci.yml": "name: ci\non: push\n"}, message("[ci] feat: run on push"))
    assert on_archive.cli("export") == 0
    new = make_sdist(tmp_path / "new", "1.1.0", {"verl/models/clamp.py": UPSTREAM_OWN_FIX})
    (on_archive.cache / new.name).write_bytes(new.read_bytes())
    report = tmp_path / "report.md"
    capsys.readouterr()
    assert on_archive.cli("rebase", "--onto", "1.1.0", "--sha256", sha256(new), "--report", str(report)) == 0
    text = report.read_text()
    shipped = len(BASE_FILES) + 1 - 1  # the sdist files and clamp.py, less PKG-INFO (left out)
    assert f"- command: `verl-patches rebase --onto 1.1.0 --sha256 {sha256(new)} --report {report}`" in text
    assert "verl 1.1.0's sdist over the v1.0.0 tag archive" in text
    assert f"{shipped} paths checked" in text
    assert "3 paths carried over from v1.0.0 unchecked (`.github` 1, `examples` 1, `verl` 1)" in text
    assert (
        "of those, 1 are under `verl/` (1 `.py`)" in text
        and "probably deleted upstream: 1: `verl/old_module.py`" in text
    )
    assert "- left out, the sdist's build metadata: `PKG-INFO`" in text
    assert "applies cleanly" in text  # the .github patch applies on the carried file
    git = on_archive.user_git
    base = git("rev-parse", "rebase/1.1.0~2").strip()
    assert git("show", f"{base}:verl/version/version") == "1.1.0\n"
    assert git("show", f"{base}:verl/models/clamp.py") == UPSTREAM_OWN_FIX
    assert git("show", f"{base}:examples/run.sh") == REPO_ONLY["examples/run.sh"]
    assert "PKG-INFO" not in git("ls-tree", "--name-only", base)


def test_rebase_write_from_an_archive_base_declares_the_sdist_over_that_archive(on_archive, tmp_path, capsys):
    commit_files(on_archive, {"examples/run.sh": "#!/bin/sh\necho run twice\n"}, message("[misc] feat: run twice"))
    assert on_archive.cli("export") == 0
    before = (on_archive.root / "upstream.toml").read_text()
    new = make_sdist(tmp_path / "new", "1.1.0")
    (on_archive.cache / new.name).write_bytes(new.read_bytes())
    assert on_archive.cli("rebase", "--onto", "1.1.0", "--sha256", sha256(new), "--write") == 0
    declared = (on_archive.root / "upstream.toml").read_text()
    assert declared.startswith(before)
    added = declared[len(before) :]
    assert '[base."1.1.0"]' in added and 'source = "sdist-over-archive"' in added and 'over = "1.0.0"' in added
    assert f'sha256 = "{sha256(new)}"' in added
    (written,) = (on_archive.root / "patches" / "1.1.0").glob("*.patch")
    assert "echo run twice" in written.read_text()
