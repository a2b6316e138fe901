"""The test files that run a test helper module's cases: the tests/**/test_* files that import it.

A fix may add only a case to a shared case list (``tests/models/_thd_cases.py``); the CPU test and its GPU
twin that import the list then run the new case, so they are that patch's tests.
"""

from __future__ import annotations

import re

from verl_patches.errors import GitError
from verl_patches.git.repo import Git, advice
from verl_patches.model.patch import Patch


def import_pattern(helper: str) -> re.Pattern[str]:
    """Matches a line importing the helper (tests/a/_b.py): ``from tests.a._b import``, ``import tests.a._b``
    or ``from tests.a import ..., _b`` (on one line)."""
    module = helper.removesuffix(".py").replace("/", ".")
    package, name = (re.escape(part) for part in module.rsplit(".", 1))
    module = re.escape(module)
    return re.compile(
        rf"^\s*(?:from\s+{module}\s+import\b|import\s+{module}\b|from\s+{package}\s+import\s+[\w\s,(]*\b{name}\b)",
        re.MULTILINE,
    )


def importers(git: Git, rev: str, helpers: list[str], suffix: str) -> list[str]:
    """The tests/**/test_*{suffix} files at rev that import one of helpers, sorted."""
    if not helpers:
        return []
    needles = [arg for helper in helpers for arg in ("-e", helper.rsplit("/", 1)[-1].removesuffix(".py"))]
    argv = ["grep", "-l", "-F", *needles, rev, "--", "tests/"]
    proc = git.run(*argv, check=False)
    if proc.returncode > 1:  # 1: nothing matched
        stderr = proc.stderr.decode(errors="replace")
        raise GitError(argv, proc.returncode, stderr, advice=advice(stderr, git.repo, git.own))
    candidates = [line.split(":", 1)[1] for line in proc.stdout.decode(errors="replace").splitlines() if ":" in line]
    patterns = [import_pattern(helper) for helper in helpers]
    found = []
    for path in candidates:
        name = path.rsplit("/", 1)[-1]
        if not (name.startswith("test_") and name.endswith(suffix)):
            continue
        text = git.out("show", f"{rev}:{path}")
        if any(pattern.search(text) for pattern in patterns):
            found.append(path)
    return sorted(found)


def tests_of(git: Git, rev: str, patch: Patch, suffix: str) -> list[str]:
    """The patch's own test files ending in suffix, then those at rev that import a helper module it changes."""
    own = patch.tests_matching(suffix)
    return own + [path for path in importers(git, rev, patch.helper_files, suffix) if path not in own]
