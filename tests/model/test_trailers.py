"""The trailers of a patch's message: Forwarded, Origin, Applied-Upstream, GitHub references."""

from __future__ import annotations

import pytest
from helpers.mbox import mbox

from verl_patches.model.patch import Patch, parse_trailers
from verl_patches.model.trailers import AppliedUpstream, Forwarded, GitHubRef, Origin

PR = "https://github.com/verl-project/verl/pull/7372"


def test_trailers_only_from_last_paragraph():
    assert parse_trailers("Subject\n\nKey: not a trailer\nplain text\n") == []
    assert parse_trailers("Body.\n\nA-B: one\n  continued\nC: two\n") == [("A-B", "one continued"), ("C", "two")]


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
