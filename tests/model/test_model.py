"""The data model: series, patch parsing, upstream pin, the upstream trailers."""

from __future__ import annotations

import pytest
from helpers.mbox import DEFAULT_BODY, END, mbox
from hypothesis import given
from hypothesis import strategies as st

from verl_patches.checkout import tomllib
from verl_patches.errors import ConfigError
from verl_patches.model.bases import parse_bases
from verl_patches.model.patch import Patch, parse_trailers
from verl_patches.model.series import Series, slug, unique_names
from verl_patches.model.trailers import AppliedUpstream, Forwarded, GitHubRef, Origin
from verl_patches.model.upstream import Upstream, local_version
from verl_patches.queue import new_queue


def test_series_parse_ignores_comments_and_keeps_header():
    series = Series.parse("# head\n# more\n\na.patch\n# mid\nb.patch  # trailing\n")
    assert series.names == ["a.patch", "b.patch"]
    assert series.header == "# head\n# more\n\n"
    assert Series.parse(series.format()).names == series.names
    assert series.format() == "# head\n# more\n\na.patch\n# mid\nb.patch  # trailing\n"


def test_series_rejects_bad_names_with_line_number():
    with pytest.raises(ConfigError, match=r"series:2: 'not a patch'"):
        Series.parse("a.patch\nnot a patch\n")


def test_series_duplicates():
    assert Series.parse("a.patch\nb.patch\na.patch\n").duplicates() == ["a.patch"]


@given(st.lists(st.from_regex(r"[a-z0-9][a-z0-9._-]{0,20}\.patch", fullmatch=True), max_size=8))
def test_series_round_trip(names):
    assert Series.parse(Series(names=names).format()).names == names


@given(st.text(max_size=200))
def test_slug_is_a_safe_file_stem(subject):
    stem = slug(subject)
    assert stem and len(stem) <= 64
    assert all(c.isascii() and (c.isalnum() or c == "-") for c in stem)


def test_unique_names_disambiguate_by_text_not_order():
    names = unique_names(["[a] fix: x", "[a] fix: x", "[b] fix: y"], ["one", "two", "three"])
    assert names[2] == "b-fix-y.patch"
    assert names[0] != names[1] and all(n.startswith("a-fix-x-") for n in names[:2])
    assert unique_names(["[a] fix: x", "[a] fix: x"], ["two", "one"]) == [names[1], names[0]]
    assert unique_names(["[a] fix: x", "[a] fix: x"], ["same", "same"])[1].endswith("-2.patch")


def test_patch_parse_reads_headers_trailers_and_files():
    patch = Patch.parse("p.patch", mbox(files=("verl/a.py", "tests/models/test_a_on_cpu.py")))
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
    diff = (
        "diff --git a/verl/a.py b/verl/a.py\nindex 1111111..2222222 100644\n--- a/verl/a.py\n+++ b/verl/a.py\n"
        "@@ -1,3 +1,3 @@\n keep\n-old\n+new\n keep\n@@ -10,1 +10,3 @@\n keep\n+added\n+--- not a header\n"
    )
    head = mbox(files=()).decode().removesuffix(END).rstrip("\n")
    patch = Patch.parse("p.patch", f"{head}\n{diff}{END}".encode())
    assert patch.changed_lines == {"verl/a.py": 4}  # -old, +new, +added and +--- not a header


def test_patch_parse_folded_subject():
    patch = Patch.parse("p.patch", mbox(subject="[megatron] fix: a long\n subject line"))
    assert patch.subject == "[megatron] fix: a long subject line"


def test_patch_parse_detects_a_separator_inside_the_message():
    patch = Patch.parse("p.patch", mbox(after_sep="This text was below a --- line of the message.\n"))
    assert patch.separator_in_message


def test_patch_parse_rejects_non_mbox():
    with pytest.raises(ConfigError, match="not a git format-patch"):
        Patch.parse("x.patch", b"diff --git a/x b/x\n")


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


def test_trailers_only_from_last_paragraph():
    assert parse_trailers("Subject\n\nKey: not a trailer\nplain text\n") == []
    assert parse_trailers("Body.\n\nA-B: one\n  continued\nC: two\n") == [("A-B", "one continued"), ("C", "two")]


PR = "https://github.com/verl-project/verl/pull/7372"


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("no", Forwarded("no")),
        ("not-needed", Forwarded("not-needed")),
        (PR, Forwarded(PR, GitHubRef(PR, "verl-project/verl", "pull", 7372))),
        ("yes", None),
        ("No", None),
        ("https://github.com/verl-project/verl/issues/1", None),  # an issue is not what was sent
        ("verl-project/verl#7372", None),
    ],
)
def test_forwarded_values(value, parsed):
    assert Forwarded.parse(value) == parsed


@pytest.mark.parametrize(
    ("value", "number"),
    [(f"backport, {PR}", 7372), (f"backport,{PR}/", 7372), (f"upstream, {PR}", None), ("backport", None),
     (f"backport, {PR.replace('pull', 'issues')}", None), ("backport, verl-project/verl#7372", None)],
)  # fmt: skip
def test_origin_is_a_backport_of_a_pull_request(value, number):
    origin = Origin.parse(value)
    assert (origin.pr.number if origin else None) == number


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("0.9.1", AppliedUpstream("0.9.1", None)),
        (f"0.9.1, {PR}", AppliedUpstream("0.9.1", PR)),
        ("https://github.com/verl-project/verl/commit/abc", AppliedUpstream(None, "https://github.com/verl-project/verl/commit/abc")),
        ("soon", None),
        ("0.9.1, #7372", None),
        ("Fixed-in 0.9.1", None),
    ],
)  # fmt: skip
def test_applied_upstream_values(value, parsed):
    assert AppliedUpstream.parse(value) == parsed


@pytest.mark.parametrize(
    ("landed", "release", "has_it"),
    [("0.9.1", "0.9.1", True), ("0.9.1", "0.10.0", True), ("0.9.2", "0.9.1", False), ("0.10.0", "0.9.10", False)],
)
def test_applied_upstream_compares_versions_not_strings(landed, release, has_it):
    assert AppliedUpstream(landed, None).released_by(release) is has_it
    assert not AppliedUpstream(None, PR).released_by(release)


def test_github_refs_are_short_for_verl_and_long_elsewhere():
    assert GitHubRef.parse(PR).short == "#7372"
    assert GitHubRef.parse("https://github.com/NVIDIA/Megatron-LM/issues/5").short == "NVIDIA/Megatron-LM#5"
    assert GitHubRef.parse("https://gitlab.com/a/b/pull/1") is None


def test_patch_reads_its_upstream_trailers():
    body = (
        "Problem: p.\n\nFix: f.\n\nTests: t.\n\nBug: https://github.com/verl-project/verl/issues/9\n"
        f"Origin: backport, {PR}\nForwarded: not-needed\nApplied-Upstream: 0.9.1, {PR}\nBug: not a url\n"
    )
    patch = Patch.parse("p.patch", mbox(subject="[megatron] fix: x (backport of verl#7372)", body=body))
    assert patch.origin.pr.number == patch.backport_of == 7372
    assert patch.forwarded == Forwarded("not-needed") and patch.applied_upstream == AppliedUpstream("0.9.1", PR)
    assert [ref.number for ref in patch.bugs] == [9]
    assert patch.message_without_trailers == "Problem: p.\n\nFix: f.\n\nTests: t."


def upstream_of(table: dict) -> Upstream:
    return Upstream.from_table(table, "upstream.toml", '[base."0.9.0"]')


def test_upstream_from_table_validates():
    sdist = {"name": "verl", "version": "0.9.0", "source": "pypi-sdist"}
    upstream = upstream_of({**sdist, "sha256": "A" * 64})
    assert upstream.sha256 == "a" * 64 and upstream.tag == "upstream/0.9.0"
    assert upstream.sdist_filename == "verl-0.9.0.tar.gz" and not upstream.is_archive
    with pytest.raises(ConfigError, match="sha256"):
        upstream_of({**sdist, "sha256": "abc"})
    with pytest.raises(ConfigError, match="PEP 440"):
        upstream_of({**sdist, "version": "nine", "sha256": "a" * 64})
    with pytest.raises(ConfigError, match="version"):
        upstream_of({"name": "verl", "source": "pypi-sdist", "sha256": "a" * 64})
    kinds = "git-archive, pypi-sdist, sdist-over-archive"
    with pytest.raises(ConfigError, match=f"source must be one of {kinds}, not 'wheel'"):
        upstream_of({**sdist, "source": "wheel", "sha256": "a" * 64})
    # Pins written before source kinds existed (older refs, e.g. for range-diff) are sdists.
    older = upstream_of({"name": "verl", "version": "0.9.0", "sha256": "a" * 64})
    assert older == upstream.__class__(name="verl", version="0.9.0", sha256="a" * 64, source="pypi-sdist")


ARCHIVE = {
    "name": "verl",
    "version": "0.9.0",
    "source": "git-archive",
    "repository": "verl-project/verl",
    "tag": "v0.9.0",
    "commit": "483b8a009ba3a97563edee3a19887e4862b8094a",
    "tree": "250f5bc8f4f6d7277c1e8a8823a3f01e058551a6",
}


def test_archive_upstream_round_trips_and_names_github():
    upstream = upstream_of(ARCHIVE)
    assert upstream.is_archive and upstream.tree == ARCHIVE["tree"]
    assert upstream.archive_filename == "verl-0.9.0.tar.gz"
    assert upstream.archive_url == "https://github.com/verl-project/verl/archive/refs/tags/v0.9.0.tar.gz"
    (base,) = parse_bases(tomllib.loads(new_queue.table(upstream, "patches/0.9.0")))
    assert base.upstream == upstream and base.queue == "patches/0.9.0"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"tree": None}, "needs string keys tree"),
        ({"tree": "abc"}, "tree 'abc' is not"),
        ({"repository": "x"}, "owner/name"),
    ],
)
def test_archive_upstream_needs_a_tree_pin(change, message):
    table = {k: v for k, v in {**ARCHIVE, **change}.items() if v is not None}
    with pytest.raises(ConfigError, match=message):
        upstream_of(table)


def test_local_version_is_pep440():
    assert local_version("0.9.0", 5) == "0.9.0+fix.5"


def test_drift_is_explained_by_the_newer_patch_or_a_trailer_that_names_the_newer_version():
    from verl_patches.model.compare import DIFFERS, Comparison, Entry

    def entry(name: str, reason: str | None = None) -> Entry:
        trailer = f"Base-Specific: {reason}\n" if reason else ""
        return Entry(Patch.parse(name, mbox(body=DEFAULT_BODY + trailer)), name, name)

    def reasons(comparison: Comparison) -> dict[str, str | None]:
        return {where: reason for where, _, reason in comparison.drift()}

    # A pair that differs: only the newer queue's patch explains it.
    only_old_says = Comparison("1.0.0", "1.1.0", pairs=[(entry("a.patch", "1.1.0 has it"), entry("a.patch"), DIFFERS)])
    assert reasons(only_old_says) == {"1.1.0:a.patch": None}
    new_says = Comparison("1.0.0", "1.1.0", pairs=[(entry("a.patch"), entry("a.patch", "1.1.0 has it"), DIFFERS)])
    assert reasons(new_says) == {"1.1.0:a.patch": "1.1.0 has it"}
    # A patch the newer queue lacks: the older patch's trailer must name the newer version.
    for reason, explained in [("only on 1.0.0", False), ("verl 1.1.0 has it upstream", True), ("1.1.01", False)]:
        missing = Comparison("1.0.0", "1.1.0", only_old=[entry("b.patch", reason)])
        assert reasons(missing) == {"1.0.0:b.patch": reason if explained else None}
    assert reasons(Comparison("1.0.0", "1.1.0", only_new=[entry("c.patch", "new here")])) == {
        "1.1.0:c.patch": "new here"
    }
