"""The upstream pin (upstream.toml's tables), the local version, drift between two queues."""

from __future__ import annotations

import pytest
from helpers.mbox import DEFAULT_BODY, mbox

from verl_patches.checkout import tomllib
from verl_patches.errors import ConfigError
from verl_patches.model.bases import parse_bases
from verl_patches.model.patch import Patch
from verl_patches.model.upstream import Upstream, local_version
from verl_patches.queue import new_queue


def upstream_of(table: dict) -> Upstream:
    return Upstream.from_table(table, "upstream.toml", '[base."0.9.0"]')


ARCHIVE = {
    "name": "verl",
    "version": "0.9.0",
    "source": "git-archive",
    "repository": "verl-project/verl",
    "tag": "v0.9.0",
    "commit": "483b8a009ba3a97563edee3a19887e4862b8094a",
    "tree": "250f5bc8f4f6d7277c1e8a8823a3f01e058551a6",
}


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
