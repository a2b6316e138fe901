"""Run pytest on files of a work tree in build/venv, caching the outcome by git tree id."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from verl_patches.git.tree import BuildTree
from verl_patches.testing.venv import run_env

# pytest exit codes: 0 all passed, 1 some failed, 2 interrupted (collection errors), 5 nothing collected.
FAILED_CODES = (1, 2)
_FAILED_LINE = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.M)
_SHORT_SUMMARY_LINE = re.compile(r"^(?:FAILED|ERROR) \S+.*$", re.M)
_SUMMARY_LINE = re.compile(r"^=*\s*(.*\d+ (?:passed|failed|error|errors|skipped|deselected).*?)\s*=*$", re.M)


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
        if self.cache_path.exists():
            try:
                self._cache = json.loads(self.cache_path.read_text())
            except json.JSONDecodeError:
                self._cache = {}

    def outcome(self, tree: BuildTree, files: list[str]) -> Outcome:
        """pytest over files in tree's current index state: exit status, failing test ids, summary line."""
        tree_id = tree.git.out("write-tree")
        key = hashlib.sha256("\0".join([tree_id, self.env_stamp, *files]).encode()).hexdigest()
        entry = self._cache.get(key)
        if isinstance(entry, dict) and "lines" in entry:
            self.cached += 1
            return Outcome(entry["rc"], tuple(entry["failed"]), entry["summary"], tuple(entry["lines"]))
        self.runs += 1
        # A wide terminal: pytest cuts its short summary lines (the failure messages) to the width.
        env = run_env(self.python, {"PYTHONPATH": str(tree.path), "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "400"})
        cmd = [str(self.python), "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE", "--timeout=900", *files]
        proc = subprocess.run(cmd, cwd=tree.path, env=env, capture_output=True, text=True)
        summaries = _SUMMARY_LINE.findall(proc.stdout)
        result = Outcome(
            proc.returncode,
            tuple(dict.fromkeys(_FAILED_LINE.findall(proc.stdout))),
            summaries[-1] if summaries else "",
            tuple(dict.fromkeys(_SHORT_SUMMARY_LINE.findall(proc.stdout))),
        )
        self._cache[key] = {
            "rc": result.returncode,
            "failed": list(result.failed),
            "summary": result.summary,
            "lines": list(result.lines),
        }
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        self.cache_path.write_text(json.dumps(self._cache, indent=0, sort_keys=True))
        return result

    def run(self, tree: BuildTree, files: list[str]) -> int:
        return self.outcome(tree, files).returncode
