"""Fault injection: `apply`, `export` and `apply --force` are interrupted by SIGINT, SIGTERM or SIGKILL
(to the whole process group, as a terminal's Ctrl-C does) after a random delay; re-running the same
command must then succeed without manual steps, and no committed, exported or backed-up work may be lost.

Deterministic seed; bounded count and time. The figures appear in pytest's terminal summary."""

from __future__ import annotations

import collections
import os
import random
import signal
import subprocess
import sys
import time

from conftest import GOOD_MESSAGE, Checkout

SEED = 20261130
ATTEMPTS = 30
TIME_BUDGET_S = 45.0
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
    subject = f"[megatron] fix: add {marker}"
    message = GOOD_MESSAGE.replace("[megatron] fix: build boolean masks in build_mask", subject)
    checkout.commit_in_tree(f"verl/{marker}.py", f'MARKER = "{marker}"\n', message)


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
    for folder in sorted((checkout.root / "build/backups").glob("*")):
        bundle = folder / "tree.bundle"
        if (folder / "backup.json").exists() and bundle.exists():
            proc = subprocess.run(["git", "bundle", "list-heads", str(bundle)], capture_output=True)
            if proc.returncode != 0 or not proc.stdout:
                bad.append(folder.name)
    return bad


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
        if time.monotonic() - began > TIME_BUDGET_S:
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
        f"{len(markers)} markers; backups: {len(list((checkout.root / 'build/backups').glob('*/backup.json')))}"
    )
    assert not failures, "\n".join(failures)
    assert lost_total == 0
    assert injected >= MIN_INJECTED, f"only {injected} interrupts landed while a command ran"
