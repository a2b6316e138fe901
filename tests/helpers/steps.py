"""Synthetic queues: one good patch with its tests; three patches that change verl/models/util.py one step after
another."""

from __future__ import annotations

from helpers.project import GOOD_MESSAGE, Checkout, message

GPU_TEST = "import pytest\n\n\ndef test_gpu():\n    pytest.skip('no gpu')\n"


def add_good_patch(checkout: Checkout) -> None:
    """One commit above the import with a fix, its CPU test and its GPU twin, and a good message."""
    checkout.commit_in_tree("tests/models/test_util_on_cpu.py", "def test_cpu():\n    assert True\n", "wip")
    checkout.commit_in_tree("tests/models/test_util_on_gpu.py", GPU_TEST, "wip")
    checkout.commit_in_tree("verl/models/util.py", "def build_mask(lengths, width):\n    return []\n", "wip")
    base = checkout.user_git("rev-parse", f"upstream/{checkout.version}").strip()
    checkout.user_git("reset", "--soft", base)
    checkout.user_git("commit", "-q", "-F", "-", input=GOOD_MESSAGE)


def export_good_patch(checkout: Checkout) -> None:
    """A queue of that one patch: the tree built, the patch committed in it and exported."""
    assert checkout.cli("apply") == 0
    add_good_patch(checkout)
    assert checkout.cli("export") == 0


def three_patches(checkout: Checkout) -> list[str]:
    """Apply and export a series of three patches that touch the same file one after another."""
    assert checkout.cli("apply") == 0
    for n in (1, 2, 3):
        checkout.commit_in_tree("verl/models/util.py", _util(n), message(f"[megatron] fix: step {n}"))
    assert checkout.cli("export") == 0
    return [ln for ln in (checkout.root / "patches/series").read_text().splitlines() if not ln.startswith("#")]


def _util(n: int) -> str:
    lines = [f"STEP_{i} = {i}\n" for i in range(1, n + 1)]
    return "def build_mask(lengths, width):\n    return [[i < n for i in range(width)] for n in lengths]\n" + "".join(
        lines
    )
