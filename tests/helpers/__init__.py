"""Shared code of the tool's tests (not fixtures: those are in tests/conftest.py). Test files import from here,
never from conftest.py or from one another."""

from pathlib import Path

from helpers.archives import (
    BASE_FILES,
    FAKE_COMMIT,
    SETUP_PY,
    git_tree_id,
    make_archive,
    make_sdist,
    pin_archive,
    sha256,
    tree_id_of,
)
from helpers.project import (
    GOOD_MESSAGE,
    Checkout,
    Interrupted,
    message,
    restore_commands,
    series_names,
    stop_after,
)
from verl_patches.testing.pytest_run import outcomes_of, parse

# The repository's root: its Makefile, ci/, .github/ and src/.
ROOT = Path(__file__).resolve().parents[2]
# Hand-made input files of the tests (tests/data/).
DATA = ROOT / "tests" / "data"


def junit_outcomes(xml: str) -> dict[str, str]:
    """The outcome per test (classname::name) of a junit XML document, as the tool reads it."""
    return outcomes_of(parse(xml)[0])


__all__ = [
    "BASE_FILES",
    "DATA",
    "FAKE_COMMIT",
    "GOOD_MESSAGE",
    "ROOT",
    "SETUP_PY",
    "Checkout",
    "Interrupted",
    "git_tree_id",
    "junit_outcomes",
    "make_archive",
    "make_sdist",
    "message",
    "pin_archive",
    "restore_commands",
    "series_names",
    "sha256",
    "stop_after",
    "tree_id_of",
]
