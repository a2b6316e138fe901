"""The pinned upstream release: which verl source the series applies to, and how its content is pinned.

Source kinds:
- ``git-archive``: GitHub's archive of the repository at a tag (``tag``) or, without a tag, at a commit, pinned by
  the git tree id of its imported files (an archive sha256 may be recorded for reference; it is not checked:
  GitHub may re-compress archives).
- ``pypi-sdist``: the PyPI sdist, pinned by its sha256.
- ``sdist-over-archive``: the PyPI sdist (pinned by its sha256) with its files written over the import of an
  archive (``over``): another declared base's archive, named by its version, or a commit archive declared inline
  (``over = {repository, commit, tree}``, e.g. the branch a release was cut from). The paths the sdist does not ship
  come from that archive. Pinned also by the git tree id of the composed import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from verl_patches.errors import ConfigError

GIT_ARCHIVE = "git-archive"
PYPI_SDIST = "pypi-sdist"
SDIST_OVER_ARCHIVE = "sdist-over-archive"
SOURCES = (GIT_ARCHIVE, PYPI_SDIST, SDIST_OVER_ARCHIVE)

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_SHA1 = re.compile(r"^[0-9a-f]{40}$")
_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
# A tag and a name become part of a file name in the cache: a plain name, no '/' and no '..'.
_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")


@dataclass(frozen=True)
class Upstream:
    name: str
    version: str  # "" for a commit archive declared inline as a base's `over`: no release of its own
    sha256: str = ""
    source: str = PYPI_SDIST
    repository: str = ""
    git_tag: str = ""
    commit: str = ""
    tree: str = ""
    over: Upstream | None = None  # sdist-over-archive: the archive the sdist is laid over

    @property
    def sdist_filename(self) -> str:
        return f"{canonicalize_name(self.name).replace('-', '_')}-{self.version}.tar.gz"

    @property
    def archive_filename(self) -> str:
        """The name GitHub gives the archive: <repository name>-<tag without a leading v, or the commit>.tar.gz."""
        return f"{self.repository.split('/')[-1]}-{self.git_tag.removeprefix('v') or self.commit}.tar.gz"

    @property
    def archive_url(self) -> str:
        if self.git_tag:
            return f"https://github.com/{self.repository}/archive/refs/tags/{self.git_tag}.tar.gz"
        return f"https://github.com/{self.repository}/archive/{self.commit}.tar.gz"

    @property
    def archive_name(self) -> str:
        """How reports and messages name the archive: 'tag archive v0.9.0' or 'commit archive 1dda039b9c63'."""
        return f"tag archive {self.git_tag}" if self.git_tag else f"commit archive {self.commit[:12]}"

    @property
    def is_archive(self) -> bool:
        return self.source == GIT_ARCHIVE

    @property
    def is_overlay(self) -> bool:
        return self.source == SDIST_OVER_ARCHIVE

    @property
    def pins_tree(self) -> bool:
        """True when the import commit is checked by its git tree id."""
        return self.source in (GIT_ARCHIVE, SDIST_OVER_ARCHIVE)

    @property
    def tag(self) -> str:
        """The tag of its import in a build tree: upstream/<version>, or upstream/<commit> for an inline archive."""
        return f"upstream/{self.version or self.commit[:12]}"

    @classmethod
    def from_table(cls, table: dict, source: str, label: str, over: Upstream | None = None) -> Upstream:
        kind = table.get("source", PYPI_SDIST)  # upstream.toml files older than source kinds pin an sdist
        if kind not in SOURCES:
            raise ConfigError(f"{source}: {label} source must be one of {', '.join(SOURCES)}, not {kind!r}")
        required = ["name", "version"] + {
            GIT_ARCHIVE: ["repository", "commit", "tree"],
            PYPI_SDIST: ["sha256"],
            SDIST_OVER_ARCHIVE: ["sha256", "over", "tree"],
        }[kind]
        missing = [k for k in required if k != "over" and (not isinstance(table.get(k), str) or not table.get(k))]
        if kind == SDIST_OVER_ARCHIVE and not table.get("over"):
            missing.append("over")
        if missing:
            raise ConfigError(f"{source}: {label} with source = {kind!r} needs string keys {', '.join(missing)}")
        if kind == SDIST_OVER_ARCHIVE and (over is None or not over.source == GIT_ARCHIVE):
            raise ConfigError(
                f"{source}: {label} over = {table['over']!r} must name another declared base whose source is "
                f"{GIT_ARCHIVE!r}, or be a table {{repository, commit, tree}} declaring a commit archive"
            )
        try:
            Version(table["version"])
        except InvalidVersion as exc:
            raise ConfigError(f"{source}: version {table['version']!r} is not a PEP 440 version") from exc
        sha = str(table.get("sha256", "")).lower()
        if sha and not _SHA256.match(sha):
            raise ConfigError(f"{source}: sha256 {table['sha256']!r} is not 64 hex digits")
        for key in ("commit", "tree"):
            value = str(table.get(key, "")).lower()
            if value and not _SHA1.match(value):
                raise ConfigError(f"{source}: {key} {table[key]!r} is not a 40-hex-digit git object id")
        repository = str(table.get("repository", ""))
        if repository and (not _REPOSITORY.match(repository) or ".." in repository):
            raise ConfigError(f"{source}: repository {repository!r} is not of the form owner/name")
        tag = str(table.get("tag", ""))
        if tag and (not _TAG.match(tag) or ".." in tag):
            raise ConfigError(
                f"{source}: {label} tag {tag!r} is not a plain tag name (letters, digits and '._+-', no '/' and no "
                "'..'): it names the archive's file in the download cache"
            )
        if not _NAME.match(table["name"]) or ".." in table["name"]:
            raise ConfigError(
                f"{source}: {label} name {table['name']!r} is not a package name (letters, digits and '._-'): it "
                "names the sdist's file in the download cache"
            )
        return cls(
            name=table["name"],
            version=table["version"],
            sha256=sha,
            source=kind,
            repository=repository,
            git_tag=str(table.get("tag", "")),
            commit=str(table.get("commit", "")).lower(),
            tree=str(table.get("tree", "")).lower(),
            over=over if kind == SDIST_OVER_ARCHIVE else None,
        )

    @classmethod
    def commit_archive(cls, table: dict, name: str, source: str, label: str) -> Upstream:
        """The commit archive an sdist-over-archive base declares inline as its `over` table."""
        unknown = sorted(set(table) - {"repository", "commit", "tree", "sha256"})
        if unknown:
            raise ConfigError(
                f"{source}: {label} over has unknown keys {', '.join(unknown)}: a commit archive is declared by "
                "repository, commit and tree (sha256 optional, for reference)"
            )
        pinned = cls.from_table({**table, "name": name, "version": "0", "source": GIT_ARCHIVE}, source, f"{label} over")
        return cls(name, "", pinned.sha256, GIT_ARCHIVE, pinned.repository, "", pinned.commit, pinned.tree)


def local_version(upstream_version: str, patch_count: int) -> str:
    """PEP 440 version of the patched wheel, e.g. 0.9.0+fix.5."""
    version = Version(f"{upstream_version}+fix.{patch_count}")
    return str(version)
