"""Odd input and environments: non-ASCII subjects, listings, pipes, relative build dir, sha256 repos,
duplicate series entries, series comments, clashing file names, the table's code count."""

from __future__ import annotations

import os
import subprocess
import sys

from helpers import GOOD_MESSAGE


def message(subject: str) -> str:
    return GOOD_MESSAGE.replace("[megatron] fix: build boolean masks in build_mask", subject)


def series_names(checkout) -> list[str]:
    text = (checkout.root / "patches/series").read_text()
    return [ln.split("#")[0].strip() for ln in text.splitlines() if ln.split("#")[0].strip()]


def test_non_ascii_subjects_in_table_and_check(checkout, capsys):
    assert checkout.cli("apply") == 0
    checkout.commit_in_tree("verl/a.py", "A = 1\n", message("[misc] fix: naïve dates — ü"))
    checkout.commit_in_tree("verl/b.py", "B = 1\n", message("Ünïcode subject"))
    assert checkout.cli("export") == 0
    capsys.readouterr()
    assert checkout.cli("table") == 0
    assert "[misc] fix: naïve dates — ü" in capsys.readouterr().out
    assert checkout.cli("check", "--no-apply") == 1
    assert "subject 'Ünïcode subject' is not in verl's PR-title form" in capsys.readouterr().out


def test_unexported_listing_names_only_the_new_commit(checkout, capsys):
    assert checkout.cli("apply") == 0
    for n in range(4):
        checkout.commit_in_tree(f"verl/m{n}.py", f"M = {n}\n", message(f"[megatron] fix: old {n}"))
    assert checkout.cli("export") == 0
    checkout.commit_in_tree("verl/new.py", "N = 1\n", message("[megatron] fix: the new one"))
    capsys.readouterr()
    assert checkout.cli("status") == 1
    out = capsys.readouterr().out
    assert "new: " in out and "[megatron] fix: the new one" in out
    assert "old 0" not in out and "old 3" not in out
    assert "['" not in out and "[]" not in out


def test_piping_into_a_closed_reader_is_quiet(checkout):
    assert checkout.cli("apply") == 0
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `| head` that has already exited
    proc = subprocess.run(
        [sys.executable, "-m", "verl_patches", "table", "-C", str(checkout.root)],
        stdout=write_end,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(write_end)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.returncode != 0


def test_relative_build_dir_is_relative_to_the_checkout(checkout, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("VERL_PATCHES_BUILD_DIR", "out/build")
    assert checkout.cli("apply") == 0
    assert (checkout.root / "out/build/1.0.0/verl/.git").is_dir()
    assert not (elsewhere / "out").exists()


def test_git_default_hash_does_not_change_the_patches(checkout, monkeypatch):
    assert checkout.cli("apply") == 0
    checkout.commit_in_tree("verl/a.py", "A = 1\n", message("[megatron] fix: a"))
    assert checkout.cli("export") == 0
    before = checkout.patches()
    subprocess.run(["rm", "-rf", str(checkout.root / "build")], check=True)
    monkeypatch.setenv("GIT_DEFAULT_HASH", "sha256")
    assert checkout.cli("apply") == 0
    assert checkout.cli("export") == 0
    assert checkout.patches() == before


def test_duplicate_series_entry_is_named(checkout, capsys):
    assert checkout.cli("apply") == 0
    checkout.commit_in_tree("verl/a.py", "A = 1\n", message("[megatron] fix: a"))
    assert checkout.cli("export") == 0
    (name,) = series_names(checkout)
    with open(checkout.root / "patches/series", "a") as handle:
        handle.write(f"{name}\n")
    capsys.readouterr()
    assert checkout.cli("apply") == 1
    err = capsys.readouterr().err
    assert f"patches/series lists {name} more than once" in err and "CONFLICT" not in err


def test_export_keeps_the_comments_of_series(checkout):
    assert checkout.cli("apply") == 0
    for n in range(3):
        checkout.commit_in_tree(f"verl/m{n}.py", f"M = {n}\n", message(f"[megatron] fix: part {n}"))
    assert checkout.cli("export") == 0
    a, b, c = series_names(checkout)
    text = f"# head\n\n# backports\n{a}\n# follow-ups: keep together\n{b}  # inline note\n{c}\n# end\n"
    (checkout.root / "patches/series").write_text(text)
    assert checkout.cli("apply") == 0
    assert checkout.cli("export") == 0
    assert (checkout.root / "patches/series").read_text() == text  # unchanged tree: byte-identical
    base = checkout.user_git("rev-parse", "upstream/1.0.0").strip()
    checkout.user_git("-c", "sequence.editor=sed -i -e '1{h;d}' -e '2G'", "rebase", "-q", "-i", base)  # swap 1, 2
    assert checkout.cli("export") == 0
    assert (checkout.root / "patches/series").read_text() == (
        f"# head\n\n# follow-ups: keep together\n{b}  # inline note\n# backports\n{a}\n{c}\n# end\n"
    )


def test_clashing_file_names_do_not_swap_on_reorder(checkout):
    assert checkout.cli("apply") == 0
    checkout.commit_in_tree("verl/a.py", "A = 1\n", message("[megatron] fix: mask (a)"))
    checkout.commit_in_tree("verl/b.py", "B = 1\n", message("[megatron] fix: mask [a]"))
    assert checkout.cli("export") == 0
    before = {name: data for name, data in checkout.patches().items() if name != "series"}
    assert len(before) == 2
    base = checkout.user_git("rev-parse", "upstream/1.0.0").strip()
    checkout.user_git("-c", "sequence.editor=sed -i -e '1{h;d}' -e '2G'", "rebase", "-q", "-i", base)
    assert checkout.cli("export") == 0
    after = {name: data for name, data in checkout.patches().items() if name != "series"}
    assert sorted(after) == sorted(before)
    for name, data in after.items():
        subject = [ln for ln in data.split(b"\n") if ln.startswith(b"Subject:")]
        assert subject == [ln for ln in before[name].split(b"\n") if ln.startswith(b"Subject:")]


def test_table_does_not_count_test_package_files_as_code(checkout, capsys):
    assert checkout.cli("apply") == 0
    for path in ("tests/models/__init__.py", "tests/models/test_x_on_cpu.py", "verl/models/util.py"):
        target = checkout.tree / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("X = 1\n")
        checkout.user_git("add", path)
    checkout.user_git("commit", "-q", "-F", "-", input=message("[megatron] fix: counted"))
    assert checkout.cli("export") == 0
    capsys.readouterr()
    assert checkout.cli("table") == 0
    # util.py: its two lines replaced by one (3 code lines); the two test files: one line each
    assert "changed lines: 3 in verl/, 2 in tests/" in capsys.readouterr().out
