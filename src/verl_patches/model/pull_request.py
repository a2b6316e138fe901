"""A patch presented as a verl pull request: title, branch and a body in the shape of verl's PR template."""

from __future__ import annotations

import re
from dataclasses import dataclass

from verl_patches.model.compare import BASE_SPECIFIC
from verl_patches.model.patch import Patch
from verl_patches.model.trailers import APPLIED_UPSTREAM, BUG, EXEMPT_TRAILER, FORWARDED, ORIGIN

# Which template section each labelled paragraph of a patch message fills.
WHAT = "What does this PR do?"
TEST = "Test"
DESIGN = "Design & Code Changes"
_LABELS = {"Problem:": WHAT, "Fix:": DESIGN, "Tests:": TEST}
_HEADING = re.compile(r"^(#{2,4}) +(.+?) *$")
_LIST_ITEM = re.compile(r"^(?:[-*+] |\d+[.)] |\s)")
# This project's trailers mean nothing upstream: a line that starts with one never reaches a PR body.
PROJECT_TRAILERS = (FORWARDED, ORIGIN, APPLIED_UPSTREAM, EXEMPT_TRAILER, BASE_SPECIFIC, BUG)
_PROJECT_LINE = re.compile(rf"^(?:{'|'.join(map(re.escape, PROJECT_TRAILERS))}):", re.I)
# Asides about this project's `prove` command, e.g. "(prove records each)".
_PROVE_ASIDE = re.compile(r"\s*\((?:[^()]*\s)?prove records\b[^()]*\)")


@dataclass(frozen=True)
class Section:
    heading: str  # the heading line as the template writes it, e.g. "### Test"
    title: str  # its text, e.g. "Test"
    text: str  # what follows it, up to the next heading


@dataclass(frozen=True)
class PullRequest:
    title: str
    branch: str
    body: str
    unfilled: tuple[str, ...]  # template sections (other than checklists) that keep the template's text


def split_template(template: str) -> tuple[str, list[Section]]:
    """The text before the first heading, and each `##`-`####` section of the template in order."""
    preamble: list[str] = []
    sections: list[Section] = []
    heading: tuple[str, str] | None = None
    lines: list[str] = []
    for line in template.splitlines():
        match = _HEADING.match(line)
        if match:
            if heading is None:
                preamble = lines
            else:
                sections.append(Section(heading[0], heading[1], "\n".join(lines)))
            heading, lines = (line, match.group(2)), []
        else:
            lines.append(line)
    if heading is None:
        return "\n".join(lines), []
    sections.append(Section(heading[0], heading[1], "\n".join(lines)))
    return "\n".join(preamble), sections


def message_parts(patch: Patch) -> dict[str, list[str]]:
    """The message's paragraphs grouped by the template section they fill; trailers are left out.

    A paragraph that starts with 'Problem:', 'Fix:' or 'Tests:' opens that part (the label is dropped);
    unlabelled paragraphs belong to the part before them."""
    paragraphs = [upstream_text(p) for p in re.split(r"\n\s*\n", patch.message_without_trailers)]
    paragraphs = [p for p in paragraphs if p.strip()]
    parts: dict[str, list[str]] = {}
    current = WHAT
    for paragraph in paragraphs:
        for label, section in _LABELS.items():
            if paragraph.startswith(label):
                current = section
                paragraph = paragraph[len(label) :].lstrip()
                break
        parts.setdefault(current, []).append(unwrap(paragraph))
    return parts


def upstream_text(paragraph: str) -> str:
    """The paragraph without this project's trailer lines and asides about `prove`."""
    lines = [line for line in paragraph.strip("\n").splitlines() if not _PROJECT_LINE.match(line)]
    return _PROVE_ASIDE.sub("", "\n".join(lines))


def related(patch: Patch) -> str:
    """The upstream issues and PRs of the patch's Bug trailers, as verl's template asks for them."""
    refs = [f"{'issue' if ref.kind == 'issues' else 'PR'} {ref.short}" for ref in patch.bugs]
    return f"Related: {', '.join(refs)}." if refs else ""


def unwrap(paragraph: str) -> str:
    """Join the hard-wrapped lines of a paragraph (GitHub renders each newline of a PR body as a break);
    list items, indented lines and fenced code blocks keep their own lines."""
    out: list[str] = []
    fenced = False
    for line in paragraph.splitlines():
        fence = line.lstrip().startswith("```")
        if out and line.strip() and not fenced and not fence and not _LIST_ITEM.match(line):
            out[-1] = f"{out[-1]} {line.strip()}"
        else:
            out.append(line.rstrip())
        fenced ^= fence
    return "\n".join(out)


def branch_name(patch: Patch) -> str:
    stem = patch.name.removesuffix(".patch")
    return f"verl-patches/{stem}"


def test_section(parts: list[str], patch: Patch, failures: list[str] | None) -> str:
    blocks = list(parts)
    if patch.exemption is not None:  # its tests pass without the change too: no failures to show
        return "\n\n".join(blocks)
    if failures:
        shown = "\n".join(failures)
        blocks.append(f"Without the change (the test files alone on the parent commit):\n\n```text\n{shown}\n```")
    elif failures is not None:
        blocks.append("Without the change, these tests fail (pytest exit status 1 or 2) without a short summary line.")
    return "\n\n".join(blocks)


def design_section(parts: list[str], patch: Patch) -> str:
    files = "\n".join(f"- `{path}`" + (" (new)" if path in patch.added_files else "") for path in patch.files)
    return "\n\n".join([*parts, f"Files changed:\n\n{files}"])


def build(patch: Patch, template: str, failures: list[str] | None = None) -> PullRequest:
    """The pull request for patch, in the sections of template.

    failures: the short-summary lines of the patch's tests run without its code (None: not recorded)."""
    parts = message_parts(patch)
    preamble, sections = split_template(template)
    filled = {
        WHAT: "\n\n".join(filter(None, [*parts.get(WHAT, []), related(patch)])),
        TEST: test_section(parts.get(TEST, []), patch, failures),
        DESIGN: design_section(parts.get(DESIGN, []), patch),
    }
    out = [preamble.strip("\n")] if preamble.strip() else []
    unfilled = []
    for section in sections:
        text = filled.get(section.title)
        if text:
            out.append(f"{section.heading}\n\n{text}\n")
        else:
            out.append(f"{section.heading}\n{section.text.rstrip()}\n")
            if "- [ ]" not in section.text:
                unfilled.append(section.title)
    missing = [title for title, text in filled.items() if text and title not in {s.title for s in sections}]
    for title in missing:
        out.append(f"### {title}\n\n{filled[title]}\n")
    return PullRequest(patch.subject, branch_name(patch), "\n".join(out).rstrip("\n") + "\n", tuple(unfilled))
