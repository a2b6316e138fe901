"""A queue of three patches that change verl/models/util.py one step after another."""

from __future__ import annotations

from helpers.project import Checkout, message


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
