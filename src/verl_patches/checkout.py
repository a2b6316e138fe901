"""Where things live in a verl-patches checkout, and loading its files into the data model."""

from __future__ import annotations

import dataclasses
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from verl_patches.errors import ConfigError
from verl_patches.model.bases import Base, parse_bases, select
from verl_patches.model.patch import Patch
from verl_patches.model.series import Series
from verl_patches.model.upstream import Upstream

# The one import of a TOML parser for the package, its tests, CI scripts and benchmarks.
if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

UPSTREAM_FILE = "upstream.toml"
BASE_ENV = "VERL_PATCHES_BASE"


def cache_dir() -> Path:
    """The download cache: $VERL_PATCHES_CACHE, else verl-patches/ in $XDG_CACHE_HOME (default ~/.cache)."""
    configured = os.environ.get("VERL_PATCHES_CACHE")
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "verl-patches"


def read_text(path: Path, name: str) -> str:
    """A UTF-8 text file of the checkout; a byte that is not UTF-8 is named with its line."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{name} is not UTF-8: byte {data[exc.start]:#04x} on line {line} (offset {exc.start}); save it as UTF-8"
        ) from None


@dataclass(frozen=True)
class Project:
    root: Path
    mirror: str | None = None
    base: str | None = None  # the declared base to work on (default: $VERL_PATCHES_BASE, else the newest)
    # upstream.toml's bases as `loaded()` read them once for the command; None: read on each call.
    declared: tuple[Base, ...] | None = field(default=None, compare=False, repr=False)
    # The patch files `loaded()`'s copies parsed, by name and content: each is parsed once in a command, however
    # often it is read (a file written meanwhile is parsed again); None: parsed on each read.
    parsed: dict[tuple[str, bytes], Patch] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def find(cls, start: str | os.PathLike | None = None) -> Project:
        here = Path(start or os.getcwd()).resolve()
        for candidate in (here, *here.parents):
            if (candidate / UPSTREAM_FILE).is_file():
                return cls(candidate)
        raise ConfigError(
            f"no {UPSTREAM_FILE} in {here} or any parent: run inside a verl-patches checkout or pass -C DIR"
        )

    def loaded(self) -> Project:
        """This checkout with upstream.toml read now, once: the copies made from it (for_base,
        dataclasses.replace) keep what was read, and share the patch files parsed since."""
        return dataclasses.replace(self, declared=tuple(self.read_bases()), parsed={})

    def bases(self) -> list[Base]:
        """Every base upstream.toml declares, oldest first."""
        return list(self.declared) if self.declared is not None else self.read_bases()

    def read_bases(self) -> list[Base]:
        try:
            data = tomllib.loads(read_text(self.upstream_path, UPSTREAM_FILE))
        except FileNotFoundError as exc:
            raise ConfigError(f"{self.upstream_path} is missing") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{UPSTREAM_FILE}: {exc}") from exc
        return parse_bases(data, UPSTREAM_FILE)

    def selected(self) -> Base:
        if self.base:
            return select(self.bases(), self.base, f"--base {self.base}")
        wanted = os.environ.get(BASE_ENV)
        return select(self.bases(), wanted, f"{BASE_ENV}={wanted} in the environment")

    def for_base(self, version: str) -> Project:
        return dataclasses.replace(self, base=version)

    @property
    def queue(self) -> str:
        """The queue folder of the selected base, relative to the checkout (e.g. patches/0.9.0)."""
        return self.selected().queue

    @property
    def patches_dir(self) -> Path:
        return self.root / self.queue

    @property
    def series_path(self) -> Path:
        return self.patches_dir / "series"

    @property
    def upstream_path(self) -> Path:
        return self.root / UPSTREAM_FILE

    @property
    def build_dir(self) -> Path:
        configured = os.environ.get("VERL_PATCHES_BUILD_DIR")
        return self.root / configured if configured else self.root / "build"

    @property
    def base_build_dir(self) -> Path:
        """The selected base's own build folder (its build tree, backups and records): build/<version>."""
        return self.build_dir / self.selected().version

    @property
    def tree_dir(self) -> Path:
        return self.base_build_dir / "verl"

    @property
    def tree_name(self) -> str:
        """The build tree as messages name it: relative to the checkout (e.g. build/0.9.0/verl) when inside it."""
        inside = self.tree_dir.is_relative_to(self.root)
        return self.tree_dir.relative_to(self.root).as_posix() if inside else str(self.tree_dir)

    @property
    def venv_dir(self) -> Path:
        return self.build_dir / "venv"

    @property
    def backup_dir(self) -> Path:
        return self.base_build_dir / "backups"

    @property
    def dist_dir(self) -> Path:
        return self.root / "dist"

    @property
    def cache_dir(self) -> Path:
        return cache_dir()

    @property
    def requirements_path(self) -> Path:
        return self.root / "requirements" / "cpu-test.txt"

    @property
    def requirements_paths(self) -> list[Path]:
        """The requirements of build/venv: cpu-test.txt, then cpu-test-nodeps.txt (installed with --no-deps)."""
        return [self.requirements_path, self.root / "requirements" / "cpu-test-nodeps.txt"]

    def load_upstream(self) -> Upstream:
        return self.selected().upstream

    def load_series(self) -> Series:
        """The queue's series; a queue folder or series file that does not exist is an error, not an empty queue."""
        if not self.patches_dir.is_dir():
            queue = shlex.quote(self.queue)
            raise ConfigError(
                f"the queue folder {self.queue}/ does not exist (upstream.toml names it for base "
                f"{self.selected().version}): restore it (`git checkout -- {queue}`), or start an empty queue with "
                f"`mkdir -p {queue} && touch {queue}/series`"
            )
        if self.series_path.is_dir():
            raise ConfigError(f"{self.queue}/series is a folder: the series is a file of patch file names, one a line")
        if not self.series_path.is_file():
            raise ConfigError(
                f"{self.queue}/series does not exist: restore it (`git checkout -- {shlex.quote(self.queue)}/series`), "
                "or write it: the queue's patch file names in order, one a line"
            )
        return Series.parse(read_text(self.series_path, f"{self.queue}/series"), f"{self.queue}/series")

    def patch_path(self, name: str) -> Path:
        return self.patches_dir / name

    def parse_patch(self, name: str, data: bytes | None = None) -> Patch:
        """The queue's patch file name (data: its bytes, already read), parsed once per command (see `parsed`)."""
        data = self.patch_path(name).read_bytes() if data is None else data
        if self.parsed is None:
            return Patch.parse(name, data)
        key = (name, data)
        if key not in self.parsed:
            self.parsed[key] = Patch.parse(name, data)
        return self.parsed[key]

    def load_patches(self, series: Series | None = None) -> list[Patch]:
        """Parse every patch the series lists; a listed file that is missing is an error."""
        series = series or self.load_series()
        twice = series.duplicates()
        if twice:
            raise ConfigError(f"{self.queue}/series lists {', '.join(twice)} more than once; list each patch once")
        patches = []
        for name in series.names:
            path = self.patch_path(name)
            if path.is_dir():
                raise ConfigError(f"{self.queue}/series lists {name}, but {self.queue}/{name} is a folder, not a patch")
            if not path.is_file():
                raise ConfigError(f"{self.queue}/series lists {name}, but {self.queue}/{name} does not exist")
            patches.append(self.parse_patch(name))
        return patches

    def patch_files_on_disk(self) -> list[str]:
        if not self.patches_dir.is_dir():
            return []
        return sorted(p.name for p in self.patches_dir.glob("*.patch"))
