"""Each lint rule with one failing and one passing example."""

from __future__ import annotations

import pytest
from test_model import mbox

from verl_patches.lint import lint_patch, lint_series
from verl_patches.model.patch import Patch
from verl_patches.model.series import Series

BODY = "Problem: p.\n\nFix: f.\n\nTests: t.\n\nUpstream-Status: Pending\n"
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
    assert "body" in rules(body="Problem: p.\n\nTests: t.\n\nUpstream-Status: Pending\n")
    assert "body" not in rules(body=BODY)


@pytest.mark.parametrize(
    "trailers", ["", "Upstream-Status: Maybe\n", "Upstream-Status: Pending\nUpstream-Status: Pending\n"]
)
def test_upstream_status_fails(trailers):
    assert "upstream-status" in rules(body=f"Problem: p.\n\nFix: f.\n\nTests: t.\n\n{trailers}")


def test_upstream_status_passes():
    body = "Problem: p.\n\nFix: f.\n\nTests: t.\n\nUpstream-Status: Backport verl-project/verl#7372\n"
    assert "upstream-status" not in rules(body=body)


@pytest.mark.parametrize(
    "files",
    [("verl/a.py",), ("verl/a.py", "tests/models/test_a_on_cpu.py"), ("verl/a.py", "tests/models/test_a_on_gpu.py")],
)
def test_code_change_needs_cpu_and_gpu_tests(files):
    assert "tests" in rules(files=files)


def test_tests_rule_ignores_patches_without_code():
    body = BODY.replace("Upstream-Status: Pending", "Upstream-Status: Pending\nProve-Exempt: tests only")
    assert "tests" not in rules(files=("tests/models/test_a_on_cpu.py",), body=body)


def test_exemption_required_without_code_and_refused_on_fixes():
    assert "prove-exempt" in rules(files=("examples/run.sh",))
    exempt = BODY.replace("Upstream-Status: Pending", "Upstream-Status: Pending\nProve-Exempt: example script only")
    assert "prove-exempt" not in rules(files=("examples/run.sh",), body=exempt)
    assert "prove-exempt" in rules(body=exempt)  # a fix to verl/ cannot be exempt
    assert "prove-exempt" not in rules(subject="[megatron] refactor: x", body=exempt)


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
