"""A verl-patches checkout around the synthetic sdist, the commit messages the tests use, and the helpers for
interrupting the tool."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from verl_patches.cli import main as cli_main


@dataclass
class Checkout:
    """A checkout with one base, [base."<version>"], whose queue is patches/ and whose tree is build/<version>/verl."""

    root: Path
    cache: Path
    version: str = "1.0.0"

    @property
    def build(self) -> Path:
        """The base's build folder: its tree, backups and records."""
        return self.root / "build" / self.version

    @property
    def tree(self) -> Path:
        return self.build / "verl"

    def cli(self, *argv: str) -> int:
        command, *rest = argv
        return cli_main([command, "-C", str(self.root), *rest])

    def run(self, *argv: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
        """The tool in a process of its own (`python -m verl_patches`), with env added to this one's environment; it
        may take 120 s unless told otherwise."""
        command, *rest = argv
        kwargs.setdefault("timeout", 120)
        return subprocess.run(
            [sys.executable, "-m", "verl_patches", command, "-C", str(self.root), *rest],
            capture_output=True, text=True, env={**os.environ, **(env or {})}, **kwargs,
        )  # fmt: skip

    def pin(self, version: str, sha: str) -> None:
        self.version = version
        (self.root / "upstream.toml").write_text(
            f'[base."{version}"]\nname = "verl"\nqueue = "patches"\nsource = "pypi-sdist"\nsha256 = "{sha}"\n',
            encoding="utf-8",
        )

    def user_git(self, *args: str, input: str | None = None) -> str:
        """git as a user runs it in the build tree: with their own (here: hostile) configuration."""
        proc = subprocess.run(
            ["git", "-C", str(self.tree), *args], capture_output=True, text=True, input=input, check=True
        )
        return proc.stdout

    def commit_in_tree(self, path: str, content: str | bytes, message: str) -> None:
        target = self.tree / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
        self.user_git("add", path)
        self.user_git("commit", "-q", "-F", "-", input=message)

    def patches(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted((self.root / "patches").iterdir()) if p.is_file()}


GOOD_MESSAGE = """[megatron] fix: build boolean masks in build_mask

Problem: build_mask returned nested lists.

Fix: keep the lists but document them.

Tests: tests/models/test_util_on_cpu.py fails without the fix.

Forwarded: no
"""


JOB_ENVIRONMENT = (
    "BASES",
    "PYTHON",
    "TOOL_EXTRAS",
    "TORCH_INDEX_URL",
    "CI_DRY_RUN",
    "GPU_KIT_ARGS",
    "TEST_WORKERS",
    "MAKEFLAGS",
    "MAKELEVEL",
    "MFLAGS",
    "CI",
    "GITHUB_ACTIONS",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "PR_TITLE",
    "VERL_PATCHES_BASE",
    "VERL_PATCHES_BUILD_DIR",
    "VERL_PATCHES_PYTHON",
)


def message(subject: str) -> str:
    """GOOD_MESSAGE with another subject."""
    return GOOD_MESSAGE.replace("[megatron] fix: build boolean masks in build_mask", subject)


def restore_commands(backups_output: str) -> str:
    """The restore commands that `verl-patches backups` lists, as one shell line (comments left out)."""
    lines = [line.strip() for line in backups_output.splitlines() if line.startswith("    ")]
    return " && ".join(line.split("   #")[0] for line in lines if line and not line.startswith("#"))


class Interrupted(BaseException):
    """Stands for a kill: nothing after it runs."""


def stop_after(count: int):
    """Wraps functions so that together they run `count` calls; the next one raises Interrupted."""
    calls = [0]

    def wrap(real):
        def wrapped(*args, **kwargs):
            calls[0] += 1
            if calls[0] > count:
                raise Interrupted()
            return real(*args, **kwargs)

        return wrapped

    return wrap


def series_names(checkout: Checkout) -> list[str]:
    """The patch names that patches/series lists, its comments left out."""
    text = (checkout.root / "patches/series").read_text()
    return [ln.split("#")[0].strip() for ln in text.splitlines() if ln.split("#")[0].strip()]
