"""The build tree a benchmark measures: build/<version>/verl of the base in VERL_PATCHES_BASE, else the newest
base upstream.toml declares (as the tool picks it)."""

from __future__ import annotations

import os
from pathlib import Path

from verl_patches.checkout import tomllib

ROOT = Path(__file__).resolve().parents[1]


def build_dir() -> Path:
    build = Path(os.environ.get("VERL_PATCHES_BUILD_DIR", ROOT / "build"))
    return build if build.is_absolute() else ROOT / build


def default_base() -> str:
    if os.environ.get("VERL_PATCHES_BASE"):
        return os.environ["VERL_PATCHES_BASE"]
    declared = tomllib.loads((ROOT / "upstream.toml").read_text(encoding="utf-8")).get("base", {})
    if not declared:
        raise SystemExit('upstream.toml declares no [base."<version>"] table')
    return max(declared, key=lambda version: tuple(int(part) for part in version.split(".") if part.isdigit()))


def default_tree(base: str | None = None) -> Path:
    return build_dir() / (base or default_base()) / "verl"
