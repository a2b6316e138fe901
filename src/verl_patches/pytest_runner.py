"""Run pytest on files of a work tree in build/venv, caching the exit status by git tree id."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from verl_patches.tree import BuildTree

# pytest exit codes: 0 all passed, 1 some failed, 2 interrupted (collection errors), 5 nothing collected.
FAILED_CODES = (1, 2)


@dataclass
class PytestRunner:
    python: Path
    cache_path: Path
    env_stamp: str = ""
    runs: int = 0
    cached: int = 0
    _cache: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.cache_path.exists():
            try:
                self._cache = json.loads(self.cache_path.read_text())
            except json.JSONDecodeError:
                self._cache = {}

    def run(self, tree: BuildTree, files: list[str]) -> int:
        """Exit status of pytest over files in tree's current index state."""
        tree_id = tree.git.out("write-tree")
        key = hashlib.sha256("\0".join([tree_id, self.env_stamp, *files]).encode()).hexdigest()
        if key in self._cache:
            self.cached += 1
            return self._cache[key]
        self.runs += 1
        env = {**os.environ, "PYTHONPATH": str(tree.path), "PYTHONDONTWRITEBYTECODE": "1"}
        cmd = [str(self.python), "-m", "pytest", "-p", "no:cacheprovider", "-q", "--timeout=900", *files]
        proc = subprocess.run(cmd, cwd=tree.path, env=env, capture_output=True, text=True)
        self._cache[key] = proc.returncode
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        self.cache_path.write_text(json.dumps(self._cache, indent=0, sort_keys=True))
        return proc.returncode
