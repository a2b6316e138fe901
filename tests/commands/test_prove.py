"""prove on a synthetic upstream whose tests run in this interpreter: a proven patch (and the cache), tests that pass
without the fix, a series that is not bisectable, an exempt patch."""

from __future__ import annotations

from helpers.clamp import BUGGY, CPU_TEST, GPU_TEST, add_clamp_fix, commit_files, message


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
