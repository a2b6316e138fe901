"""The bases declared in upstream.toml: one verl release each, with the queue (folder of patches) kept for it.

One table `[base."<version>"]` per release, each naming its `queue` folder (one queue per supported release).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from packaging.version import InvalidVersion, Version

from verl_patches.errors import ConfigError
from verl_patches.model.upstream import GIT_ARCHIVE, SDIST_OVER_ARCHIVE, Upstream


@dataclass(frozen=True)
class Base:
    upstream: Upstream
    queue: str  # the queue folder, relative to the checkout
    # Its table in upstream.toml as canonical JSON, and the table of the base it is laid over when `over` names one:
    # what the build record hashes, so that a change of this model does not make every build tree look stale.
    declaration: str = field(default="", compare=False, repr=False)

    @property
    def version(self) -> str:
        return self.upstream.version


def parse_bases(data: dict, source: str = "upstream.toml") -> list[Base]:
    """Every declared base, oldest first."""
    tables = data.get("base")
    if "upstream" in data:
        legacy = data["upstream"]
        version = legacy.get("version") if isinstance(legacy, dict) else None
        version = version if isinstance(version, str) and version else "<version>"
        raise ConfigError(
            f"{source}: the [upstream] table is no longer read: declare each base as a table "
            f'[base."<version>"] naming its queue folder; here, first move build/verl (and build/backups, if present) '
            f"to build/{version}/, where a base's build tree and backups now are (build/verl may hold commits not "
            f'exported yet, which no command would look for there); then rename [upstream] to [base."{version}"] '
            'and add queue = "patches" (the folder of its series and patches)'
        )
    if tables is None:
        raise ConfigError(
            f'{source} declares no base: add a table [base."<version>"] with the release\'s name, source and pin, '
            'and queue = "patches/<version>", its folder of patches'
        )
    if not isinstance(tables, dict) or not tables or not all(isinstance(t, dict) for t in tables.values()):
        raise ConfigError(f'{source}: [base] must hold one table per release, e.g. [base."0.9.0"]')
    for version in tables:
        try:
            Version(version)
        except InvalidVersion as exc:
            raise ConfigError(f"{source}: [base.{version!r}]: {version!r} is not a PEP 440 version") from exc
    by_version: dict[str, Upstream] = {}
    declarations: dict[str, str] = {}
    order = sorted(tables, key=lambda v: (tables[v].get("source") == SDIST_OVER_ARCHIVE, Version(v)))
    bases = []
    for version in order:
        table = dict(tables[version])
        label = f'[base."{version}"]'
        if table.setdefault("version", version) != version:
            raise ConfigError(f"{source}: {label} says version = {table['version']!r}; leave it out or make it equal")
        over = None
        if table.get("source") == SDIST_OVER_ARCHIVE and isinstance(table.get("over"), dict):
            over = Upstream.commit_archive(table["over"], str(table.get("name", "")), source, label)
        elif table.get("source") == SDIST_OVER_ARCHIVE:
            over = by_version.get(str(table.get("over", "")))
            if over is None or over.source != GIT_ARCHIVE:
                archives = [v for v, u in by_version.items() if u.source == GIT_ARCHIVE]
                raise ConfigError(
                    f"{source}: {label} over = {table.get('over')!r} must name a declared base whose source is "
                    f"{GIT_ARCHIVE!r} (declared: {', '.join(archives) or 'none'}), or be a table "
                    "{repository, commit, tree} declaring a commit archive"
                )
        upstream = Upstream.from_table(table, source, label, over=over)
        queue = table.get("queue")
        if not isinstance(queue, str) or not queue:
            raise ConfigError(f'{source}: {label} needs queue = "patches/{version}", its folder of patches')
        parts = PurePosixPath(queue).parts
        if PurePosixPath(queue).is_absolute() or ".." in parts:
            raise ConfigError(f"{source}: {label} queue {queue!r} must be a folder inside the checkout")
        by_version[version] = upstream
        declarations[version] = json.dumps(tables[version], sort_keys=True, default=str)
        if over is not None and not isinstance(table.get("over"), dict):
            declarations[version] += "\0" + declarations[str(table["over"])]
        bases.append(Base(upstream, queue, declarations[version]))
    queues = [b.queue for b in bases]
    twice = sorted({q for q in queues if queues.count(q) > 1})
    if twice:
        raise ConfigError(f"{source}: queue {twice[0]!r} is named by more than one base; give each base its own")
    return sorted(bases, key=lambda b: Version(b.version))


def select(bases: list[Base], wanted: str | None, origin: str = "") -> Base:
    """The base named by wanted (default: the newest declared one); an unknown name lists the declared ones and
    says where the name came from (origin, e.g. "--base 2.0")."""
    if not wanted:
        return bases[-1]
    for base in bases:
        if base.version == wanted:
            return base
    raise ConfigError(
        f"no base {wanted!r} is declared in upstream.toml{f' ({origin})' if origin else ''}; "
        f"declared: {', '.join(b.version for b in bases)}"
    )
