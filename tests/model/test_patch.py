"""Parsing a patch file: headers, trailers, files and changed lines, the end marker; the hand-made patch files
of tests/data/patches/ (a good one, one cut short, one with CRLF line endings, one that is no mbox)."""

from __future__ import annotations

import pytest
from helpers import DATA
from helpers.mbox import END, mbox

from verl_patches.errors import ConfigError
from verl_patches.model.patch import Patch
from verl_patches.model.trailers import Forwarded

PATCHES = DATA / "patches"


def test_patch_parse_reads_headers_trailers_and_files():
    patch = Patch.parse("p.patch", (PATCHES / "good.patch").read_bytes())
    assert patch.subject == "[megatron] fix: a thing"
    assert patch.author == "verl-patches <verl-patches@users.noreply.github.com>"
    assert patch.trailers == [("Forwarded", "no")]
    assert patch.forwarded == Forwarded("no") and patch.origin is None and patch.applied_upstream is None
    assert patch.code_files == ["verl/a.py"]
    assert patch.tests_matching("_on_cpu.py") == ["tests/models/test_a_on_cpu.py"]
    assert patch.added_files == ["verl/a.py", "tests/models/test_a_on_cpu.py"]
    assert patch.changed_lines == {"verl/a.py": 1, "tests/models/test_a_on_cpu.py": 1}
    assert patch.lines_under("verl/") == 1 and patch.lines_under("tests/") == 1
    assert not patch.separator_in_message


def test_changed_lines_count_added_and_removed_lines_of_every_hunk():
    patch = Patch.parse("p.patch", (PATCHES / "two-hunks.patch").read_bytes())
    assert patch.changed_lines == {"verl/a.py": 4}  # -old, +new, +added and +--- not a header


def test_patch_parse_folded_subject():
    patch = Patch.parse("p.patch", mbox(subject="[megatron] fix: a long\n subject line"))
    assert patch.subject == "[megatron] fix: a long subject line"


def test_patch_parse_detects_a_separator_inside_the_message():
    patch = Patch.parse("p.patch", mbox(after_sep="This text was below a --- line of the message.\n"))
    assert patch.separator_in_message


def test_patch_parse_rejects_non_mbox():
    with pytest.raises(ConfigError, match="not a git format-patch"):
        Patch.parse("x.patch", (PATCHES / "not-mbox.patch").read_bytes())


def test_the_end_marker_is_not_part_of_the_patch():
    patch = Patch.parse("p.patch", mbox(files=("verl/a.py", "verl/b.py")))
    assert patch.files == ["verl/a.py", "verl/b.py"] and patch.changed_lines == {"verl/a.py": 1, "verl/b.py": 1}
    assert "verl-patches" not in Patch.parse("p.patch", mbox(files=())).body


END_MARKER_CUTS = {
    "before-the-second-section": lambda d: d[: d.rindex(b"\ndiff --git ") + 1],
    "without-the-marker": lambda d: d.removesuffix(END.encode()),
    "inside-the-marker": lambda d: d[:-5],
    "inside-the-separator": lambda d: d.removesuffix(END.encode()) + b"-- ",
    "another-signature": lambda d: d.removesuffix(END.encode()) + b"-- \n2.39.5\n\n",
    "text-after-the-marker": lambda d: d + b"\n",
}


@pytest.mark.parametrize("cut", list(END_MARKER_CUTS))
def test_a_patch_without_the_end_marker_is_refused(cut):
    data = END_MARKER_CUTS[cut](mbox(files=("verl/a.py", "verl/b.py")))
    with pytest.raises(ConfigError, match=r"p\.patch: may be cut short: it does not end with the end marker") as exc:
        Patch.parse("p.patch", data)
    assert "verl-patches export" in str(exc.value) and "append it" in str(exc.value)


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("cut-short.patch", r"cut short: the section for verl/b\.py ends inside a hunk"),
        ("crlf.patch", r"its lines end in CRLF \(Windows line endings\)"),
    ],
    ids=["cut-short", "crlf"],
)
def test_a_hand_made_broken_patch_file_is_refused_with_what_is_wrong(name, error):
    with pytest.raises(ConfigError, match=error):
        Patch.parse(name, (PATCHES / name).read_bytes())
