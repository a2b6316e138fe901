"""Commands that write patches/ hold one lock for the checkout, whatever build folder they work in: an export
from a second build folder (VERL_PATCHES_BUILD_DIR) waits for one from the first, then sees its changes."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys

from helpers import message


def test_an_export_from_another_build_folder_waits_for_the_queue_lock(checkout, monkeypatch):
    monkeypatch.setenv("VERL_PATCHES_BUILD_DIR", "build-b")
    assert checkout.cli("apply") == 0
    tree_b = checkout.root / "build-b" / checkout.version / "verl"
    (tree_b / "verl" / "b.py").write_text("B = 1\n")
    subprocess.run(["git", "-C", str(tree_b), "add", "verl/b.py"], check=True)
    subprocess.run(["git", "-C", str(tree_b), "commit", "-q", "-m", message("[megatron] fix: b")], check=True)
    (checkout.root / "build").mkdir()
    with open(checkout.root / "build" / "queue.lock", "w") as held:  # another command's, in the default build folder
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = subprocess.run(
            [sys.executable, "-m", "verl_patches", "export", "-C", str(checkout.root)],
            capture_output=True,
            text=True,
            env={**os.environ, "VERL_PATCHES_LOCK_TIMEOUT": "0.3"},
            timeout=120,
        )
    assert proc.returncode == 1, proc.stdout
    assert f"{checkout.root / 'build' / 'queue.lock'} is held by" in proc.stderr
    assert (checkout.root / "patches" / "series").read_text() == "# series\n"  # nothing written while held
