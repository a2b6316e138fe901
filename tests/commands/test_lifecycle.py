"""prove, rebase and range-diff on a synthetic upstream whose tests run in this interpreter."""

from __future__ import annotations

import re
import subprocess

from helpers import make_sdist, sha256
from helpers.clamp import BUGGY, CPU_TEST, GPU_TEST, UPSTREAM_OWN_FIX, add_clamp_fix, commit_files, message

from verl_patches.model.patch import END_MARKER


def test_prove_accepts_a_proven_patch_and_caches(lifecycle, capsys):
    add_clamp_fix(lifecycle)
    assert lifecycle.cli("export") == 0
    capsys.readouterr()
    assert lifecycle.cli("prove") == 0
    out = capsys.readouterr().out
    row = [ln for ln in out.splitlines() if "test_clamp_on_cpu.py" in ln][0]
    assert row.split()[-3:] == ["yes", "yes", "-"]
    assert "0 with violations; 2 pytest run(s), 0 cached" in out
    assert lifecycle.cli("prove") == 0
    assert "0 pytest run(s), 2 cached" in capsys.readouterr().out


def test_prove_rejects_tests_that_pass_without_the_fix(lifecycle, capsys):
    commit_files(
        lifecycle,
        {
            "verl/models/clamp.py": BUGGY + "\n# a comment\n",
            "tests/models/test_clamp_on_cpu.py": CPU_TEST.replace("clamp(-1) == 0", "clamp(-1) == -1"),
            "tests/models/test_clamp_on_gpu.py": GPU_TEST,
        },
        message("[megatron] fix: a fix whose test cannot fail"),
    )
    assert lifecycle.cli("export") == 0
    capsys.readouterr()
    assert lifecycle.cli("prove") == 1
    out = capsys.readouterr().out
    assert "do not fail without its code" in out


def test_prove_rejects_a_series_that_is_not_bisectable(lifecycle, capsys):
    add_clamp_fix(lifecycle)
    commit_files(
        lifecycle,
        {
            "verl/models/clamp.py": BUGGY + "\n\ndef other():\n    return 1\n",
            "tests/models/test_other_on_cpu.py": "from verl.models.clamp import other\n\n\ndef test_other():\n"
            "    assert other() == 1\n",
            "tests/models/test_other_on_gpu.py": GPU_TEST,
        },
        message("[megatron] feat: add other (and break clamp)"),
    )
    assert lifecycle.cli("export") == 0
    capsys.readouterr()
    assert lifecycle.cli("prove") == 1
    out = capsys.readouterr().out
    assert "earlier patches' tests fail after it" in out


def test_exempt_patch_skips_the_failing_step(lifecycle, capsys):
    commit_files(
        lifecycle,
        {"tests/models/test_guard_on_cpu.py": "def test_guard():\n    assert True\n"},
        message("[tests] test: guard", extra="Prove-Exempt: tests of behaviour verl already has\n"),
    )
    assert lifecycle.cli("export") == 0
    capsys.readouterr()
    assert lifecycle.cli("prove") == 0
    assert "exempt" in capsys.readouterr().out


def test_rebase_classifies_and_carries_tests_of_fixes_made_upstream(lifecycle, tmp_path, capsys):
    add_clamp_fix(lifecycle)
    commit_files(
        lifecycle,
        {"verl/notes.py": "NOTE = 1\n", "tests/models/test_notes_on_cpu.py": "def test_n():\n    pass\n",
         "tests/models/test_notes_on_gpu.py": GPU_TEST},
        message("[misc] feat: add notes"),
    )  # fmt: skip
    commit_files(lifecycle, {"verl/extra.py": "EXTRA = 2\n"}, message("[misc] feat: add extra"))
    assert lifecycle.cli("export") == 0
    # 1.1.0 fixed clamp in its own way and took "extra" verbatim.
    new = make_sdist(
        tmp_path / "new", "1.1.0", {"verl/models/clamp.py": UPSTREAM_OWN_FIX, "verl/extra.py": "EXTRA = 2\n"}
    )
    (lifecycle.cache / new.name).write_bytes(new.read_bytes())
    report = tmp_path / "report.md"
    capsys.readouterr()
    rc = lifecycle.cli("rebase", "--onto", "1.1.0", "--sha256", sha256(new), "--report", str(report), "--write")
    out = capsys.readouterr().out
    assert rc == 0, out
    text = report.read_text()
    rows = {ln.split("  ")[1].strip(): ln for ln in text.splitlines() if ln[:1].isdigit()}
    assert "conflict" in rows["[megatron] fix: clamp negative values"]
    assert "fixed upstream: carried as tests only" in rows["[megatron] fix: clamp negative values"]
    assert "applies cleanly" in rows["[misc] feat: add notes"]
    assert "already upstream" in rows["[misc] feat: add extra"]
    assert '[base."1.1.0"]\nname = "verl"\nqueue = "patches/1.1.0"' in (lifecycle.root / "upstream.toml").read_text()
    written = lifecycle.root / "patches" / "1.1.0"
    names = sorted(p.name for p in written.glob("*.patch"))
    assert names == ["megatron-test-clamp-negative-values.patch", "misc-feat-add-notes.patch"]
    carried = (written / names[0]).read_text()
    trailers = carried.split("which pass on that release and guard the fix.\n\n", 1)[1].split("\n---\n", 1)[0]
    assert trailers.splitlines()[:3] == [
        "Forwarded: no", "Bug: https://github.com/verl-project/verl/issues/1", "Applied-Upstream: 1.1.0"
    ]  # fmt: skip
    assert "verl/models/clamp.py" not in carried and "tests/models/test_clamp_on_cpu.py" in carried
    # The rewritten series is a valid, applying series on the new base; the one finding is the patch 1.1.0 has,
    # which the older queue's patch does not say yet (an Applied-Upstream trailer would).
    assert lifecycle.cli("apply", "--force") == 0
    capsys.readouterr()
    assert lifecycle.cli("check") == 1
    out = capsys.readouterr().out
    assert "check: 1 finding(s) in a series of 2 patch(es)" in out, out
    assert "\n1.0.0:misc-feat-add-extra.patch: drift: has no counterpart in 1.1.0 -> " in out, out


def test_rebase_write_lists_unresolved_conflicts_for_a_hand_port(lifecycle, tmp_path, capsys):
    add_clamp_fix(lifecycle)
    assert lifecycle.cli("export") == 0
    # 1.1.0 changed clamp incompatibly and did not fix the bug: the patch's tests fail there.
    new = make_sdist(tmp_path / "new", "1.1.0", {"verl/models/clamp.py": "def clamp(x):\n    return x * 1\n"})
    (lifecycle.cache / new.name).write_bytes(new.read_bytes())
    before = lifecycle.patches()
    capsys.readouterr()
    assert lifecycle.cli("rebase", "--onto", "1.1.0", "--sha256", sha256(new), "--write") == 1
    captured = capsys.readouterr()
    assert "conflict" in captured.out and "fail (1 failed" in captured.out and "test_clamp" in captured.out
    assert "1 patch(es) of patches need a hand port onto 1.1.0: listed in patches/1.1.0/to-port" in captured.out
    assert lifecycle.patches() == before  # the old queue as it was
    written = lifecycle.root / "patches" / "1.1.0"
    assert not list(written.glob("*.patch"))  # the conflicting patch is not carried
    to_port = (written / "to-port").read_text()
    assert "megatron-fix-clamp-negative-values.patch" in to_port and "test_clamp" in to_port


def test_range_diff_between_two_refs(lifecycle, capsys):
    add_clamp_fix(lifecycle)
    assert lifecycle.cli("export") == 0
    project = ["git", "-C", str(lifecycle.root)]
    subprocess.run([*project, "init", "-q"], check=True)
    subprocess.run([*project, "add", "-A"], check=True)
    subprocess.run([*project, "commit", "-qm", "v1"], check=True)
    lifecycle.user_git("commit", "-q", "--amend", "-F", "-", input=message("[megatron] fix: clamp negative values v2"))
    assert lifecycle.cli("export") == 0
    capsys.readouterr()
    assert lifecycle.cli("range-diff", "HEAD") == 0
    out = capsys.readouterr().out
    assert "1:" in out and "! 1:" in out and "clamp negative values v2" in out


def test_range_diff_against_a_ref_whose_patches_predate_the_end_marker(lifecycle, capsys):
    add_clamp_fix(lifecycle)
    assert lifecycle.cli("export") == 0
    exported = {p: p.read_bytes() for p in (lifecycle.root / "patches").glob("*.patch")}
    for path, data in exported.items():  # as export wrote them before it ended them with its marker
        path.write_bytes(data.removesuffix(END_MARKER[1:]))
    project = ["git", "-C", str(lifecycle.root)]
    subprocess.run([*project, "init", "-q"], check=True)
    subprocess.run([*project, "add", "-A"], check=True)
    subprocess.run([*project, "commit", "-qm", "v1"], check=True)
    for path, data in exported.items():
        path.write_bytes(data)
    lifecycle.user_git("commit", "-q", "--amend", "-F", "-", input=message("[megatron] fix: clamp negative values v2"))
    assert lifecycle.cli("export") == 0
    capsys.readouterr()
    assert lifecycle.cli("range-diff", "HEAD") == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "1:" in out and "! 1:" in out and "clamp negative values v2" in out
    (path,) = (lifecycle.root / "patches").glob("*.patch")
    path.write_bytes(path.read_bytes().removesuffix(END_MARKER[1:]))  # the working copy itself must have it
    assert lifecycle.cli("range-diff", "HEAD") == 1
    assert path.name in (err := capsys.readouterr().err) and "end marker" in err, err


def test_range_diff_against_a_ref_whose_queue_is_empty_lists_the_added_patches(lifecycle, capsys):
    project = ["git", "-C", str(lifecycle.root)]
    subprocess.run([*project, "init", "-q"], check=True)
    subprocess.run([*project, "add", "-A"], check=True)
    subprocess.run([*project, "commit", "-qm", "v1"], check=True)
    add_clamp_fix(lifecycle)
    assert lifecycle.cli("export") == 0
    capsys.readouterr()
    assert lifecycle.cli("range-diff", "HEAD") == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert re.search(r"^-:  ------- > 1:  [0-9a-f]{7} \[megatron\] fix: clamp negative values$", out, re.M), out


def test_rebase_without_a_pin_records_the_downloaded_hash(lifecycle, tmp_path, capsys):
    notes = message("[misc] feat: add notes", extra="Prove-Exempt: x\n")
    commit_files(lifecycle, {"verl/notes.py": "NOTE = 1\n"}, notes)
    assert lifecycle.cli("export") == 0
    new = make_sdist(tmp_path / "new", "1.1.0")
    (lifecycle.cache / new.name).write_bytes(new.read_bytes())
    capsys.readouterr()
    assert lifecycle.cli("rebase", "--onto", "1.1.0") == 0
    out = capsys.readouterr().out
    assert f"`{sha256(new)}` (not pinned before: recorded from the download" in out
    assert "applies cleanly" in out
