"""rebase --onto X and the upstream trailers: Applied-Upstream drops a patch X has, a backport that X fixed is
dropped (not carried as its tests), compare takes Applied-Upstream as the reason a newer queue lacks a patch;
--tag-archive pins a new tag-archive base from its download."""

from __future__ import annotations

import re

import pytest
from helpers import FAKE_COMMIT, make_archive, make_sdist, tree_id_of
from helpers.bases import REPO_ONLY, commit, tree_of
from helpers.clamp import CPU_TEST, FIXED, GPU_TEST, UPSTREAM_OWN_FIX, commit_files, message, rebase

PR = "https://github.com/verl-project/verl/pull/1"
BACKPORT = (
    "[megatron] fix: clamp negative values (backport of verl#1)",
    f"Origin: backport, {PR}\nForwarded: not-needed",
)
CLAMP_FILES = {
    "verl/models/clamp.py": FIXED,
    "tests/models/test_clamp_on_cpu.py": CPU_TEST,
    "tests/models/test_clamp_on_gpu.py": GPU_TEST,
}
NOTES = {"docs/notes.md": "notes\n"}


def add(checkout, subject: str, trailers: str, files=CLAMP_FILES) -> None:
    extra = "" if files is CLAMP_FILES else "Prove-Exempt: x\n"
    commit_files(checkout, files, message(subject, trailers, extra))


def queue(checkout) -> list[str]:
    """The patches of the queue `rebase --write` made: patches/1.1.0."""
    return sorted(p.name for p in (checkout.root / "patches" / "1.1.0").glob("*.patch"))


@pytest.mark.parametrize(
    ("landed", "dropped"),
    [("1.1.0", True), (f"1.0.5, {PR}", True), ("1.2.0", False), (PR, False)],
)
def test_applied_upstream_in_the_new_release_drops_the_patch(lifecycle, tmp_path, capsys, landed, dropped):
    add(lifecycle, "[megatron] fix: clamp negative values", f"Forwarded: {PR}\nApplied-Upstream: {landed}")
    add(lifecycle, "[misc] feat: add notes", "Forwarded: no", NOTES)
    rows, out, rc = rebase(lifecycle, tmp_path, capsys, UPSTREAM_OWN_FIX)
    assert rc == 0, out
    row = rows["[megatron] fix: clamp negative values"]
    version = landed.split(",")[0]
    if dropped:
        assert "applied upstream" in row and row.rstrip().endswith("fixed upstream: dropped")
        assert f"its trailer 'Applied-Upstream: {landed}' says verl {version} has it, and {version} <= 1.1.0: " in out
        assert queue(lifecycle) == ["misc-feat-add-notes.patch"]
    else:  # the trailer does not say 1.1.0 has it: the behavioural check decides, as without it
        assert "conflict" in row and "fixed upstream: carried as tests only" in row
        assert queue(lifecycle) == ["megatron-test-clamp-negative-values.patch", "misc-feat-add-notes.patch"]
        carried = (lifecycle.root / "patches" / "1.1.0" / queue(lifecycle)[0]).read_text()
        assert "\nApplied-Upstream: 1.1.0" + (f", {PR}" if landed == PR else "") + "\n" in carried
    assert "applies cleanly" in rows["[misc] feat: add notes"]
    assert lifecycle.cli("apply", "--force") == 0 and lifecycle.cli("check") == 0


@pytest.mark.parametrize(
    ("clamp", "tests_upstream", "result", "tests"),
    [
        (UPSTREAM_OWN_FIX, False, "conflict", "pass (1 passed"),  # 1.1.0 fixed it in its own way
        (FIXED, True, "already upstream", "pass (1 passed"),  # 1.1.0 took the change as it is
    ],
    ids=["fixed-its-own-way", "taken-as-it-is"],
)
def test_a_backport_that_the_new_release_fixed_is_dropped(lifecycle, tmp_path, capsys, clamp, tests_upstream, result,
                                                          tests):  # fmt: skip
    add(lifecycle, *BACKPORT)
    add(lifecycle, "[misc] feat: add notes", "Forwarded: no", NOTES)
    upstream_tests = [(p, t) for p, t in CLAMP_FILES.items() if p.startswith("tests/")] if tests_upstream else []
    rows, out, rc = rebase(lifecycle, tmp_path, capsys, clamp, *upstream_tests)
    assert rc == 0, out
    row = rows[BACKPORT[0]]
    assert result in row and tests in row and row.rstrip().endswith("fixed upstream: backport dropped")
    assert f"a backport of {PR}, which verl 1.1.0 has" in out and "dropped from the new queue" in out
    assert queue(lifecycle) == ["misc-feat-add-notes.patch"]  # not carried as tests only


def test_a_backport_whose_tests_still_fail_needs_a_hand_port(lifecycle, tmp_path, capsys):
    add(lifecycle, *BACKPORT)
    rows, out, rc = rebase(lifecycle, tmp_path, capsys, "def clamp(x):\n    return x * 1\n", write=False)
    assert rc == 1
    row = rows[BACKPORT[0]]
    assert "conflict" in row and "fail (1 failed" in row and "no: port by hand" in row
    assert "backport dropped" not in out


@pytest.mark.parametrize(("landed", "explained"), [("1.1.0", True), ("1.0.0", True), ("1.2.0", False)])
def test_compare_takes_applied_upstream_as_why_the_newer_queue_lacks_a_patch(two_bases, capsys, landed, explained):
    for version in ("1.0.0", "1.1.0"):
        assert two_bases.cli("apply", "--base", version) == 0
    tree = tree_of(two_bases, "1.0.0")
    trailers = f"Origin: backport, {PR}\nForwarded: not-needed\nApplied-Upstream: {landed}"
    commit(tree, {"docs/fix.md": "x\n"}, message("[doc] feat: x (backport of verl#1)", trailers, "Prove-Exempt: x\n"))
    assert two_bases.cli("export", "--base", "1.0.0") == 0
    capsys.readouterr()
    assert two_bases.cli("compare", "1.0.0", "1.1.0") == (0 if explained else 1)
    out = capsys.readouterr().out
    assert bool(re.search(rf"missing +Applied-Upstream: {landed}$", out, re.M)) is explained
    assert two_bases.cli("check", "--base", "1.1.0", "--no-apply") == (0 if explained else 1)
    capsys.readouterr()
    assert two_bases.cli("table", "--all") == 0
    (row,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("1  [doc]")]
    assert re.split(r"  +", row)[2:4] == ["not-needed (backport of #1)", landed]


@pytest.mark.parametrize("commit_named", [True, False])
def test_tag_archive_pins_the_new_base_from_its_download(one_archive_base, tmp_path, capsys, commit_named):
    tree = tree_of(one_archive_base, "1.0.0")
    commit(tree, {"docs/notes.md": "notes\n"}, message("[misc] feat: add notes", extra="Prove-Exempt: docs\n"))
    assert one_archive_base.cli("export") == 0
    mirror = tmp_path / "mirror"  # the mirror the fixture set up, as GitHub stands in here
    make = make_archive if commit_named else make_sdist  # an sdist's tarball names no commit
    archive = make(mirror, "1.1.0", {"verl/models/clamp.py": UPSTREAM_OWN_FIX, **REPO_ONLY})
    capsys.readouterr()
    rc = one_archive_base.cli("rebase", "--onto", "1.1.0", "--tag-archive", "v1.1.0", "--write")
    captured = capsys.readouterr()
    declared = (one_archive_base.root / "upstream.toml").read_text()
    if not commit_named:
        assert rc == 1 and "names no commit (git archive writes it as the pax comment" in captured.err
        assert '"1.1.0"' not in declared
        return
    assert rc == 0, captured.err
    assert "- new tag archive: verl-project/verl v1.1.0, tree `" in captured.out and "pinned here" in captured.out
    table = declared.split('[base."1.1.0"]\n', 1)[1]
    assert 'source = "git-archive"\nrepository = "verl-project/verl"\ntag = "v1.1.0"\n' in table
    assert f'commit = "{FAKE_COMMIT}"\ntree = "{tree_id_of(archive, tmp_path)}"\n' in table
    assert one_archive_base.cli("apply", "--base", "1.1.0") == 0  # the pins hold


def test_a_conflicting_patch_without_verl_code_is_left_for_a_hand_port(lifecycle, tmp_path, capsys):
    """Its tests passing on the new base say nothing of upstream having it: there is no code to have."""
    script = {"scripts/run.sh": "echo run\n", "tests/scripts/test_run_on_cpu.py": "def test_run():\n    pass\n"}
    add(lifecycle, "[ci] feat: add a run script", "Forwarded: no", script)
    rows, out, rc = rebase(lifecycle, tmp_path, capsys, UPSTREAM_OWN_FIX, ("scripts/run.sh", "echo other\n"))
    row = rows["[ci] feat: add a run script"]
    assert "conflict" in row and row.rstrip().endswith("no: port by hand") and "carried as tests only" not in out
    assert "changes nothing under verl/" in out and rc == 1
