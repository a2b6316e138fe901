"""The locks: commands that write patches/ hold one lock for the checkout, whatever build folder they work in (an
export from a second build folder, VERL_PATCHES_BUILD_DIR, waits for one from the first, then sees its changes);
the build lock is named when held, concurrent applies wait for each other, a killed command's lock file does not
block."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys

from helpers import message
from helpers.steps import three_patches


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


# -- 8: the lock ------------------------------------------------------------------------------------------------
def test_a_held_lock_is_named_in_the_error(checkout):
    from verl_patches.queue import lock

    with lock.held(checkout.root / "build", "apply --test-holder"):
        proc = checkout.run("apply", env={"VERL_PATCHES_LOCK_TIMEOUT": "0.3"})
    assert proc.returncode == 1
    assert f"pid {os.getpid()}" in proc.stderr and "apply --test-holder" in proc.stderr
    assert not (checkout.tree).exists()


def test_concurrent_applies_wait_for_each_other(checkout):
    three_patches(checkout)
    (checkout.root / "patches/series").write_text((checkout.root / "patches/series").read_text() + "# changed\n")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "verl_patches", "apply", "-C", str(checkout.root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert [rc for rc, _ in results] == [0, 0, 0], results
    assert checkout.user_git("status", "--porcelain") == ""
    assert checkout.cli("status") == 0


def test_a_lock_file_left_by_a_killed_command_does_not_block(checkout):
    (checkout.root / "build").mkdir()
    (checkout.root / "build/verl-patches.lock").write_text('{"pid": 999999, "host": "x", "command": "apply"}\n')
    assert checkout.cli("apply") == 0
