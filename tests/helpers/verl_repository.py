"""verl's own repository at a declared base, for the tests that run verl's scripts and read its workflows.

The tool imports it as `apply` does, so the pinned tree id is checked before a test reads a byte of it. The archive
comes from the offline mirror beside the project (`../shared/upstream`), else $VERL_PATCHES_MIRROR, else the
tool's cache (where `make` leaves it before `make test`, as the CPU workflow runs them), else GitHub; a test that
can reach none of them is skipped with the reason; an archive of other files fails it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from verl_patches.checkout import Project, cache_dir
from verl_patches.errors import VerlPatchesError
from verl_patches.git.tree import BuildTree
from verl_patches.sources.source import MIRROR_ENV, archive_cache_path, fetch, import_source

ROOT = Path(__file__).resolve().parents[2]
# Read when the tests are collected, before any fixture changes the environment.
MIRRORS = [ROOT.parent / "shared" / "upstream", Path(os.environ[MIRROR_ENV]) if os.environ.get(MIRROR_ENV) else None]
CACHE = cache_dir()


def verl_repository(version: str, where: Path) -> Path:
    """The verified files of the base `version` of this project's upstream.toml, checked out in where/verl."""
    upstream = next(base.upstream for base in Project(ROOT).loaded().bases() if base.version == version)
    cached = archive_cache_path(upstream, CACHE)
    found = [m for m in [*MIRRORS, cached.parent] if m and (m / upstream.archive_filename).is_file()]
    mirror = str(found[0]) if found else None
    try:
        fetch(upstream, where / "cache", mirror)
    except VerlPatchesError as exc:
        pytest.skip(f"verl {version}'s repository archive cannot be had here: {str(exc).splitlines()[0]}")
    tree = BuildTree(where / "verl")
    import_source(tree, upstream, where / "cache", mirror)  # fails on files that do not give the pinned tree id
    return tree.path
