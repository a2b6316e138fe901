"""The data model: series, patch parsing, upstream pin, status vocabulary."""

from __future__ import annotations

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
from hypothesis import given
from hypothesis import strategies as st

from verl_patches.errors import ConfigError
from verl_patches.model.patch import Patch, parse_trailers
from verl_patches.model.series import Series, slug, unique_names
from verl_patches.model.status import UpstreamStatus
from verl_patches.model.upstream import Upstream, local_version

DEFAULT_BODY = "Problem: p.\n\nFix: f.\n\nTests: t.\n\nUpstream-Status: Pending\n"
IDENT = "verl-patches <verl-patches@users.noreply.github.com>"


def mbox(subject="[megatron] fix: a thing", body=DEFAULT_BODY, files=("verl/a.py",), author=IDENT, after_sep=""):
    diff = "".join(
        f"diff --git a/{f} b/{f}\nnew file mode 100644\nindex 0000000..1111111\n"
        f"--- /dev/null\n+++ b/{f}\n@@ -0,0 +1 @@\n+x\n"
        for f in files
    )
    text = (
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        f"From: {author}\nDate: Sun, 29 Nov 2026 10:00:00 +0000\nSubject: {subject}\n\n{body}---\n{after_sep}\n{diff}"
    )
    return text.encode()


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
    assert patch.trailers == [("Upstream-Status", "Pending")]
    assert patch.upstream_status == UpstreamStatus("Pending", "Pending")
    assert patch.code_files == ["verl/a.py"]
    assert patch.tests_matching("_on_cpu.py") == ["tests/models/test_a_on_cpu.py"]
    assert patch.added_files == ["verl/a.py", "tests/models/test_a_on_cpu.py"]
    assert not patch.separator_in_message


def test_patch_parse_folded_subject():
    patch = Patch.parse("p.patch", mbox(subject="[megatron] fix: a long\n subject line"))
    assert patch.subject == "[megatron] fix: a long subject line"


def test_patch_parse_detects_a_separator_inside_the_message():
    patch = Patch.parse("p.patch", mbox(after_sep="This text was below a --- line of the message.\n"))
    assert patch.separator_in_message


def test_patch_parse_rejects_non_mbox():
    with pytest.raises(ConfigError, match="not a git format-patch"):
        Patch.parse("x.patch", b"diff --git a/x b/x\n")


def test_trailers_only_from_last_paragraph():
    assert parse_trailers("Subject\n\nKey: not a trailer\nplain text\n") == []
    assert parse_trailers("Body.\n\nA-B: one\n  continued\nC: two\n") == [("A-B", "one continued"), ("C", "two")]


@pytest.mark.parametrize(
    "value,kind",
    [
        ("Pending", "Pending"),
        ("Backport verl-project/verl#7702", "Backport"),
        ("Submitted https://github.com/verl-project/verl/pull/1", "Submitted"),
        ("Fixed-in 0.9.1 verl-project/verl#7372", "Fixed-in"),
        ("Fixed-in 0.9.1", "Fixed-in"),
        ("Inappropriate [NPU-only example]", "Inappropriate"),
    ],
)
def test_status_vocabulary_accepts(value, kind):
    assert UpstreamStatus.parse(value).kind == kind


@pytest.mark.parametrize("value", ["pending", "Backport", "Backport #7702", "Inappropriate", "Submitted soon", "Done"])
def test_status_vocabulary_rejects(value):
    assert UpstreamStatus.parse(value) is None


def test_upstream_from_mapping_validates():
    sdist = {"name": "verl", "version": "0.9.0", "source": "pypi-sdist"}
    upstream = Upstream.from_mapping({"upstream": {**sdist, "sha256": "A" * 64}})
    assert upstream.sha256 == "a" * 64 and upstream.tag == "upstream/0.9.0"
    assert upstream.sdist_filename == "verl-0.9.0.tar.gz" and not upstream.is_archive
    with pytest.raises(ConfigError, match="sha256"):
        Upstream.from_mapping({"upstream": {**sdist, "sha256": "abc"}})
    with pytest.raises(ConfigError, match="PEP 440"):
        Upstream.from_mapping({"upstream": {**sdist, "version": "nine", "sha256": "a" * 64}})
    with pytest.raises(ConfigError, match="version"):
        Upstream.from_mapping({"upstream": {"name": "verl", "source": "pypi-sdist", "sha256": "a" * 64}})
    kinds = "git-archive, pypi-sdist, sdist-over-archive"
    with pytest.raises(ConfigError, match=f"source must be one of {kinds}, not 'wheel'"):
        Upstream.from_mapping({"upstream": {**sdist, "source": "wheel", "sha256": "a" * 64}})
    # Pins written before source kinds existed (older refs, e.g. for range-diff) are sdists.
    older = Upstream.from_mapping({"upstream": {"name": "verl", "version": "0.9.0", "sha256": "a" * 64}})
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
    upstream = Upstream.from_mapping({"upstream": ARCHIVE})
    assert upstream.is_archive and upstream.tree == ARCHIVE["tree"]
    assert upstream.archive_filename == "verl-0.9.0.tar.gz"
    assert upstream.archive_url == "https://github.com/verl-project/verl/archive/refs/tags/v0.9.0.tar.gz"
    assert Upstream.from_mapping(tomllib.loads(upstream.to_toml())) == upstream


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
        Upstream.from_mapping({"upstream": table})


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
