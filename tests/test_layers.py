"""The package's layers (CONTRIBUTING.md, "The tool itself"): each imports only from the layers above it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "verl_patches"
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
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("verl_patches"):
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names if alias.name.startswith("verl_patches"))
    return names


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_a_layer_imports_only_from_the_layers_above_it(layer):
    wrong = {
        f"{path.name} imports {name}"
        for path in sorted((PACKAGE / layer).glob("*.py"))
        for name in imported(path)
        if name not in OPEN and name.split(".")[1] not in ALLOWED[layer]
    }
    assert not wrong


def test_the_model_does_no_io():
    io = {"os", "subprocess", "shutil", "urllib", "socket", "tempfile"}
    used = {
        f"{path.name} imports {node.names[0].name if isinstance(node, ast.Import) else node.module}"
        for path in sorted((PACKAGE / "model").glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Import | ast.ImportFrom)
        and ((node.module or "") if isinstance(node, ast.ImportFrom) else node.names[0].name).split(".")[0] in io
    }
    assert not used


def test_the_package_root_holds_at_most_six_modules():
    assert len(list(PACKAGE.glob("*.py"))) <= 6


def test_commands_are_thin_and_import_no_other_command():
    commands = sorted((PACKAGE / "commands").glob("*.py"))
    long = [f"{path.name}: {len(path.read_text().splitlines())} lines" for path in commands]
    assert not [line for line in long if int(line.rsplit(" ", 2)[1]) > 120]
    assert not {f"{p.name} imports {n}" for p in commands for n in imported(p) if n.startswith("verl_patches.commands")}


def test_nothing_outside_commands_imports_them():
    outside = [p for p in PACKAGE.rglob("*.py") if p.parent.name != "commands"]
    outside += list((PACKAGE.parent.parent / "ci").rglob("*.py"))
    assert not {f"{p.name} imports {n}" for p in outside for n in imported(p) if n.startswith("verl_patches.commands")}
