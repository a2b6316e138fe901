"""Each lint rule with one failing and one passing example."""

from __future__ import annotations

import pytest
from helpers.mbox import mbox

from verl_patches.model.lint import lint_patch, lint_series
from verl_patches.model.patch import Patch
from verl_patches.model.series import Series

BODY_TEXT = "Problem: p.\n\nFix: f.\n\nTests: t.\n\n"
BODY = f"{BODY_TEXT}Forwarded: no\n"
BOTH_TESTS = ("verl/a.py", "tests/models/test_a_on_cpu.py", "tests/models/test_a_on_gpu.py")


def rules(**kwargs) -> set[str]:
    kwargs.setdefault("files", BOTH_TESTS)
    return {f.rule for f in lint_patch(Patch.parse("p.patch", mbox(**kwargs)))}


def test_a_good_patch_has_no_findings():
    assert rules() == set()


@pytest.mark.parametrize(
    "subject",
    [
        "fix a thing",
        "[megatron]fix: x",
        "[megatorn] fix: x",
        "[megatron] fixed: x",
        "[Megatron] fix: x",
        "[megatron] fix:",
    ],
)
def test_subject_form_fails(subject):
    assert "subject-form" in rules(subject=subject)


@pytest.mark.parametrize(
    "subject", ["[megatron, hardware] fix: x", "[BREAKING][fsdp] feat: y", "[1/N][ci] test: z", "[worker] refactor: w"]
)
def test_subject_form_passes(subject):
    assert "subject-form" not in rules(subject=subject)


def test_body_needs_problem_fix_tests():
    assert "body" in rules(body="Problem: p.\n\nTests: t.\n\nForwarded: no\n")
    assert "body" not in rules(body=BODY)


PR = "https://github.com/verl-project/verl/pull/7372"
BACKPORT = "[megatron] fix: x (backport of verl#7372)"


@pytest.mark.parametrize(
    ("subject", "trailers", "rule"),
    [
        ("[megatron] fix: x", "", "forwarded"),
        ("[megatron] fix: x", "Forwarded: Pending\n", "forwarded"),
        ("[megatron] fix: x", "Forwarded: no\nForwarded: no\n", "forwarded"),
        ("[megatron] fix: x", "Forwarded: https://github.com/verl-project/verl/issues/3\n", "forwarded"),
        (BACKPORT, "Forwarded: not-needed\n", "origin"),  # the subject says backport, no Origin
        (BACKPORT, f"Forwarded: not-needed\nOrigin: backport, {PR[:-4]}7702\n", "origin"),  # another PR
        (BACKPORT, f"Forwarded: no\nOrigin: backport, {PR}\n", "origin"),  # a backport is not forwarded
        (BACKPORT, f"Forwarded: not-needed\nOrigin: upstream, {PR}\n", "origin"),
        ("[megatron] fix: x", f"Forwarded: not-needed\nOrigin: backport, {PR}\n", "origin"),  # subject silent
        ("[megatron] fix: x", "Forwarded: no\nApplied-Upstream: soon\n", "applied-upstream"),
        ("[megatron] fix: x", "Forwarded: no\nApplied-Upstream: 0.9.1\nApplied-Upstream: 0.9.2\n", "applied-upstream"),
        ("[megatron] fix: x", "Forwarded: no\nBug: #7372\n", "bug"),
    ],
)  # fmt: skip
def test_upstream_trailers_fail(subject, trailers, rule):
    found = lint_patch(Patch.parse("p.patch", mbox(subject=subject, body=f"{BODY_TEXT}{trailers}", files=BOTH_TESTS)))
    assert rule in {f.rule for f in found}, found


@pytest.mark.parametrize(
    ("subject", "trailers"),
    [
        ("[megatron] fix: x", "Forwarded: no\n"),
        ("[megatron] fix: x", "Forwarded: not-needed\n"),
        ("[megatron] fix: x", f"Forwarded: {PR}\nBug: https://github.com/verl-project/verl/issues/1\nBug: {PR}\n"),
        ("[megatron] fix: x", f"Forwarded: {PR}\nApplied-Upstream: 0.9.2, {PR}\n"),
        (BACKPORT, f"Origin: backport, {PR}\nForwarded: not-needed\nApplied-Upstream: 0.9.1\n"),
        (BACKPORT, f"Origin: backport, {PR}\nForwarded: not-needed\nApplied-Upstream: {PR}\n"),
    ],
)
def test_upstream_trailers_pass(subject, trailers):
    assert rules(subject=subject, body=f"{BODY_TEXT}{trailers}") == set()


@pytest.mark.parametrize(
    "files",
    [("verl/a.py",), ("verl/a.py", "tests/models/test_a_on_cpu.py"), ("verl/a.py", "tests/models/test_a_on_gpu.py")],
)
def test_code_change_needs_cpu_and_gpu_tests(files):
    assert "tests" in rules(files=files)


@pytest.mark.parametrize("lines, found", [(250, False), (251, True)])
def test_a_new_test_file_stays_under_250_lines(lines, found):
    patch = Patch.parse("p.patch", mbox(files=BOTH_TESTS))
    patch.changed_lines["tests/models/test_a_on_cpu.py"] = lines
    assert ("test-size" in {f.rule for f in lint_patch(patch)}) == found


def test_tests_rule_ignores_patches_without_code():
    body = BODY.replace("Forwarded: no", "Forwarded: no\nProve-Exempt: tests only")
    assert "tests" not in rules(files=("tests/models/test_a_on_cpu.py",), body=body)


def test_exemption_required_without_code_and_refused_on_fixes():
    assert "prove-exempt" in rules(files=("examples/run.sh",))
    exempt = BODY.replace("Forwarded: no", "Forwarded: no\nProve-Exempt: example script only")
    assert "prove-exempt" not in rules(files=("examples/run.sh",), body=exempt)
    assert "prove-exempt" in rules(body=exempt)  # a fix to verl/ cannot be exempt
    assert "prove-exempt" not in rules(subject="[megatron] refactor: x", body=exempt)


def test_a_backport_keeps_the_tests_of_the_change_it_backports():
    """An upstream change without a test that fails first (a config key removed from scripts) is backported as it is."""
    body = BODY_TEXT + (
        "Origin: backport, https://github.com/verl-project/verl/pull/7\nProve-Exempt: upstream's change has no test\n"
        "Forwarded: not-needed\n"
    )
    found = rules(subject="[megatron] fix: drop a key (backport of verl#7)", files=("verl/run.sh",), body=body)
    assert not found & {"tests", "prove-exempt"}
    assert {"tests", "prove-exempt"} <= rules(files=("verl/run.sh",), body=BODY + "Prove-Exempt: no test\n")


def test_separator_in_message():
    assert "message-separator" in rules(after_sep="more message text\n")
    assert "message-separator" not in rules()


def test_author_must_be_the_project_identity():
    assert "author" in rules(author="Some Person <person@example.com>")
    assert "author" not in rules()


def test_empty_patch():
    assert "empty" in rules(files=())


def test_series_rules():
    series = Series.parse("a.patch\nb.patch\na.patch\n")
    found = {(f.where, f.rule) for f in lint_series(series, ["a.patch", "c.patch"])}
    assert found == {("series", "series-duplicate"), ("series", "series-missing"), ("c.patch", "series-unused")}
    assert lint_series(Series.parse("a.patch\n"), ["a.patch"]) == []


def test_finding_line_names_patch_rule_and_todo():
    (finding,) = lint_patch(Patch.parse("p.patch", mbox(files=BOTH_TESTS, author="X <x@y>")))
    line = str(finding)
    assert line.startswith("p.patch: author: ") and "->" in line


@pytest.mark.parametrize(
    ("trailers", "found"),
    [
        ("Base-Specific: verl 0.9.1 moved the helper\n", False),
        ("Base-Specific:\n", True),
        ("Base-Specific: one\nBase-Specific: two\n", True),
    ],
)
def test_base_specific_needs_one_reason(trailers, found):
    assert ("base-specific" in rules(body=BODY + trailers)) == found
