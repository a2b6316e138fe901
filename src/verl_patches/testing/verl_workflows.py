"""verl's own test selection, read from the workflows of the patched tree (.github/workflows/*.yml)."""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from verl_patches.errors import VerlPatchesError

GPU_UNIT_TESTS = ".github/workflows/gpu_unit_tests.yml"
GPU_UNIT_JOB = "gpu_unit_tests"
# Options of upstream's pytest line that select tests; the others (-s, -x, ...) are how upstream runs them.
_SELECTING = ("--ignore-glob", "--ignore", "--deselect", "-k", "-m")


def pytest_selection(command: str) -> list[str]:
    """The selecting options and the paths of one `pytest ...` command line, in their order."""
    words = shlex.split(command)
    if words[:1] == ["pytest"]:
        words = words[1:]
    elif words[1:3] == ["-m", "pytest"]:
        words = words[3:]
    else:
        raise ValueError(f"not a pytest command: {command!r}")
    selection: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        name, sep, value = word.partition("=") if word.startswith("--") else (word, "", "")
        if name in _SELECTING:
            if not sep:
                i += 1
                if i == len(words):
                    raise ValueError(f"{name} without a value in {command!r}")
                value = words[i]
            selection += [f"{name}={value}"] if name.startswith("--") else [name, value]
        elif not word.startswith("-"):
            selection.append(word)
        i += 1
    return selection


def gpu_unit_test_args(tree: Path) -> list[str]:
    """pytest arguments that select verl's GPU unit tests as upstream's gpu_unit_tests.yml does (its ignore list
    and paths), to run from the tree's root."""
    path = tree / GPU_UNIT_TESTS
    if not path.is_file():
        raise VerlPatchesError(
            f"{path} does not exist: verl's GPU unit-test selection comes from upstream's {GPU_UNIT_TESTS}, "
            "which only a base with verl's whole repository has"
        )
    try:
        workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
        steps = workflow["jobs"][GPU_UNIT_JOB]["steps"]
    except (yaml.YAMLError, KeyError, TypeError) as exc:
        raise VerlPatchesError(f"{GPU_UNIT_TESTS}: no job {GPU_UNIT_JOB!r} with steps ({exc})") from exc
    for step in steps:
        for line in str(step.get("run", "")).splitlines():
            line = line.strip()
            if line.startswith("pytest ") and "--ignore-glob" in line:
                args = pytest_selection(line)
                if not any(not a.startswith("-") for a in args):
                    raise VerlPatchesError(f"{GPU_UNIT_TESTS}: its pytest line names no test path: {line}")
                return args
    raise VerlPatchesError(
        f"{GPU_UNIT_TESTS}: no step of job {GPU_UNIT_JOB!r} runs `pytest --ignore-glob=... <paths>`; "
        "upstream changed how it selects its GPU unit tests"
    )
