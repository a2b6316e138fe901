"""rebase --onto on a synthetic upstream whose tests run in this interpreter: each patch classified, the tests of
fixes made upstream carried, conflicts left for a hand port, the downloaded hash recorded."""

from __future__ import annotations

from helpers import make_sdist, sha256
from helpers.clamp import GPU_TEST, UPSTREAM_OWN_FIX, add_clamp_fix, commit_files, message


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
