"""patches/series: the order of the patches, one file name a line, '#' starts a comment."""

from __future__ import annotations

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

    @classmethod
    def parse(cls, text: str, source: str = "patches/series") -> Series:
        names: list[str] = []
        header_lines: list[str] = []
        in_header = True
        for lineno, raw in enumerate(text.splitlines(), start=1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                if in_header and raw.strip().startswith("#"):
                    header_lines.append(raw.rstrip() + "\n")
                continue
            in_header = False
            if not _VALID_NAME.match(line):
                raise ConfigError(
                    f"{source}:{lineno}: {line!r} is not a patch file name (letters, digits, ._+-, ending .patch)"
                )
            names.append(line)
        header = "".join(header_lines) if header_lines else DEFAULT_HEADER
        return cls(names=names, header=header)

    def format(self) -> str:
        return self.header + "".join(f"{name}\n" for name in self.names)

    def duplicates(self) -> list[str]:
        return sorted(name for name, count in Counter(self.names).items() if count > 1)


def slug(subject: str, max_len: int = 64) -> str:
    """File-name stem from a subject: '[megatron] fix: Foo bar' -> 'megatron-fix-foo-bar'."""
    text = subject.lower()
    text = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    if len(text) > max_len:
        text = text[:max_len].rstrip("-")
    return text or "patch"


def unique_names(subjects: list[str]) -> list[str]:
    """One file name per subject, stable under reordering (a clash gets -2, -3 in series order)."""
    seen: Counter[str] = Counter()
    names = []
    for subject in subjects:
        stem = slug(subject)
        seen[stem] += 1
        names.append(f"{stem}.patch" if seen[stem] == 1 else f"{stem}-{seen[stem]}.patch")
    return names
