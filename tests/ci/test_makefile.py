"""The Makefile reads the bases from upstream.toml: [base."<version>"] tables."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import ROOT

MAKEFILE = ROOT / "Makefile"
TABLES = '[base."1.0.0"]\nqueue = "patches/1.0.0"\n\n[base."1.1.0"]\nqueue = "patches/1.1.0"\n'
SINGLE = '[base."1.0.0"]  # the only one\nname = "verl"\nqueue = "patches"\n\n[other]\nversion = "9"\n'
LEGACY = '[upstream]\nname = "verl"\nversion = "1.0.0"\nsource = "pypi-sdist"\n'


def dry_run(tmp_path: Path, upstream: str, *targets: str) -> subprocess.CompletedProcess:
    shutil.copy(MAKEFILE, tmp_path / "Makefile")
    (tmp_path / "upstream.toml").write_text(upstream)
    (tmp_path / "pyproject.toml").write_text("")
    return subprocess.run(["make", "-n", "-C", str(tmp_path), *targets], capture_output=True, text=True)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize(
    ("upstream", "bases"), [(TABLES, ["1.0.0", "1.1.0"]), (SINGLE, ["1.0.0"])], ids=["tables", "single"]
)
def test_make_runs_each_declared_base(tmp_path, upstream, bases):
    proc = dry_run(tmp_path, upstream, "apply")
    assert proc.returncode == 0, proc.stderr
    applied = [line.split("--base ")[1] for line in proc.stdout.splitlines() if "verl-patches apply --base" in line]
    assert applied == bases


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("upstream", ['[other]\nversion = "1.0.0"\n', LEGACY], ids=["other", "legacy-upstream"])
def test_make_without_a_base_says_what_upstream_toml_lacks(tmp_path, upstream):
    proc = dry_run(tmp_path, upstream, "apply")
    assert proc.returncode != 0
    assert 'declares no [base."<version>"] table' in proc.stderr
