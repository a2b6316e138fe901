"""The package's layers (CONTRIBUTING.md, "The tool itself"): each imports only from the layers above it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import ROOT

PACKAGE = ROOT / "src" / "verl_patches"
# Each layer, and the layers it may import from (the root's checkout and errors modules are open to all).
ALLOWED = {
    "model": {"model"},
    "sources": {"model", "sources"},
    "git": {"model", "sources", "git"},
    "testing": {"model", "sources", "git", "testing"},
    "queue": {"model", "sources", "git", "testing", "queue"},
}
OPEN = {"verl_patches.checkout", "verl_patches.errors"}


def imported(path: Path) -> set[str]:
    """Every module a file imports (its absolute imports)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def ours(path: Path) -> set[str]:
    return {name for name in imported(path) if name.startswith("verl_patches")}


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_a_layer_imports_only_from_the_layers_above_it(layer):
    wrong = {
        f"{path.name} imports {name}"
        for path in sorted((PACKAGE / layer).glob("*.py"))
        for name in ours(path)
        if name not in OPEN and name.split(".")[1] not in ALLOWED[layer]
    }
    assert not wrong


def test_the_model_does_no_io():
    io = {"os", "subprocess", "shutil", "urllib", "socket", "tempfile"}
    models = sorted((PACKAGE / "model").glob("*.py"))
    assert not {f"{p.name} imports {n}" for p in models for n in imported(p) if n.split(".")[0] in io}


def test_the_package_root_holds_at_most_six_modules():
    assert len(list(PACKAGE.glob("*.py"))) <= 6


def test_commands_are_thin_and_import_no_other_command():
    commands = sorted((PACKAGE / "commands").glob("*.py"))
    lines = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in commands}
    assert not {name: count for name, count in lines.items() if count > 120}
    assert not {f"{p.name} imports {n}" for p in commands for n in ours(p) if n.startswith("verl_patches.commands")}


def test_nothing_outside_commands_imports_them():
    outside = [p for p in PACKAGE.rglob("*.py") if p.parent.name != "commands"]
    outside += list((PACKAGE.parent.parent / "ci").rglob("*.py"))
    assert not {f"{p.name} imports {n}" for p in outside for n in ours(p) if n.startswith("verl_patches.commands")}


TESTS = ROOT / "tests"
TEST_FILES = sorted(TESTS.rglob("*.py"))


def test_test_files_stay_short_and_import_no_test_module():
    """The tests' layout (CONTRIBUTING.md): files under 250 lines, shared code from helpers, never from conftest or
    another test file, and file names unique across the folders (pytest imports them by basename)."""
    lines = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in TEST_FILES}
    long = [f"{p.relative_to(TESTS)} ({n})" for p, n in lines.items() if n >= 250]
    wrong = [
        f"{p.relative_to(TESTS)} imports {name}"
        for p in TEST_FILES
        for name in imported(p)
        if name == "conftest" or name.split(".")[-1].startswith("test_")
    ]
    names = [p.name for p in TEST_FILES if p.name.startswith("test_")]
    assert (long, wrong, sorted({n for n in names if names.count(n) > 1})) == ([], [], [])
