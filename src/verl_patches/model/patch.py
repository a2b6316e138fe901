"""One patch of the series, parsed from its git format-patch (mbox) bytes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from email.header import decode_header, make_header
from email.parser import HeaderParser

from verl_patches.errors import ConfigError
from verl_patches.model.status import EXEMPT_TRAILER, TRAILER, UpstreamStatus

_TRAILER_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*):\s*(.*)$")
_DIFF_HEADER = re.compile(rb"^diff --git a/(.+?) b/(.+)$", re.M)


@dataclass
class Patch:
    name: str
    subject: str
    author: str
    date: str
    body: str  # the commit message without its subject line
    trailers: list[tuple[str, str]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    added_files: list[str] = field(default_factory=list)
    deleted_files: list[str] = field(default_factory=list)
    separator_in_message: bool = False
    has_diff: bool = True

    @classmethod
    def parse(cls, name: str, data: bytes) -> Patch:
        if not data.startswith(b"From "):
            raise ConfigError(f"{name}: not a git format-patch file (first line must start with 'From ')")
        head_end = data.find(b"\n\n")
        if head_end < 0:
            raise ConfigError(f"{name}: no blank line after the mail headers")
        # git writes raw UTF-8 headers (--no-encode-email-headers); RFC 2047 encoded words are decoded too.
        headers = HeaderParser().parsestr(data[: head_end + 1].decode("utf-8", errors="replace"))
        subject = _decode(headers.get("Subject", ""))
        if not subject:
            raise ConfigError(f"{name}: no Subject header")
        rest = data[head_end + 2 :]
        diff_at = rest.find(b"\ndiff --git ")
        if rest.startswith(b"diff --git "):
            diff_at = 0
        message_part = rest if diff_at < 0 else rest[:diff_at]
        message, separator_in_message = _split_message(message_part.decode("utf-8", errors="replace"))
        diff = b"" if diff_at < 0 else rest[diff_at:]
        files, added, deleted = _files(diff)
        return cls(
            name=name,
            subject=" ".join(subject.split()),
            author=" ".join(_decode(headers.get("From", "")).split()),
            date=headers.get("Date", ""),
            body=message.strip("\n"),
            trailers=parse_trailers(message),
            files=files,
            added_files=added,
            deleted_files=deleted,
            separator_in_message=separator_in_message,
            has_diff=bool(files),
        )

    def trailer_values(self, key: str) -> list[str]:
        return [v for k, v in self.trailers if k.lower() == key.lower()]

    @property
    def upstream_status(self) -> UpstreamStatus | None:
        values = self.trailer_values(TRAILER)
        return UpstreamStatus.parse(values[0]) if len(values) == 1 else None

    @property
    def exemption(self) -> str | None:
        values = self.trailer_values(EXEMPT_TRAILER)
        return values[0] if values else None

    @property
    def code_files(self) -> list[str]:
        return [f for f in self.files if f.startswith("verl/")]

    @property
    def test_files(self) -> list[str]:
        return [f for f in self.files if f.startswith("tests/") and f.rsplit("/", 1)[-1].startswith("test_")]

    def tests_matching(self, suffix: str) -> list[str]:
        """Test files this patch adds or changes (not deletes) whose name ends in suffix, e.g. '_on_cpu.py'."""
        return [f for f in self.test_files if f.endswith(suffix) and f not in self.deleted_files]


def _decode(value: str) -> str:
    return str(make_header(decode_header(value))) if value else ""


def _split_message(text: str) -> tuple[str, bool]:
    """The commit message is what precedes the first '---' line; any text between that line and
    the diff means the original message contained a '---' line (git am would cut it there)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line == "---":
            after = "\n".join(lines[i + 1 :])
            leftover = [ln for ln in after.split("\n") if ln.strip() and not _is_stat_line(ln)]
            return "\n".join(lines[:i]), bool(leftover)
    return text, False


def _is_stat_line(line: str) -> bool:
    return bool(re.match(r"^ \S.*\|\s+(\d+|Bin)", line) or re.match(r"^ \d+ files? changed", line))


def parse_trailers(message: str) -> list[tuple[str, str]]:
    """Trailers are the lines 'Key: value' of the last paragraph of the message."""
    paragraphs = [p for p in re.split(r"\n\s*\n", message.strip("\n")) if p.strip()]
    if not paragraphs:
        return []
    trailers: list[tuple[str, str]] = []
    for line in paragraphs[-1].split("\n"):
        match = _TRAILER_LINE.match(line)
        if match:
            trailers.append((match.group(1), match.group(2).strip()))
        elif line.startswith((" ", "\t")) and trailers:
            key, value = trailers[-1]
            trailers[-1] = (key, f"{value} {line.strip()}")
        else:
            return []
    return trailers


def _files(diff: bytes) -> tuple[list[str], list[str], list[str]]:
    files: list[str] = []
    added: list[str] = []
    deleted: list[str] = []
    blocks = diff.split(b"\ndiff --git ")
    for index, block in enumerate(blocks):
        if not block:
            continue
        header = block if index == 0 else b"diff --git " + block
        match = _DIFF_HEADER.match(header)
        if not match:
            continue
        path = match.group(2).decode("utf-8", errors="replace")
        files.append(path)
        head = header.split(b"\n@@", 1)[0]
        if b"\nnew file mode " in head:
            added.append(path)
        if b"\ndeleted file mode " in head:
            deleted.append(match.group(1).decode("utf-8", errors="replace"))
    return files, added, deleted
