"""One patch of the series, parsed from its git format-patch (mbox) bytes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from email.header import decode_header, make_header
from email.parser import HeaderParser

from verl_patches.errors import ConfigError
from verl_patches.model.trailers import (
    APPLIED_UPSTREAM,
    BACKPORT_SUBJECT,
    BUG,
    EXEMPT_TRAILER,
    FORWARDED,
    HARDWARE_RUN,
    ORIGIN,
    AppliedUpstream,
    Forwarded,
    GitHubRef,
    Origin,
    is_url,
)

_TRAILER_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*):\s*(.*)$")
_DIFF_HEADER = re.compile(rb"^diff --git a/(.+?) b/(.+)$", re.M)

# The identity under which patches are authored and the build tree's commits are made.
PROJECT_NAME = "verl-patches"
PROJECT_EMAIL = "verl-patches@users.noreply.github.com"
PROJECT_IDENT = f"{PROJECT_NAME} <{PROJECT_EMAIL}>"

# export writes format-patch's signature block with this fixed text (`--signature=verl-patches`): every patch file
# then ends with END_MARKER, so a file cut anywhere, even exactly before one of its `diff --git` sections, lacks it.
# The text carries no git version, so the bytes stay stable; git am ignores the block.
SIGNATURE = "verl-patches"
END_MARKER = b"\n-- \n" + SIGNATURE.encode() + b"\n\n"


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
    changed_lines: dict[str, int] = field(default_factory=dict)  # path -> lines added plus lines removed
    runners_added: list[str] = field(default_factory=list)  # `runs-on:` values the patch adds to workflows
    separator_in_message: bool = False
    has_diff: bool = True

    @classmethod
    def parse(cls, name: str, data: bytes, marker: bool = True) -> Patch:
        """marker=False takes a file without END_MARKER (one exported before export wrote it, from git history)."""
        if not data.startswith(b"From "):
            raise ConfigError(f"{name}: not a git format-patch file (first line must start with 'From ')")
        if data.split(b"\n", 1)[0].endswith(b"\r"):
            raise ConfigError(
                f"{name}: its lines end in CRLF (Windows line endings), not git's LF: it was converted on checkout or "
                "by an editor. Restore it byte for byte from git (`git checkout -- <file>`: the checkout's "
                ".gitattributes marks patch files -text), or re-export it from a build tree that holds the patch"
            )
        head_end = data.find(b"\n\n")
        if head_end < 0:
            raise ConfigError(f"{name}: no blank line after the mail headers")
        # git writes raw UTF-8 headers (--no-encode-email-headers); RFC 2047 encoded words are decoded too.
        headers = HeaderParser().parsestr(data[: head_end + 1].decode("utf-8", errors="replace"))
        subject = _decode(headers.get("Subject", ""))
        if not subject:
            raise ConfigError(f"{name}: no Subject header")
        marked = data.endswith(END_MARKER)
        # Without the marker, a partial one (a file cut inside it) is left out of the section check below.
        tail = len(END_MARKER) - 1 if marked else _partial_marker(data)
        rest = data[head_end + 2 : len(data) - tail]
        diff_at = rest.find(b"\ndiff --git ")
        if rest.startswith(b"diff --git "):
            diff_at = 0
        message_part = rest if diff_at < 0 else rest[:diff_at]
        message, separator_in_message = _split_message(message_part.decode("utf-8", errors="replace"))
        diff = b"" if diff_at < 0 else rest[diff_at:]
        problem = cut_short(diff)
        if problem:
            raise ConfigError(
                f"{name}: cut short: {problem}. The file is incomplete (a cut-short copy, a bad merge or a hand "
                "edit): restore the whole file from git, or re-export it from a build tree that holds the patch"
            )
        if marker and not marked:
            raise ConfigError(
                f"{name}: may be cut short: it does not end with the end marker that `verl-patches export` writes "
                f"(a line '-- ', a line '{SIGNATURE}' and a blank line), so a part of it may be missing (one or more "
                "whole `diff --git` sections). Restore the whole file from git, or re-export it "
                "with `verl-patches export` from a build tree that holds the patch; a patch file written by other "
                "means (git format-patch by hand, a mail) must be exported from the build tree, or, if it is whole, "
                f"end with the marker: replace any signature block with it, or append it (`printf -- '-- \\n{SIGNATURE}"
                "\\n\\n' >> <file>`)"
            )
        files, added, deleted, changed = _files(diff)
        runners = _runners_added(diff)
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
            changed_lines=changed,
            runners_added=runners,
            separator_in_message=separator_in_message,
            has_diff=bool(files),
        )

    def trailer_values(self, key: str) -> list[str]:
        return [v for k, v in self.trailers if k.lower() == key.lower()]

    def _single(self, key: str, parse):
        values = self.trailer_values(key)
        return parse(values[0]) if len(values) == 1 else None

    @property
    def forwarded(self) -> Forwarded | None:
        """The one well-formed Forwarded trailer (None when missing, repeated or malformed)."""
        return self._single(FORWARDED, Forwarded.parse)

    @property
    def origin(self) -> Origin | None:
        """The one well-formed `Origin: backport, <URL>` trailer: the patch is a backport of that PR."""
        return self._single(ORIGIN, Origin.parse)

    @property
    def self_hosted_runners(self) -> list[str]:
        """The self-hosted runner labels of the CI jobs the patch adds: such a job needs a run there first."""
        return [label for label in self.runners_added if not GITHUB_HOSTED.match(label)]

    @property
    def hardware_run(self) -> str | None:
        """The URL of the one `Hardware-Run:` trailer, when it is one."""
        values = self.trailer_values(HARDWARE_RUN)
        return values[0] if len(values) == 1 and is_url(values[0]) else None

    @property
    def applied_upstream(self) -> AppliedUpstream | None:
        return self._single(APPLIED_UPSTREAM, AppliedUpstream.parse)

    @property
    def bugs(self) -> list[GitHubRef]:
        """The upstream issues and PRs of the well-formed Bug trailers, in order."""
        return [ref for ref in map(GitHubRef.parse, self.trailer_values(BUG)) if ref is not None]

    @property
    def backport_of(self) -> int | None:
        """N when the subject ends ' (backport of verl#N)'."""
        match = BACKPORT_SUBJECT.search(self.subject)
        return int(match.group("number")) if match else None

    @property
    def message_without_trailers(self) -> str:
        """The body without its trailer paragraph."""
        if not self.trailers:
            return self.body
        paragraphs = [p for p in re.split(r"\n\s*\n", self.body.strip("\n")) if p.strip()]
        return "\n\n".join(paragraphs[:-1])

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

    def lines_under(self, prefix: str) -> int:
        """Lines added plus lines removed in the files under prefix (e.g. 'verl/' or 'tests/')."""
        return sum(n for path, n in self.changed_lines.items() if path.startswith(prefix))

    @property
    def helper_files(self) -> list[str]:
        """Test helper modules (tests/**/_*.py) it adds or changes: a case added there runs in their importers."""
        return [f for f in self.files if is_test_helper(f) and f not in self.deleted_files]

    def tests_matching(self, suffix: str) -> list[str]:
        """Test files this patch adds or changes (not deletes) whose name ends in suffix, e.g. '_on_cpu.py'."""
        return [f for f in self.test_files if f.endswith(suffix) and f not in self.deleted_files]


def is_test_helper(path: str) -> bool:
    """A module under tests/ whose name starts with an underscore (not a package's __init__.py)."""
    name = path.rsplit("/", 1)[-1]
    return path.startswith("tests/") and name.startswith("_") and name.endswith(".py") and name != "__init__.py"


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


def _partial_marker(data: bytes) -> int:
    """How many bytes of a cut-short END_MARKER (from its '-- ' line on) end data; 0 when none do."""
    for size in range(len(END_MARKER) - 1, 3, -1):
        if data.endswith(END_MARKER[:size]):
            return size - 1  # the newline before '-- ' ends the diff's last line
    return 0


def _files(diff: bytes) -> tuple[list[str], list[str], list[str], dict[str, int]]:
    files: list[str] = []
    added: list[str] = []
    deleted: list[str] = []
    changed: dict[str, int] = {}
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
        head, _, hunks = header.partition(b"\n@@")
        if b"\nnew file mode " in head:
            added.append(path)
        if b"\ndeleted file mode " in head:
            deleted.append(match.group(1).decode("utf-8", errors="replace"))
        changed[path] = sum(1 for line in hunks.split(b"\n") if line[:1] in (b"+", b"-"))
    return files, added, deleted, changed


_WORKFLOW = re.compile(rb"^diff --git a/\S+ b/\.github/workflows/[^/\s]+\.ya?ml$")
_RUNS_ON = re.compile(rb"^\+\s*runs-on:\s*(\S+)")
# Runner labels of GitHub-hosted machines; any other `runs-on:` is a self-hosted (GPU, NPU) runner.
GITHUB_HOSTED = re.compile(r"^['\"]?(ubuntu|windows|macos)-")


def _runners_added(diff: bytes) -> list[str]:
    """The `runs-on:` values on the lines a patch adds to .github/workflows/*.yml."""
    found, in_workflow = [], False
    for line in diff.split(b"\n"):
        if line.startswith(b"diff --git "):
            in_workflow = bool(_WORKFLOW.match(line))
        elif in_workflow and (match := _RUNS_ON.match(line)):
            found.append(match.group(1).decode("utf-8", errors="replace"))
    return found


_HUNK = re.compile(rb"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_EMPTY_BLOB = b"e69de29"
_PAIRS = ((b"rename from ", b"rename to "), (b"copy from ", b"copy to "), (b"old mode ", b"new mode "))


def cut_short(diff: bytes) -> str | None:
    """Where the first `diff --git` section of a patch's diff is incomplete; None when every section is whole:
    each hunk holds the lines its header counts, a section with file names has a hunk, binary data is whole."""
    lines = diff.split(b"\n")
    starts = [i for i, line in enumerate(lines) if line.startswith(b"diff --git ")]
    for start, end in zip(starts, [*starts[1:], len(lines) - 1], strict=False):
        match = _DIFF_HEADER.match(lines[start])
        path = match.group(2).decode("utf-8", errors="replace") if match else lines[start][11:].decode(errors="replace")
        problem = _section_problem(lines[start + 1 : end])
        if problem is None and end == len(lines) - 1 and lines[-1]:
            problem = "stops inside a line (the file's last line has no newline)"
        if problem:
            return f"the section for {path} {problem}"
    return None


def _section_problem(lines: list[bytes]) -> str | None:
    body = next((i for i, line in enumerate(lines) if line.startswith((b"@@ ", b"GIT binary patch"))), len(lines))
    header = lines[:body]
    for first, second in _PAIRS:
        if any(h.startswith(first) for h in header) and not any(h.startswith(second) for h in header):
            return f"ends after '{first.decode().strip()}', before '{second.decode().strip()}'"
    if body < len(lines) and lines[body].startswith(b"GIT binary patch"):
        return _binary_problem(lines[body + 1 :])
    if body == len(lines):  # no hunk: whole only as a mode change, a rename, a copy or an empty file
        if any(h.startswith((b"--- ", b"+++ ")) for h in header):
            return "ends after its file names, before any hunk"
        index = next((h for h in header if h.startswith(b"index ")), None)
        if any(h.startswith((b"new file mode", b"deleted file mode")) for h in header):
            blobs = index.split()[1].split(b"..") if index else []
            if len(blobs) != 2 or _EMPTY_BLOB not in blobs[0] + blobs[1]:
                return "ends after its header, before the file's content"
        elif not any(h.startswith((b"rename from", b"copy from", b"old mode", b"Binary files ")) for h in header):
            return "ends after its header, before any change"
        return None
    i = body
    while i < len(lines) and (hunk := _HUNK.match(lines[i])):
        old, new = (int(count) if count is not None else 1 for count in hunk.groups())
        i += 1
        while old > 0 or new > 0:
            if i >= len(lines):
                return f"ends inside a hunk ({lines[body].decode(errors='replace')}...)"
            kind = lines[i][:1]
            if kind in (b" ", b""):
                old, new = old - 1, new - 1
            elif kind == b"-":
                old -= 1
            elif kind == b"+":
                new -= 1
            elif kind != b"\\":
                return f"has a hunk with fewer lines than its header counts, at {lines[i][:40]!r}"
            i += 1
        while i < len(lines) and lines[i].startswith(b"\\"):
            i += 1
    return None


def _binary_problem(lines: list[bytes]) -> str | None:
    """git's base85 blocks: `literal N` or `delta N`, data lines (length letter, 5 characters per 4 bytes), a blank
    line; at least one whole block."""
    blocks, i = 0, 0
    while i < len(lines) and re.match(rb"^(literal|delta) \d+$", lines[i]):
        i += 1
        while i < len(lines) and lines[i]:
            size = lines[i][:1]
            count = ord(size) - ord("A") + 1 if b"A" <= size <= b"Z" else ord(size) - ord("a") + 27
            if not (1 <= count <= 52) or len(lines[i]) != 1 + (count + 3) // 4 * 5:
                return "has a binary block with a damaged line"
            i += 1
        if i >= len(lines):
            return "ends inside its binary data"
        blocks, i = blocks + 1, i + 1
    return None if blocks else "ends before its binary data"
