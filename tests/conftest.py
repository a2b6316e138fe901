"""Fixtures: a tiny synthetic verl sdist and a verl-patches checkout around it (no network)."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from verl_repository import verl_repository

from verl_patches.cli import main as cli_main

SETUP_PY = """\
from setuptools import find_packages, setup

with open("verl/version/version") as f:
    version = f.read().strip()

setup(name="verl", version=version, packages=find_packages(include=["verl", "verl.*"]),
      package_data={"verl": ["version/version"]})
"""

BASE_FILES = {
    "setup.py": SETUP_PY,
    "PKG-INFO": "Metadata-Version: 2.1\nName: verl\n",
    "verl/__init__.py": "",
    "verl/version/version": "{version}\n",
    "verl/models/__init__.py": "",
    "verl/models/util.py": (
        "def build_mask(lengths, width):\n    return [[i < n for i in range(width)] for n in lengths]\n"
    ),
    "verl/windows.txt": "line one\r\nline two\r\n",
    "tests/__init__.py": "",
    ".gitattributes": "* text=auto\n",
}


def make_sdist(directory: Path, version: str, files: dict[str, str] | None = None) -> Path:
    """Write verl-<version>.tar.gz with one top-level folder, like a PyPI sdist."""
    files = {**BASE_FILES, **(files or {})}
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"verl-{version}.tar.gz"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in sorted(files.items()):
            data = text.replace("{version}", version).encode()
            info = tarfile.TarInfo(f"verl-{version}/{name}")
            info.size = len(data)
            info.mtime = 1_700_000_000
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buffer.getvalue())
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


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


@pytest.fixture
def hostile_git(tmp_path, monkeypatch):
    """A global git config that would change format-patch and am output if it leaked through."""
    config = tmp_path / "hostile-gitconfig"
    (tmp_path / "hostile-signature").write_text("hostile signature file\n")
    config.write_text(
        "[user]\n\tname = Some Person\n\temail = person@example.com\n"
        "[diff]\n\tnoprefix = true\n\tcontext = 5\n\tmnemonicPrefix = true\n"
        "[core]\n\tautocrlf = true\n\tabbrev = 7\n"
        "[format]\n\tsignature = hostile signature\n\tnumbered = true\n\tsuffix = .diff\n"
        f"\tsignatureFile = {tmp_path / 'hostile-signature'}\n"
        "[am]\n\tthreeWay = false\n"
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    return config


@pytest.fixture
def checkout(tmp_path, monkeypatch, hostile_git) -> Checkout:
    cache = tmp_path / "cache"
    sdist = make_sdist(cache, "1.0.0")
    root = tmp_path / "project"
    (root / "patches").mkdir(parents=True)
    (root / "patches" / "series").write_text("# series\n")
    monkeypatch.setenv("VERL_PATCHES_CACHE", str(cache))
    monkeypatch.delenv("VERL_PATCHES_BUILD_DIR", raising=False)
    checkout = Checkout(root=root, cache=cache)
    checkout.pin("1.0.0", sha256(sdist))
    return checkout


# Variables of the job running the tests that would change what the tool, make or ci/job.sh do in a test: the
# Makefile's settings (cpu.yml sets BASES and TORCH_INDEX_URL for the whole job), make's own (`make test` runs
# pytest with MAKEFLAGS and MAKELEVEL set), the CI runner's and the tool's. A test that needs one sets it itself.
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


@pytest.fixture(autouse=True)
def _job_environment_cleared(monkeypatch):
    for name in JOB_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _no_pip_download(monkeypatch):
    """The tests never reach the network: a missing sdist must come from the cache."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", os.devnull)


FAULT_FIGURES = pytest.StashKey[list]()


@pytest.fixture
def fault_figures(request) -> list[str]:
    """Lines that the fault-injection test reports; printed in the terminal summary (no -s needed)."""
    return request.config.stash.setdefault(FAULT_FIGURES, [])


ATTACKS = pytest.StashKey[dict]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Count the tests marked `attack` (each parameter is one attack) and how many the tool survived."""
    outcome = yield
    report = outcome.get_result()
    if item.get_closest_marker("attack") is None or not (report.when == "call" or report.failed):
        return
    counts = item.config.stash.setdefault(ATTACKS, {})
    name = item.originalname
    tried, survived = counts.get(name, (0, 0))
    counts[name] = (tried + 1, survived + (report.passed and report.when == "call"))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    lines = config.stash.get(FAULT_FIGURES, [])
    attacks = config.stash.get(ATTACKS, {})
    if lines or attacks:
        terminalreporter.section("fault injection")
        for line in lines:
            terminalreporter.write_line(line)
    if attacks:
        tried = sum(t for t, _ in attacks.values())
        survived = sum(s for _, s in attacks.values())
        terminalreporter.write_line(
            f"hostile inputs, environments and states: {tried} attacks tried in {len(attacks)} tests, "
            f"{survived} survived"
        )
        for name, (t, s) in sorted(attacks.items()):
            if s < t:
                terminalreporter.write_line(f"  not survived: {name}: {t - s} of {t}")


FAKE_COMMIT = "1" * 40


def make_archive(
    directory: Path,
    version: str,
    files: dict[str, str] | None = None,
    symlinks: dict[str, str] | None = None,
    drop: tuple[str, ...] = (),
    compresslevel: int = 9,
    name: str | None = None,
) -> Path:
    """Write a GitHub-like tag archive verl-<version>.tar.gz: one top folder, a pax comment, symlinks."""
    files = {k: v for k, v in {**BASE_FILES, **(files or {})}.items() if k not in drop}
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (name or f"verl-{version}.tar.gz")
    buffer = io.BytesIO()
    with tarfile.open(
        fileobj=buffer, mode="w:gz", compresslevel=compresslevel, format=tarfile.PAX_FORMAT,
        pax_headers={"comment": FAKE_COMMIT},
    ) as tar:  # fmt: skip
        for member, text in sorted(files.items()):
            data = text.replace("{version}", version).encode()
            info = tarfile.TarInfo(f"verl-{version}/{member}")
            info.size = len(data)
            info.mtime = 1_700_000_000
            info.mode = 0o755 if member.endswith(".sh") else 0o644
            tar.addfile(info, io.BytesIO(data))
        for member, target in sorted((symlinks or {}).items()):
            info = tarfile.TarInfo(f"verl-{version}/{member}")
            info.type = tarfile.SYMTYPE
            info.linkname = target
            info.mtime = 1_700_000_000
            tar.addfile(info)
    path.write_bytes(buffer.getvalue())
    return path


def tree_id_of(archive: Path, tmp: Path) -> str:
    """The git tree id of the archive's files, computed with plain tar and git (independently of the tool);
    bytes as they are (no end-of-line conversion)."""
    work = Path(tempfile.mkdtemp(prefix="tree-id-", dir=tmp))
    with tarfile.open(archive) as tar:  # extraction filters exist from Python 3.10.12 and 3.11.4 on
        tar.extractall(work, **({"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}))
    (top,) = list(work.iterdir())
    return git_tree_id(top)


def git_tree_id(folder: Path) -> str:
    """The git tree id of a folder's files (all of them, `add -A -f`), without end-of-line conversion."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "-C", str(folder), "init", "-q"], check=True, env=env)
    (folder / ".git" / "info" / "attributes").write_text("* -text\n")
    subprocess.run(["git", "-C", str(folder), "add", "-A", "-f"], check=True, env=env)
    return subprocess.run(
        ["git", "-C", str(folder), "write-tree"], check=True, env=env, capture_output=True, text=True
    ).stdout.strip()


def pin_archive(root: Path, version: str, tree: str) -> None:
    (root / "upstream.toml").write_text(
        f'[base."{version}"]\n'
        f'name = "verl"\nqueue = "patches"\nsource = "git-archive"\nrepository = "verl-project/verl"\n'
        f'tag = "v{version}"\ncommit = "{FAKE_COMMIT}"\ntree = "{tree}"\n',
        encoding="utf-8",
    )


@pytest.fixture
def archive_checkout(checkout, tmp_path, monkeypatch) -> Checkout:
    """The checkout pinned to a tag archive that only an offline mirror folder holds."""
    mirror = tmp_path / "mirror"
    archive = make_archive(mirror, "1.0.0", symlinks={"CLAUDE.md": "verl/__init__.py"})
    pin_archive(checkout.root, "1.0.0", tree_id_of(archive, tmp_path))
    monkeypatch.setenv("VERL_PATCHES_MIRROR", str(mirror))
    return checkout


def pytest_configure(config):
    config.addinivalue_line("markers", "attack: a hostile input, environment or state the tool must survive")


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


@pytest.fixture(scope="session")
def verl_0_9_0(tmp_path_factory) -> Path:
    """verl's repository at tag v0.9.0, its tree id checked (tests/verl_repository.py)."""
    return verl_repository("0.9.0", tmp_path_factory.mktemp("verl-0.9.0"))
