"""The DEP-3 trailers that say where a patch stands with verl upstream: Forwarded, Origin, Applied-Upstream, Bug.

- ``Forwarded: no | not-needed | <URL of the upstream PR>``: exactly one on every patch.
- ``Origin: backport, <URL of the merged upstream PR>``: the patch backports that change (its subject ends
  `` (backport of verl#N)``); a backport is ``Forwarded: not-needed``.
- ``Applied-Upstream: <version>[, <URL>]`` or ``Applied-Upstream: <URL>``: where the change landed upstream.
- ``Bug: <URL>`` (repeatable): an upstream issue or PR the patch answers.
- ``Hardware-Run: <URL>``: a green run, on its runner, of the self-hosted CI job the patch adds; a patch that adds
  such a job is not sent upstream without one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

FORWARDED = "Forwarded"
ORIGIN = "Origin"
APPLIED_UPSTREAM = "Applied-Upstream"
BUG = "Bug"
HARDWARE_RUN = "Hardware-Run"
EXEMPT_TRAILER = "Prove-Exempt"

NOT_FORWARDED = "no"
NOT_NEEDED = "not-needed"
BACKPORT = "backport"
HOME = "verl-project/verl"  # the repository a bare `#N` refers to

_GITHUB = re.compile(r"^https://github\.com/(?P<repo>[\w.-]+/[\w.-]+)/(?P<kind>pull|issues)/(?P<number>\d+)/?$")
_URL = re.compile(r"^https?://\S+$")


def is_url(value: str) -> bool:
    return bool(_URL.match(value))


BACKPORT_SUBJECT = re.compile(r" \(backport of verl#(?P<number>\d+)\)$")


@dataclass(frozen=True)
class GitHubRef:
    """An issue or pull request on GitHub, from its URL."""

    url: str
    repository: str
    kind: str  # "pull" or "issues"
    number: int

    @classmethod
    def parse(cls, url: str) -> GitHubRef | None:
        match = _GITHUB.match(url.strip())
        if not match:
            return None
        return cls(url.strip(), match.group("repo"), match.group("kind"), int(match.group("number")))

    @property
    def short(self) -> str:
        """`#N` for verl's repository, `owner/name#N` for another."""
        return f"#{self.number}" if self.repository.lower() == HOME else f"{self.repository}#{self.number}"


@dataclass(frozen=True)
class Forwarded:
    value: str
    pr: GitHubRef | None = None  # the upstream pull request the patch was sent as

    @classmethod
    def parse(cls, value: str) -> Forwarded | None:
        value = value.strip()
        if value in (NOT_FORWARDED, NOT_NEEDED):
            return cls(value)
        ref = GitHubRef.parse(value)
        return cls(value, ref) if ref and ref.kind == "pull" else None

    @property
    def needed(self) -> bool:
        return self.value != NOT_NEEDED


@dataclass(frozen=True)
class Origin:
    """`Origin: backport, <URL>`: the patch backports the merged upstream pull request pr."""

    pr: GitHubRef

    @classmethod
    def parse(cls, value: str) -> Origin | None:
        category, _, url = value.partition(",")
        ref = GitHubRef.parse(url)
        if category.strip() != BACKPORT or ref is None or ref.kind != "pull":
            return None
        return cls(ref)


@dataclass(frozen=True)
class AppliedUpstream:
    """`Applied-Upstream: <version>[, <URL>]` or `Applied-Upstream: <URL>`."""

    version: str | None
    url: str | None

    @classmethod
    def parse(cls, value: str) -> AppliedUpstream | None:
        value = value.strip()
        if _URL.match(value):
            return cls(None, value)
        version, comma, url = value.partition(",")
        url = url.strip()
        if comma and not _URL.match(url):
            return None
        try:
            Version(version.strip())
        except InvalidVersion:
            return None
        return cls(version.strip(), url or None)

    def released_by(self, version: str) -> bool:
        """True when the change is in verl `version`: it landed in that release or an older one."""
        return self.version is not None and Version(self.version) <= Version(version)

    def format(self) -> str:
        return ", ".join(part for part in (self.version, self.url) if part)


def forwarded_help() -> str:
    return (
        f"'{FORWARDED}: {NOT_FORWARDED}' (not sent upstream yet), '{FORWARDED}: {NOT_NEEDED}' (not meant for "
        f"upstream: a backport, a change for this project only) or '{FORWARDED}: "
        f"https://github.com/{HOME}/pull/N' (sent as that pull request)"
    )
