"""Fault injection: `apply`, `export` and `apply --force` are interrupted by SIGINT, SIGTERM or SIGKILL
(to the whole process group, as a terminal's Ctrl-C does) after a random delay; re-running the same
command must then succeed without manual steps, and no committed, exported or backed-up work may be lost.
The queue writer is stopped at each of its steps, and a check is killed inside its scratch work tree.

Deterministic seed; at most ATTEMPTS commands, and none started after TIME_BUDGET_S once MIN_INJECTED interrupts
have landed (on a slow or shared machine fewer attempts fit in the budget: the test then goes on, up to ATTEMPTS,
until that many have landed). The figures appear in pytest's terminal summary, with the count
of every test marked `attack` (tests/**/test_*.py) tried and survived."""

from __future__ import annotations

import collections
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest
from helpers import Checkout, Interrupted, message, stop_after

from verl_patches.checkout import Project
from verl_patches.model.upstream import Upstream
from verl_patches.queue import new_queue

SEED = 20261130
ATTEMPTS = 30
TIME_BUDGET_S = 45.0  # past it, no new attempt once MIN_INJECTED interrupts have landed
MIN_INJECTED = 10
OPS = (("apply",), ("export",), ("apply", "--force"))
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)


def default_sigint() -> None:
    """Ctrl-C semantics even when pytest runs where SIGINT is ignored (a background job of a script)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def argv(checkout: Checkout, op: tuple[str, ...]) -> list[str]:
    return [sys.executable, "-m", "verl_patches", op[0], "-C", str(checkout.root), *op[1:]]


def run(checkout: Checkout, *op: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv(checkout, op), capture_output=True, text=True)


def commit_marker(checkout: Checkout, marker: str) -> None:
    checkout.commit_in_tree(f"verl/{marker}.py", f'MARKER = "{marker}"\n', message(f"[megatron] fix: add {marker}"))


def markers_found(checkout: Checkout, markers: set[str]) -> set[str]:
    """Markers present in patches/ or in the tree of any branch of build/verl (series, backup/*)."""
    text = b"".join(p.read_bytes() for p in (checkout.root / "patches").glob("*.patch")).decode()
    found = {m for m in markers if m in text}
    refs = checkout.user_git("for-each-ref", "--format=%(objectname)", "refs/heads").split()
    args = ["grep", "-h", "-o", "-F"] + [x for m in sorted(markers - found) for x in ("-e", m)] + refs
    if refs and markers - found:
        proc = subprocess.run(["git", "-C", str(checkout.tree), *args], capture_output=True, text=True)
        found |= {line.rsplit(":", 1)[-1] for line in proc.stdout.splitlines()} & markers
    return found


def bad_bundles(checkout: Checkout) -> list[str]:
    """Finished backups whose bundle git cannot read."""
    bad = []
    for folder in sorted((checkout.build / "backups").glob("*")):
        bundle = folder / "tree.bundle"
        if (folder / "backup.json").exists() and bundle.exists():
            proc = subprocess.run(["git", "bundle", "list-heads", str(bundle)], capture_output=True)
            if proc.returncode != 0 or not proc.stdout:
                bad.append(folder.name)
    return bad


@pytest.mark.attack
def test_interrupted_commands_recover_and_lose_no_work(checkout, fault_figures):
    rng = random.Random(SEED)
    assert checkout.cli("apply") == 0
    markers: set[str] = set()
    for n in range(3):
        marker = f"series-{n:03d}-end"
        commit_marker(checkout, marker)
        markers.add(marker)
    assert checkout.cli("export") == 0
    durations = {}
    for op in OPS:  # how long each command takes here, to spread the interrupts over its whole run
        start = time.monotonic()
        assert run(checkout, *op).returncode == 0
        durations[op] = time.monotonic() - start
    injected, finished_first, recovered, cut_short = 0, 0, 0, 0
    by_signal: collections.Counter[str] = collections.Counter()
    by_op: collections.Counter[str] = collections.Counter()
    failures: list[str] = []
    began = time.monotonic()
    attempts = 0
    for attempt in range(ATTEMPTS):
        if time.monotonic() - began > TIME_BUDGET_S and injected >= MIN_INJECTED:
            break
        attempts += 1
        op = OPS[attempt % len(OPS)]
        marker = f"work-{attempt:03d}-end"
        try:
            if op == ("apply",):  # patches/ changed (as by a pull): apply rebuilds the tree
                with open(checkout.root / "patches/series", "a") as handle:
                    handle.write(f"# note {attempt}\n")
            else:  # committed work in the tree; for --force also an untracked file
                commit_marker(checkout, marker)
                markers.add(marker)
                if op == ("apply", "--force"):
                    (checkout.tree / f"{marker}-untracked.txt").write_text(f"{marker}-untracked\n")
                    markers.add(f"{marker}-untracked")
        except subprocess.CalledProcessError as exc:
            failures.append(f"attempt {attempt}: the build tree is unusable after the previous fault: {exc.stderr}")
            break
        signum = rng.choice(SIGNALS)
        delay = rng.uniform(0.0, durations[op] * 1.2)
        proc = subprocess.Popen(
            argv(checkout, op),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=default_sigint,
        )
        time.sleep(delay)
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signum)
                injected += 1
                by_signal[signal.Signals(signum).name] += 1
                by_op[" ".join(op)] += 1
            except ProcessLookupError:
                finished_first += 1
        else:
            finished_first += 1
        if proc.wait(timeout=60) != 0:
            cut_short += 1
        again = run(checkout, *op)
        status = run(checkout, "status")
        lost = markers - markers_found(checkout, markers)
        broken = bad_bundles(checkout)
        if again.returncode == 0 and status.returncode == 0 and not lost and not broken:
            recovered += 1
        else:
            failures.append(
                f"attempt {attempt} ({' '.join(op)}, {signal.Signals(signum).name} after {delay:.2f}s): "
                f"re-run rc {again.returncode} {again.stderr.strip()[-400:]!r}; status rc {status.returncode} "
                f"{status.stdout.strip()[-400:]!r}; lost {sorted(lost)}; unreadable bundles {broken}"
            )
    lost_total = len(markers - markers_found(checkout, markers))
    fault_figures.append(
        f"seed {SEED}: {attempts} attempts, {injected} faults injected "
        f"({', '.join(f'{k} {v}' for k, v in sorted(by_signal.items()))}; "
        f"{', '.join(f'{k} {v}' for k, v in sorted(by_op.items()))}), {cut_short} commands cut short by them, "
        f"{finished_first} finished before the signal"
    )
    fault_figures.append(
        f"recovered: {recovered} of {attempts} (re-run succeeded, status clean); work lost: {lost_total} of "
        f"{len(markers)} markers; backups: {len(list((checkout.build / 'backups').glob('*/backup.json')))}"
    )
    assert not failures, "\n".join(failures)
    assert lost_total == 0
    assert injected >= MIN_INJECTED, f"only {injected} interrupts landed while a command ran"


# -- the queue writer, killed at each of its steps ---------------------------------------------------------------
@pytest.mark.attack
def test_the_queue_writer_leaves_a_whole_queue_at_every_step(checkout, monkeypatch, fault_figures):
    assert checkout.cli("apply") == 0
    for n in range(3):
        commit_marker(checkout, f"queued-{n}")
    assert checkout.cli("export") == 0
    project = Project(checkout.root)
    old = {p.name: p.read_bytes() for p in project.patches_dir.iterdir()}
    names = project.load_series().names
    new = {name: data for name, data in old.items() if name != names[0]}  # one patch dropped,
    new[names[1]] = old[names[1]].replace(b"MARKER", b"CHANGED_MARKER")  # one changed,
    new["zz-added.patch"], new["series"] = old[names[0]], old["series"].replace(names[0].encode(), b"zz-added.patch")
    upstream = Upstream(name="verl", version="2.0.0")
    steps, whole = 0, 0
    for stop in range(100):
        for path in project.patches_dir.iterdir():
            path.unlink()
        for name, data in old.items():
            (project.patches_dir / name).write_bytes(data)
        wrap = stop_after(stop)
        with monkeypatch.context() as patch:
            for module, name in ((os, "replace"), (os, "unlink"), (os, "rename"), (shutil, "rmtree")):
                patch.setattr(module, name, wrap(getattr(module, name)))
            try:
                new_queue.write(project, upstream, "patches", new, declare=False, force=True)
                finished = True
            except Interrupted:
                finished = False
        steps += 1
        files = {p.name: p.read_bytes() for p in project.patches_dir.iterdir() if not p.name.startswith(".")}
        listed = project.load_series().names
        if all(files.get(name) in (old.get(name), new.get(name)) for name in listed) and project.load_patches():
            whole += 1
        if finished:
            assert files == new
            break
    fault_figures.append(
        f"queue writer (rebase --write --force): stopped at each of {steps} steps, whole queue {whole}"
    )
    assert whole == steps


# -- a killed check leaves a scratch work tree; the next command removes it ----------------------------------------
KILL_IN_SCRATCH = """#!/bin/sh
case "$*" in *verl-patches-scratch-*" am "*) kill -KILL "$PPID"; exit 1 ;; esac
exec "$REAL_GIT" "$@"
"""


@pytest.mark.attack
def test_what_a_killed_check_leaves_is_removed_by_the_next_command(checkout, tmp_path, monkeypatch, fault_figures):
    assert checkout.cli("apply") == 0
    commit_marker(checkout, "checked")
    assert checkout.cli("export") == 0
    shim, tmp = tmp_path / "shim", tmp_path / "tmp"
    for folder in (shim, tmp):
        folder.mkdir()
    (shim / "git").write_text(KILL_IN_SCRATCH)
    (shim / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{shim}:{os.environ['PATH']}", "REAL_GIT": shutil.which("git"), "TMPDIR": str(tmp)}
    proc = subprocess.run(argv(checkout, ("check", "--no-upstream-checks")), env=env, capture_output=True)
    assert proc.returncode == -signal.SIGKILL
    left = [p.name for p in tmp.iterdir()]
    registered = checkout.user_git("worktree", "list", "--porcelain").count("worktree ")
    assert left and registered == 2  # what the kill left
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    assert checkout.cli("status") == 0
    assert list(tmp.iterdir()) == []
    assert checkout.user_git("worktree", "list", "--porcelain").count("worktree ") == 1
    fault_figures.append(
        f"killed check: left {len(left)} temporary folder(s) and a scratch work tree; status removed them"
    )
