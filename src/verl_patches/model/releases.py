"""verl's releases as its package index and its repository list them, and the state of an upstream pull request.

Parsing only: the documents come from PyPI's JSON API (``/pypi/<name>/json``) and GitHub's REST API (``/tags``,
``/pulls/<n>``); fetching them is upstream_index.py's job."""

from __future__ import annotations

from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from verl_patches.errors import VerlPatchesError


class BadIndexDocument(VerlPatchesError):
    """An index answered with a document of an unexpected shape."""


def _release(text: str) -> Version | None:
    """The version, when text names a final release (not a pre- or dev-release; post-releases count); else None."""
    try:
        version = Version(text)
    except InvalidVersion:
        return None
    return None if version.is_prerelease or version.is_devrelease else version


def pypi_releases(document: object) -> dict[str, str]:
    """Version -> the sha256 of its sdist ('' when it has none) for each final release PyPI's JSON lists with at
    least one file that is not yanked."""
    releases = document.get("releases") if isinstance(document, dict) else None
    if not isinstance(releases, dict):
        raise BadIndexDocument("PyPI's answer has no 'releases' mapping")
    found = {}
    for text, files in releases.items():
        if _release(str(text)) is None or not isinstance(files, list):
            continue
        live = [f for f in files if isinstance(f, dict) and not f.get("yanked")]
        if not live:
            continue
        sdists = [f for f in live if f.get("packagetype") == "sdist"]
        digest = (sdists[0].get("digests") or {}).get("sha256", "") if sdists else ""
        found[str(text)] = str(digest)
    return found


def github_tags(document: object) -> dict[str, str]:
    """Version -> tag name for each tag of GitHub's tag list that names a final release ('v0.9.2' or '0.9.2')."""
    if not isinstance(document, list):
        raise BadIndexDocument("GitHub's answer is not a list of tags")
    found = {}
    for tag in document:
        name = tag.get("name") if isinstance(tag, dict) else None
        if isinstance(name, str) and _release(name.removeprefix("v")) is not None:
            found[name.removeprefix("v")] = name
    return found


@dataclass
class Release:
    version: str
    sdist_sha256: str = ""  # from PyPI; '' when PyPI did not list an sdist (or was not asked)
    tag: str = ""  # from GitHub; '' when GitHub did not list one (or was not asked)
    sources: list[str] = field(default_factory=list)

    def describe(self) -> str:
        parts = []
        if "PyPI" in self.sources:
            parts.append(f"PyPI sdist sha256 {self.sdist_sha256}" if self.sdist_sha256 else "on PyPI without an sdist")
        if self.tag:
            parts.append(f"GitHub tag {self.tag}")
        return f"{self.version} ({'; '.join(parts)})"


def newer_releases(than: str, pypi: dict[str, str] | None, tags: dict[str, str] | None) -> list[Release]:
    """The releases newer than `than` that either source lists (None: that source was not reached), oldest first."""
    merged: dict[Version, Release] = {}
    for source, listed in (("PyPI", pypi), ("GitHub", tags)):
        for text, value in (listed or {}).items():
            version = Version(text)
            if version <= Version(than):
                continue
            release = merged.setdefault(version, Release(str(version)))
            release.sources.append(source)
            if source == "PyPI":
                release.sdist_sha256 = value
            else:
                release.tag = value
    return [merged[v] for v in sorted(merged)]


def pull_state(document: object) -> str:
    """'merged', 'closed' (without merging) or 'open', from GitHub's pull request document."""
    if not isinstance(document, dict) or document.get("state") not in ("open", "closed"):
        raise BadIndexDocument("GitHub's answer is not a pull request with a state")
    if document.get("merged") or document.get("merged_at"):
        return "merged"
    return str(document["state"])
