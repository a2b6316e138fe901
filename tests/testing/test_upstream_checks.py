"""check runs upstream's own sanity checks from the tree's config; one planted violation per check family."""

from __future__ import annotations

import pytest
from helpers import make_archive, pin_archive, tree_id_of

from verl_patches.model.series import slug

PRE_COMMIT = r"""repos:
  - repo: https://github.com/astral-sh/ruff-pre-commit
    rev: "v0.12.2"
    hooks:
      - id: ruff
      - id: ruff-format
  - repo: local
    hooks:
      - id: autogen-trainer-cfg
        name: Generate the trainer config
        entry: scripts/generate_trainer_config.sh
        language: script
        pass_filenames: false
      - id: check-license
        name: Check license
        entry: python3 tests/special_sanity/check_license.py --directories .
        language: python
        pass_filenames: false
      - id: check-naming-conventions
        name: Check naming conventions
        entry: sh -c 'fail=0; if grep -rIn --exclude-dir=.git --exclude=.pre-commit-config.yaml "veRL" .;
          then echo "Please use verl instead of veRL"; fail=1; fi; exit $fail'
        language: system
        pass_filenames: false
      - id: check-device-api-usage
        name: Check device api usage
        entry: python3 tests/special_sanity/check_device_api_usage.py
        language: python
        pass_filenames: false
      - id: compileall
        name: Compile all python files
        entry: sh -c 'PYTHONWARNINGS=error python3 -m compileall -q . -x "(^|[\\/])(\.venv|venv|\.git)([\\/]|$)"'
        language: python
        pass_filenames: false
"""

CHECK_LICENSE = """import subprocess
import sys

files = subprocess.run(["git", "ls-files", "verl/*.py", "tests/*.py"], capture_output=True, text=True, check=True)
for path in files.stdout.split():
    text = open(path).read()
    if text and "Copyright" not in text:
        sys.exit(f"file {path} does not contain license")
"""

CHECK_PR_TITLE = """import os
import re

title = os.environ.get("PR_TITLE", "")
match = re.match(r"^\\[([a-z_, ]+)\\] (feat|fix|refactor|chore|test): .+$", title)
modules = re.findall(r"[a-z_]+", match.group(1)) if match else []
bad = [m for m in modules if m not in ("megatron", "misc")]
if not match or bad:
    print(f"Invalid modules: {', '.join(bad)}" if bad else f"Invalid PR title: {title}")
    raise Exception("Invalid PR title")
"""

# Like upstream's script: one line per file checked, and it stops at the first file that fails.
CHECK_DEVICE_API = """# Copyright 2026 verl-patches contributors
import pathlib

for path in sorted(pathlib.Path("verl").rglob("*.py")):
    print(f"[CHECK] File {path} is detected for device api usage check", end=", ")
    assert "cuda" not in path.read_text(), f"file {path} contains cuda usage"
    print("check result: success.")
"""

HEADER = "# Copyright 2026 verl-patches contributors\n"
UPSTREAM_FILES = {
    ".pre-commit-config.yaml": PRE_COMMIT,
    "pyproject.toml": '[tool.ruff]\nline-length = 120\n\n[tool.ruff.lint]\nselect = ["E", "F"]\n',
    "tests/special_sanity/check_license.py": CHECK_LICENSE,
    "tests/special_sanity/check_pr_title.py": CHECK_PR_TITLE,
    "tests/special_sanity/check_device_api_usage.py": CHECK_DEVICE_API,
    "verl/models/util.py": HEADER
    + "def build_mask(lengths, width):\n    return [[i < n for i in range(width)] for n in lengths]\n",
}


def message(subject: str) -> str:
    return f"{subject}\n\nProblem: p.\n\nFix: f.\n\nTests: t.\n\nForwarded: no\nProve-Exempt: tests only\n"


def on_archive(checkout, tmp_path, monkeypatch, extra: dict[str, str] | None = None):
    """The checkout pinned to an archive-like upstream with sanity checks, and one clean patch applied."""
    mirror = tmp_path / "mirror"
    archive = make_archive(mirror, "1.0.0", {**UPSTREAM_FILES, **(extra or {})})
    pin_archive(checkout.root, "1.0.0", tree_id_of(archive, tmp_path))
    monkeypatch.setenv("VERL_PATCHES_MIRROR", str(mirror))
    assert checkout.cli("apply") == 0
    checkout.commit_in_tree("tests/models/good.py", HEADER + "GOOD = 1\n", message("[misc] test: a clean patch"))
    return checkout


@pytest.fixture
def sanity(checkout, tmp_path, monkeypatch):
    return on_archive(checkout, tmp_path, monkeypatch)


def upstream_findings(checkout, capsys) -> tuple[int, list[str]]:
    assert checkout.cli("export") == 0
    capsys.readouterr()
    rc = checkout.cli("check")
    out = capsys.readouterr().out
    return rc, [line for line in out.splitlines() if ": upstream:" in line]


VIOLATIONS = {
    "check-license": ("tests/models/bad.py", "X = 1\n", "[misc] test: add a file without a header"),
    "check-naming-conventions": ("docs/naming.md", "veRL is spelt verl\n", "[misc] test: misspell verl"),
    "compileall": ("tests/models/esc.py", HEADER + 'PATTERN = "\\d"\n', "[misc] test: an invalid escape"),
    "check-pr-title": ("tests/models/ok.py", HEADER + "OK = 1\n", "[fsdp] test: a module upstream's script rejects"),
    "ruff": ("tests/models/imp.py", HEADER + "import os\n", "[misc] test: an unused import"),
    "ruff-format": ("tests/models/fmt.py", HEADER + "X=1\n", "[misc] test: unformatted code"),
}


@pytest.mark.parametrize("rule", list(VIOLATIONS))
def test_each_check_family_reports_a_planted_violation_on_its_patch(sanity, capsys, rule):
    path, text, subject = VIOLATIONS[rule]
    sanity.commit_in_tree(path, text, message(subject))
    rc, found = upstream_findings(sanity, capsys)
    assert rc == 1
    assert [line.split(": ", 2)[:2] for line in found] == [[sanity_patch_name(subject), f"upstream:{rule}"]], found
    assert rule != "check-license" or "tests/models/bad.py does not contain license" in found[0]
    assert rule != "ruff" or "tests/models/imp.py:2: F401" in found[0]
    assert rule != "check-pr-title" or "Invalid modules: fsdp" in found[0]


def sanity_patch_name(subject: str) -> str:
    return slug(subject) + ".patch"


def test_a_clean_series_passes_and_skipped_hooks_are_named(sanity, capsys):
    assert sanity.cli("export") == 0
    capsys.readouterr()
    assert sanity.cli("check") == 0
    out = capsys.readouterr().out
    assert "check: note: upstream hook autogen-trainer-cfg not run" in out


def test_a_failure_already_on_the_base_is_not_the_series(checkout, tmp_path, monkeypatch, capsys):
    tree = on_archive(checkout, tmp_path, monkeypatch, {"docs/old.md": "veRL\n"})
    assert tree.cli("export") == 0
    capsys.readouterr()
    assert tree.cli("check") == 0
    assert "upstream hook check-naming-conventions fails on the base already" in capsys.readouterr().out
    tree.commit_in_tree("docs/new.md", "more veRL\n", message("[misc] test: misspell verl again"))
    rc, found = upstream_findings(tree, capsys)
    assert rc == 1 and len(found) == 1 and "docs/new.md:1:more veRL" in found[0]


def test_a_hook_that_stops_at_a_base_failure_is_not_blamed_for_its_progress_lines(
    checkout, tmp_path, monkeypatch, capsys
):
    """The base's failure comes after a file the series adds: the script prints one more success line, no finding;
    a failure the series adds before the base's is still found."""
    tree = on_archive(checkout, tmp_path, monkeypatch, {"verl/zz_old.py": HEADER + 'DEVICE = "cuda"\n'})
    tree.commit_in_tree("verl/models/aa_new.py", HEADER + "NEW = 1\n", message("[misc] test: a module checked first"))
    _, found = upstream_findings(tree, capsys)  # rc 1: the series lint asks this verl/ change for tests
    assert found == [], found
    tree.commit_in_tree("verl/aa_cuda.py", HEADER + 'DEVICE = "cuda"\n', message("[misc] test: hard-code a device"))
    rc, found = upstream_findings(tree, capsys)
    assert rc == 1 and len(found) == 1 and "verl/aa_cuda.py contains cuda usage" in found[0], found


def test_findings_name_the_build_tree_of_the_base(checkout, tmp_path, monkeypatch, capsys):
    from helpers.bases import archive_table, commit, make_queues

    mirror = tmp_path / "mirror"
    archive = make_archive(mirror, "1.0.0", UPSTREAM_FILES)
    (checkout.root / "upstream.toml").write_text(archive_table("1.0.0", tree_id_of(archive, tmp_path)))
    make_queues(checkout.root, "1.0.0")
    monkeypatch.setenv("VERL_PATCHES_MIRROR", str(mirror))
    monkeypatch.delenv("VERL_PATCHES_BASE", raising=False)
    assert checkout.cli("apply") == 0
    tree = checkout.root / "build" / "1.0.0" / "verl"
    for rule in ("check-license", "check-pr-title", "ruff"):
        path, text, subject = VIOLATIONS[rule]
        commit(tree, {path: text}, message(subject))
    assert checkout.cli("export") == 0
    capsys.readouterr()
    assert checkout.cli("check") == 1
    found = [line for line in capsys.readouterr().out.splitlines() if ": upstream:" in line]
    assert len(found) == 3, found
    assert "-> fix it in build/1.0.0/verl (`python3 tests/special_sanity/check_license.py" in found[0]
    assert found[1].endswith("-> reword the subject in build/1.0.0/verl")
    assert found[2].endswith("-> fix it in build/1.0.0/verl (ruff check with verl's config)")
