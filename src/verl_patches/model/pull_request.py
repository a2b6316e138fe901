"""A patch presented as a verl pull request: title, branch and a body in the shape of verl's PR template."""

from __future__ import annotations

import re
from dataclasses import dataclass

from verl_patches.model.patch import Patch

# Which template section each labelled paragraph of a patch message fills.
WHAT = "What does this PR do?"
TEST = "Test"
DESIGN = "Design & Code Changes"
_LABELS = {"Problem:": WHAT, "Fix:": DESIGN, "Tests:": TEST}
_HEADING = re.compile(r"^(#{2,4}) +(.+?) *$")
_LIST_ITEM = re.compile(r"^(?:[-*+] |\d+[.)] |\s)")


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
    paragraphs = [p.strip("\n") for p in re.split(r"\n\s*\n", patch.body) if p.strip()]
    if patch.trailers and paragraphs:
        paragraphs = paragraphs[:-1]
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
    if patch.exemption is not None:
        blocks.append(f"These tests are not expected to fail before the change: {patch.exemption}")
    elif failures:
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
        WHAT: "\n\n".join(parts.get(WHAT, [])),
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
