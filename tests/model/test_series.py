"""The series file and patch file names: parsing, comments, bad names, duplicates, slugs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verl_patches.errors import ConfigError
from verl_patches.model.series import Series, slug, unique_names


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
