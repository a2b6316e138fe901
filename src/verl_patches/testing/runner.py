"""Run pytest on files of a work tree in build/venv, caching the outcome by git tree id."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from verl_patches.git.tree import BuildTree
from verl_patches.sources import files as state_files
from verl_patches.testing import pytest_run
from verl_patches.testing.venv import run_env

__all__ = ["Outcome", "PytestRunner"]


@dataclass(frozen=True)
class Outcome:
    returncode: int
    failed: tuple[str, ...] = ()
    summary: str = ""
    lines: tuple[str, ...] = ()  # pytest's short test summary lines (-rfE), with the failure messages

    @property
    def passed(self) -> bool:
        return self.returncode == 0


@dataclass
class PytestRunner:
    python: Path
    cache_path: Path
    env_stamp: str = ""
    runs: int = 0
    cached: int = 0
    _cache: dict[str, dict] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cache = state_files.read_json(self.cache_path)
        self._cache = cache if isinstance(cache, dict) else {}

    def outcome(self, tree: BuildTree, files: list[str]) -> Outcome:
        """pytest over files in tree's current index state: exit status, failing test ids, summary line."""
        tree_id = tree.git.out("write-tree")
        key = hashlib.sha256("\0".join([tree_id, self.env_stamp, *files]).encode()).hexdigest()
        entry = self._cache.get(key)
        if isinstance(entry, dict) and "lines" in entry:
            self.cached += 1
            return Outcome(entry["rc"], tuple(entry["failed"]), entry["summary"], tuple(entry["lines"]))
        self.runs += 1
        env = run_env(self.python, {"PYTHONPATH": str(tree.path), "PYTHONDONTWRITEBYTECODE": "1"})
        ran = pytest_run.run(self.python, files, 900, tree.path, env, options=["-q"])
        result = Outcome(ran.returncode, ran.failed, ran.summary, ran.lines)
        self._cache[key] = {
            "rc": result.returncode,
            "failed": list(result.failed),
            "summary": result.summary,
            "lines": list(result.lines),
        }
        state_files.write_json(self.cache_path, self._cache, indent=0)
        return result

    def run(self, tree: BuildTree, files: list[str]) -> int:
        return self.outcome(tree, files).returncode
