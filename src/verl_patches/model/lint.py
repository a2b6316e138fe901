"""Lint rules for patches and the series. Pure functions: data model in, findings out."""

from __future__ import annotations

import re
from dataclasses import dataclass

from verl_patches.model.compare import BASE_SPECIFIC
from verl_patches.model.patch import PROJECT_IDENT, Patch
from verl_patches.model.series import Series
from verl_patches.model.trailers import (
    APPLIED_UPSTREAM,
    BACKPORT,
    BUG,
    EXEMPT_TRAILER,
    FORWARDED,
    HOME,
    NOT_NEEDED,
    ORIGIN,
    AppliedUpstream,
    GitHubRef,
    forwarded_help,
)

# verl's own PR-title vocabulary (tests/special_sanity/check_pr_title.py upstream).
MODULES = (
    "fsdp megatron veomni sglang vllm trtllm rollout trainer tests training_utils recipe hardware deployment ray "
    "worker single_controller misc docker ci perf model algo env tool ckpt doc data cfg reward fully_async "
    "one_step_off"
).split()
TYPES = ("feat", "fix", "refactor", "chore", "test")
SUBJECT = re.compile(
    r"^(?:\[\d/[\dNn]\] ?)?(?:\[BREAKING\])?\[(?P<modules>[a-z_]+(?:, [a-z_]+)*)\] (?P<type>[a-z]+): (?P<desc>\S.*)$"
)
BODY_SECTIONS = ("Problem:", "Fix:", "Tests:")


@dataclass(frozen=True)
class Finding:
    where: str
    rule: str
    message: str
    todo: str

    def __str__(self) -> str:
        return f"{self.where}: {self.rule}: {self.message} -> {self.todo}"


def check_subject(patch: Patch) -> list[Finding]:
    match = SUBJECT.match(patch.subject)
    todo = "write it as '[module(, module)*] type: description', e.g. '[megatron] fix: ...'"
    if not match:
        return [Finding(patch.name, "subject-form", f"subject {patch.subject!r} is not in verl's PR-title form", todo)]
    findings = []
    unknown = [m for m in match.group("modules").split(", ") if m not in MODULES]
    if unknown:
        findings.append(
            Finding(
                patch.name, "subject-form", f"unknown module(s) {unknown}", f"use modules from: {' '.join(MODULES)}"
            )
        )
    if match.group("type") not in TYPES:
        findings.append(
            Finding(
                patch.name, "subject-form", f"unknown type {match.group('type')!r}", f"use one of {', '.join(TYPES)}"
            )
        )
    return findings


def check_body(patch: Patch) -> list[Finding]:
    lines = patch.body.splitlines()
    missing = [s for s in BODY_SECTIONS if not any(line.startswith(s) for line in lines)]
    if missing:
        return [
            Finding(
                patch.name,
                "body",
                f"the message lacks the paragraph(s) {', '.join(missing)}",
                "state the problem, the fix and how it was tested in paragraphs starting 'Problem:', 'Fix:', 'Tests:'",
            )
        ]
    return []


def check_forwarded(patch: Patch) -> list[Finding]:
    values = patch.trailer_values(FORWARDED)
    todo = f"keep one trailer in the last paragraph: {forwarded_help()}"
    if not values:
        return [Finding(patch.name, "forwarded", f"no {FORWARDED} trailer", todo)]
    if len(values) > 1:
        return [Finding(patch.name, "forwarded", f"{len(values)} {FORWARDED} trailers", todo)]
    if patch.forwarded is None:
        return [Finding(patch.name, "forwarded", f"{FORWARDED}: {values[0]!r} is not a value it takes", todo)]
    return []


def check_origin(patch: Patch) -> list[Finding]:
    """A backport carries `Origin: backport, <PR URL>` naming the PR of its subject, and is not forwarded."""
    values = patch.trailer_values(ORIGIN)
    number = patch.backport_of
    form = f"'{ORIGIN}: {BACKPORT}, https://github.com/{HOME}/pull/{number or 'N'}'"
    if len(values) > 1:
        return [Finding(patch.name, "origin", f"{len(values)} {ORIGIN} trailers", f"keep one: {form}")]
    if values and patch.origin is None:
        return [
            Finding(
                patch.name,
                "origin",
                f"{ORIGIN}: {values[0]!r} is not of the form {form}",
                "mark a backport of a merged upstream PR with that form, or drop the trailer",
            )
        ]
    origin = patch.origin
    if number is not None and origin is None:
        return [
            Finding(
                patch.name,
                "origin",
                f"the subject says it backports verl#{number} but the patch has no {ORIGIN} trailer",
                f"add {form}",
            )
        ]
    if origin is None:
        return []
    findings = []
    if number is None:
        findings.append(
            Finding(
                patch.name,
                "origin",
                f"a backport of {origin.pr.url} whose subject does not end ' (backport of verl#{origin.pr.number})'",
                "end the subject so, or drop the Origin trailer if the patch is not a backport",
            )
        )
    elif number != origin.pr.number:
        findings.append(
            Finding(
                patch.name,
                "origin",
                f"the subject backports verl#{number} but {ORIGIN} names {origin.pr.url}",
                f"make them name the same pull request: {form}",
            )
        )
    if patch.forwarded is not None and patch.forwarded.needed:
        findings.append(
            Finding(
                patch.name,
                "origin",
                f"a backport of a merged upstream change is '{FORWARDED}: {patch.forwarded.value}'",
                f"write '{FORWARDED}: {NOT_NEEDED}'",
            )
        )
    return findings


def check_applied_upstream(patch: Patch) -> list[Finding]:
    values = patch.trailer_values(APPLIED_UPSTREAM)
    todo = f"write '{APPLIED_UPSTREAM}: <version>[, <URL>]' (e.g. '0.9.1, https://github.com/{HOME}/pull/N') or "
    todo += f"'{APPLIED_UPSTREAM}: <URL of the commit or PR>'"
    if len(values) > 1:
        return [
            Finding(patch.name, "applied-upstream", f"{len(values)} {APPLIED_UPSTREAM} trailers", f"keep one: {todo}")
        ]
    if values and AppliedUpstream.parse(values[0]) is None:
        return [Finding(patch.name, "applied-upstream", f"{APPLIED_UPSTREAM}: {values[0]!r} is not of that form", todo)]
    return []


def check_bug(patch: Patch) -> list[Finding]:
    return [
        Finding(
            patch.name,
            "bug",
            f"{BUG}: {value!r} is not the URL of a GitHub issue or pull request",
            f"write '{BUG}: https://github.com/{HOME}/issues/N' (or .../pull/N), one trailer per issue or PR",
        )
        for value in patch.trailer_values(BUG)
        if GitHubRef.parse(value) is None
    ]


# The test files a fix to verl/ needs, by the suffix of their names.
TEST_KINDS = (("_on_cpu.py", "CPU unit test"), ("_on_gpu.py", "GPU regression test"))


def check_tests(patch: Patch) -> list[Finding]:
    """A fix changes a CPU test and a GPU test, or a test helper module (which the trial apply checks is imported).
    A backport keeps the tests of the upstream change it backports, whatever they are: it is upstream's shape."""
    if not patch.code_files or patch.helper_files or patch.origin is not None:
        return []
    findings = []
    for suffix, kind in TEST_KINDS:
        if not patch.tests_matching(suffix):
            findings.append(
                Finding(
                    patch.name,
                    "tests",
                    f"changes verl/ but adds or changes no tests/**/test_*{suffix}",
                    f"add a {kind} under tests/<verl package>/",
                )
            )
    return findings


MAX_NEW_TEST_FILE_LINES = 250


def check_test_size(patch: Patch) -> list[Finding]:
    """A reviewer reads every test line: a new test file stays under MAX_NEW_TEST_FILE_LINES lines."""
    return [
        Finding(
            patch.name,
            "test-size",
            f"the new file {path} has {patch.changed_lines.get(path, 0)} lines",
            f"keep it under {MAX_NEW_TEST_FILE_LINES}: parametrise, or move shared checks into a helper module",
        )
        for path in patch.added_files
        if path.startswith("tests/") and path.endswith(".py")
        if patch.changed_lines.get(path, 0) > MAX_NEW_TEST_FILE_LINES
    ]


def check_exemption(patch: Patch) -> list[Finding]:
    reason = patch.exemption
    match = SUBJECT.match(patch.subject)
    if not patch.code_files and patch.has_diff and not reason:
        return [
            Finding(
                patch.name,
                "prove-exempt",
                "changes no verl/ code, so `prove` cannot show its tests failing first",
                f"add a trailer '{EXEMPT_TRAILER}: <reason>'",
            )
        ]
    if patch.code_files and reason is not None and match and match.group("type") == "fix" and patch.origin is None:
        return [
            Finding(
                patch.name,
                "prove-exempt",
                "a fix must prove its tests fail without it; it cannot be exempt",
                f"remove the {EXEMPT_TRAILER} trailer and add a test that fails without the fix",
            )
        ]
    if reason is not None and not reason.strip():
        return [Finding(patch.name, "prove-exempt", "empty exemption reason", "say why the patch is exempt")]
    return []


def check_base_specific(patch: Patch) -> list[Finding]:
    values = patch.trailer_values(BASE_SPECIFIC)
    todo = f"keep one trailer '{BASE_SPECIFIC}: <why this base's queue needs the patch as it is>'"
    if len(values) > 1:
        return [Finding(patch.name, "base-specific", f"{len(values)} {BASE_SPECIFIC} trailers", todo)]
    if values and not values[0].strip():
        return [Finding(patch.name, "base-specific", f"the {BASE_SPECIFIC} trailer gives no reason", todo)]
    return []


def check_message_separator(patch: Patch) -> list[Finding]:
    if patch.separator_in_message:
        return [
            Finding(
                patch.name,
                "message-separator",
                "the commit message contains a '---' line (git am cuts the message there)",
                "reword that line in the build tree, then export",
            )
        ]
    return []


def check_author(patch: Patch) -> list[Finding]:
    if patch.author != PROJECT_IDENT:
        return [
            Finding(
                patch.name,
                "author",
                f"author is {patch.author!r}",
                f"commit as the project identity {PROJECT_IDENT!r} (`git commit --amend --reset-author` in build/verl)",
            )
        ]
    return []


def check_diff(patch: Patch) -> list[Finding]:
    if not patch.has_diff:
        return [Finding(patch.name, "empty", "the patch changes no file", "drop it from the series")]
    return []


PATCH_RULES = (
    check_subject,
    check_body,
    check_forwarded,
    check_origin,
    check_applied_upstream,
    check_bug,
    check_tests,
    check_test_size,
    check_exemption,
    check_base_specific,
    check_message_separator,
    check_author,
    check_diff,
)


def lint_patch(patch: Patch) -> list[Finding]:
    return [finding for rule in PATCH_RULES for finding in rule(patch)]


def lint_series(series: Series, files_on_disk: list[str], queue: str = "patches") -> list[Finding]:
    findings = []
    for name in series.duplicates():
        findings.append(Finding("series", "series-duplicate", f"{name} is listed more than once", "list it once"))
    for name in dict.fromkeys(series.names):
        if name not in files_on_disk:
            findings.append(
                Finding(
                    "series",
                    "series-missing",
                    f"{name} is listed but {queue}/{name} does not exist",
                    "add the file or drop the line",
                )
            )
    for name in files_on_disk:
        if name not in series.names:
            findings.append(
                Finding(
                    name, "series-unused", f"the file is not listed in {queue}/series", "list it in series or delete it"
                )
            )
    return findings
