"""Upstream's own sanity checks, run on a patched tree, with each finding attributed to the patch that caused it.

The checks come from the tree itself: the `repo: local` hooks of its .pre-commit-config.yaml (special_sanity
scripts, the naming grep, compileall), tests/special_sanity/check_pr_title.py on every subject, and ruff check +
ruff format with the tree's pyproject.toml on the Python files the series changes (the ruff version must be the
one the config pins).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from verl_patches.git.tree import BuildTree
from verl_patches.model.lint import Finding

CONFIG = ".pre-commit-config.yaml"
PR_TITLE_SCRIPT = "tests/special_sanity/check_pr_title.py"
RUFF_HOOKS = "astral-sh/ruff-pre-commit"
# Local hooks that need verl's runtime dependencies installed (they are not sanity scripts).
NEEDS_VERL_DEPS = {"autogen-trainer-cfg": "regenerates the trainer config with verl's runtime dependencies"}
SHOWN_LINES = 3


@dataclass(frozen=True)
class Hook:
    id: str
    entry: str


@dataclass(frozen=True)
class Result:
    returncode: int
    lines: tuple[str, ...]

    @property
    def failed(self) -> bool:
        return self.returncode != 0


def local_hooks(tree: Path) -> tuple[list[Hook], list[str]]:
    """The tree's `repo: local` hooks to run, and notes about the ones skipped."""
    config = _config(tree)
    hooks, notes = [], []
    for repo in config.get("repos") or []:
        if repo.get("repo") != "local":
            continue
        for hook in repo.get("hooks") or []:
            if hook.get("id") in NEEDS_VERL_DEPS:
                notes.append(f"upstream hook {hook['id']} not run: {NEEDS_VERL_DEPS[hook['id']]}")
            else:
                hooks.append(Hook(str(hook["id"]), str(hook["entry"])))
    return hooks, notes


def pinned_ruff(tree: Path) -> str | None:
    """The ruff version the tree's pre-commit config pins (its ruff-pre-commit rev), if any."""
    for repo in _config(tree).get("repos") or []:
        if str(repo.get("repo", "")).rstrip("/").endswith(RUFF_HOOKS):
            return str(repo.get("rev", "")).removeprefix("v") or None
    return None


def _config(tree: Path) -> dict:
    path = tree / CONFIG
    if not path.is_file():
        return {}
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


class Runner:
    """Runs checks in one work tree; compiled files go to a private cache, never into the tree."""

    def __init__(self, tree: BuildTree):
        self.tree = tree
        self._cache = tempfile.TemporaryDirectory(prefix="verl-patches-pycache-")
        bindir = str(Path(sys.executable).parent)
        self.env = {
            **os.environ,
            "PATH": os.pathsep.join([bindir, os.environ.get("PATH", "")]),
            "PYTHONPYCACHEPREFIX": self._cache.name,
        }

    def close(self) -> None:
        self._cache.cleanup()

    def checkout(self, commit: str) -> None:
        self.tree.git.run("checkout", "--quiet", "--detach", "--force", commit)
        self.tree.git.run("clean", "-ffdxq")

    def hook(self, hook: Hook) -> Result:
        argv = shlex.split(hook.entry)
        if argv and argv[0] in ("python", "python3"):
            argv[0] = sys.executable
        return self._run(argv)

    def _run(self, argv: list[str], extra: dict[str, str] | None = None) -> Result:
        proc = subprocess.run(
            argv, cwd=self.tree.path, env={**self.env, **(extra or {})}, capture_output=True, text=True
        )
        root = str(self.tree.path.resolve())
        text = (proc.stdout + proc.stderr).replace(root + os.sep, "").replace(str(self.tree.path) + os.sep, "")
        return Result(proc.returncode, tuple(line.rstrip() for line in text.splitlines() if line.strip()))

    def pr_title(self, subject: str) -> Result:
        return self._run([sys.executable, PR_TITLE_SCRIPT], {"PR_TITLE": subject})


def hook_findings(
    runner: Runner, base: str, commits: list[tuple[str, str]], tree_name: str
) -> tuple[list[Finding], list[str]]:
    """Local hooks that pass on base (or fail there with other output) and fail with the series; and notes.

    commits: (patch name, commit) in series order; tree_name: the build tree the findings say to fix it in; the
    tree is left at the last commit."""
    hooks, notes = local_hooks(runner.tree.path)
    runner.checkout(base)
    before = {hook.id: runner.hook(hook) for hook in hooks}
    for hook in hooks:
        if before[hook.id].failed:
            last = before[hook.id].lines[-1] if before[hook.id].lines else f"exit {before[hook.id].returncode}"
            notes.append(f"upstream hook {hook.id} fails on the base already ({last}); only new output counts")
    runner.checkout(commits[-1][1] if commits else base)
    failing = [hook for hook in hooks if _new_failure(before[hook.id], runner.hook(hook))]
    findings = []
    for hook in failing:
        for name, commit in commits:
            runner.checkout(commit)
            result = runner.hook(hook)
            if _new_failure(before[hook.id], result):
                new = _new_lines(before[hook.id], result)
                what = " | ".join(new[-SHOWN_LINES:]) or f"exit status {result.returncode}"
                findings.append(Finding(name, f"upstream:{hook.id}", what, f"fix it in {tree_name} (`{hook.entry}`)"))
                break
    if commits:
        runner.checkout(commits[-1][1])
    return findings, notes


# A hook's progress line for a file that passed, e.g. "[CHECK] File x.py is detected ..., check result: success."
_PASSED = re.compile(r"\b(success|succeeded|passed|ok)\b\.?\s*$", re.IGNORECASE)


def _new_lines(base: Result, result: Result) -> list[str]:
    """Lines of result that base did not print. When the hook already fails on the base, a new line that ends by
    saying a file passed is not a finding: a script that stops at the base's failure prints one more such line for
    every file a patch adds before that point."""
    new = [line for line in result.lines if line not in base.lines]
    if base.failed:
        new = [line for line in new if not _PASSED.search(line)]
    return new


def _new_failure(base: Result, result: Result) -> bool:
    return result.failed and (not base.failed or bool(_new_lines(base, result)))


def title_findings(runner: Runner, subjects: list[tuple[str, str]], tree_name: str) -> list[Finding]:
    """check_pr_title.py on every subject: (patch name, subject) pairs."""
    if not (runner.tree.path / PR_TITLE_SCRIPT).is_file():
        return []
    findings = []
    for name, subject in subjects:
        result = runner.pr_title(subject)
        if result.failed:
            what = " | ".join(line for line in result.lines if not line.startswith(("Traceback", "  ")))
            findings.append(Finding(name, "upstream:check-pr-title", what, f"reword the subject in {tree_name}"))
    return findings


def ruff_findings(runner: Runner, base: str, commits: list[tuple[str, str]], tree_name: str) -> list[Finding]:
    """ruff check and ruff format --check, with the tree's pyproject.toml, on the .py files the series changes."""
    if not commits:
        return []
    git = runner.tree.git
    head = commits[-1][1]
    changed = git.out("diff", "--name-only", "--diff-filter=AMR", base, head, "--", "*.py").splitlines()
    wanted = pinned_ruff(runner.tree.path)
    if not changed or not wanted:
        return []
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if not ruff:
        return [Finding("series", "upstream:ruff", "ruff is not installed", f"pip install ruff=={wanted}")]
    version = subprocess.run([ruff, "--version"], capture_output=True, text=True).stdout.split()[-1]
    if version != wanted:
        return [
            Finding("series", "upstream:ruff", f"ruff {version}, upstream pins {wanted}", f"install ruff=={wanted}")
        ]
    patch_of = {commit: name for name, commit in commits}
    pyproject = runner.tree.path / "pyproject.toml"
    config = ["--config", str(pyproject)] if pyproject.exists() else ["--isolated"]
    findings = []
    checked = subprocess.run(
        [ruff, "check", "--no-cache", "--no-fix", "--output-format=json", *config, *changed],
        cwd=runner.tree.path, env=runner.env, capture_output=True, text=True,
    )  # fmt: skip
    try:
        issues = json.loads(checked.stdout or "[]")
    except json.JSONDecodeError:
        issues = []
    for issue in issues:
        path = os.path.relpath(issue["filename"], runner.tree.path.resolve())
        row = issue["location"]["row"]
        blame = git.out("blame", "--porcelain", "-L", f"{row},{row}", head, "--", path).split(" ", 1)[0]
        name = patch_of.get(blame)
        if name:
            what = f"{path}:{row}: {issue['code']} {issue['message']}"
            findings.append(
                Finding(name, "upstream:ruff", what, f"fix it in {tree_name} (ruff check with verl's config)")
            )
    if checked.returncode != 0 and not issues:
        what = " | ".join(checked.stderr.strip().splitlines()[-SHOWN_LINES:])
        findings.append(Finding("series", "upstream:ruff", what, "see ruff's output"))
    formatted = runner._run([ruff, "format", "--no-cache", "--check", *config, *changed])
    for line in formatted.lines:
        match = re.match(r"^Would reformat: (.+)$", line)
        if match:
            path = match.group(1)
            last = git.out("log", "-1", "--format=%H", f"{base}..{head}", "--", path)
            what = f"{path} is not formatted as `ruff format` would"
            findings.append(
                Finding(patch_of.get(last, "series"), "upstream:ruff-format", what, "run ruff format on it")
            )
    return findings
