"""The pinned upstream release: which PyPI sdist the series applies to."""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from verl_patches.errors import ConfigError

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Upstream:
    name: str
    version: str
    sha256: str

    @property
    def sdist_filename(self) -> str:
        return f"{canonicalize_name(self.name).replace('-', '_')}-{self.version}.tar.gz"

    @property
    def tag(self) -> str:
        return f"upstream/{self.version}"

    @classmethod
    def from_mapping(cls, data: dict, source: str = "upstream.toml") -> Upstream:
        table = data.get("upstream")
        if not isinstance(table, dict):
            raise ConfigError(f"{source}: missing [upstream] table with name, version and sha256")
        missing = [k for k in ("name", "version", "sha256") if not isinstance(table.get(k), str) or not table.get(k)]
        if missing:
            raise ConfigError(f"{source}: [upstream] needs string keys {', '.join(missing)}")
        try:
            Version(table["version"])
        except InvalidVersion as exc:
            raise ConfigError(f"{source}: version {table['version']!r} is not a PEP 440 version") from exc
        sha = table["sha256"].lower()
        if not _SHA256.match(sha):
            raise ConfigError(f"{source}: sha256 {table['sha256']!r} is not 64 hex digits")
        return cls(name=table["name"], version=table["version"], sha256=sha)

    def to_toml(self) -> str:
        return (
            "# The verl release the series applies to: the PyPI sdist, pinned by sha256.\n"
            "[upstream]\n"
            f'name = "{self.name}"\n'
            f'version = "{self.version}"\n'
            f'sha256 = "{self.sha256}"\n'
        )


def local_version(upstream_version: str, patch_count: int) -> str:
    """PEP 440 version of the patched wheel, e.g. 0.9.0+fix.5."""
    version = Version(f"{upstream_version}+fix.{patch_count}")
    return str(version)
