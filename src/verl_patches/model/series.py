"""patches/series: the order of the patches, one file name a line, '#' starts a comment."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field

from verl_patches.errors import ConfigError

_VALID_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*\.patch$")

DEFAULT_HEADER = (
    "# Order in which the patches apply on top of the pinned verl sdist (upstream.toml).\n"
    "# One file name a line; '#' starts a comment. Written by `verl-patches export`.\n"
)


@dataclass
class Series:
    names: list[str] = field(default_factory=list)
    header: str = DEFAULT_HEADER
    footer: str = ""
    # Per entry: the comment and blank lines just above it, and its own line as written (inline comment kept).
    above: dict[str, str] = field(default_factory=dict)
    lines: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str, source: str = "patches/series") -> Series:
        names: list[str] = []
        header_lines: list[str] = []
        pending: list[str] = []
        above: dict[str, str] = {}
        lines: dict[str, str] = {}
        for lineno, raw in enumerate(text.splitlines(), start=1):
            raw = raw.rstrip()
            line = raw.split("#", 1)[0].strip()
            if not line:
                (pending if names else header_lines).append(raw + "\n")
                continue
            if not _VALID_NAME.match(line):
                raise ConfigError(
                    f"{source}:{lineno}: {line!r} is not a patch file name (letters, digits, ._+-, ending .patch)"
                )
            if not names:
                # The header ends at the last blank line above the first entry; comments right above it are its own.
                blanks = [i for i, text in enumerate(header_lines) if not text.strip()]
                cut = blanks[-1] + 1 if blanks else len(header_lines)
                header_lines, pending = header_lines[:cut], header_lines[cut:]
            names.append(line)
            above.setdefault(line, "".join(pending))
            lines.setdefault(line, raw.lstrip() + "\n")
            pending = []
        has_comment = any(line.lstrip().startswith("#") for line in header_lines)
        header = "".join(header_lines) if has_comment else DEFAULT_HEADER
        return cls(names=names, header=header, footer="".join(pending), above=above, lines=lines)

    def format(self) -> str:
        body = "".join(self.above.get(name, "") + self.lines.get(name, f"{name}\n") for name in self.names)
        return self.header + body + self.footer

    def with_names(self, names: list[str]) -> Series:
        """The same file with another list of entries: comments stay with their entry; the comments of a
        removed entry move to the next entry that stays (or to the end)."""
        kept = set(names)
        above = dict(self.above)
        carried = ""
        for name in self.names:
            if name in kept:
                above[name] = carried + above.get(name, "")
                carried = ""
            else:
                carried += above.pop(name, "")
        lines = {name: line for name, line in self.lines.items() if name in kept}
        return Series(names=list(names), header=self.header, footer=carried + self.footer, above=above, lines=lines)

    def duplicates(self) -> list[str]:
        return sorted(name for name, count in Counter(self.names).items() if count > 1)


def slug(subject: str, max_len: int = 64) -> str:
    """File-name stem from a subject: '[megatron] fix: Foo bar' -> 'megatron-fix-foo-bar'."""
    text = subject.lower()
    text = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    if len(text) > max_len:
        text = text[:max_len].rstrip("-")
    return text or "patch"


def unique_names(subjects: list[str], messages: list[str] | None = None) -> list[str]:
    """One file name per subject, independent of the order: subjects that give the same stem all get a
    suffix from their own text (the subject, or subject and message when the subjects are equal)."""
    messages = messages if messages is not None else [""] * len(subjects)
    stems = [slug(subject) for subject in subjects]
    clashes = Counter(stems)
    same_subject = Counter(subjects)
    names = []
    for stem, subject, message in zip(stems, subjects, messages, strict=True):
        if clashes[stem] == 1:
            names.append(f"{stem}.patch")
            continue
        key = subject if same_subject[subject] == 1 else f"{subject}\n{message}"
        names.append(f"{stem}-{hashlib.sha256(key.encode()).hexdigest()[:8]}.patch")
    seen: Counter[str] = Counter()
    result = []
    for name in names:  # identical subject and message: only the order can tell them apart
        seen[name] += 1
        result.append(name if seen[name] == 1 else f"{name[: -len('.patch')]}-{seen[name]}.patch")
    return result
