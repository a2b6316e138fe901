"""Fixtures: a tiny synthetic verl sdist and a verl-patches checkout around it (no network); the shared code they
use is in tests/helpers/."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import Checkout, make_archive, make_sdist, pin_archive, sha256, tree_id_of
from helpers.bases import README, README_1_1, REPO_ONLY, archive_table, make_queues, overlay_table, overlay_tree_id
from helpers.ci_replay import replay_runner
from helpers.clamp import BUGGY
from helpers.project import JOB_ENVIRONMENT
from helpers.replay import Replay
from helpers.verl_repository import verl_repository


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


@pytest.fixture(scope="session")
def verl_0_9_0(tmp_path_factory) -> Path:
    """verl's repository at tag v0.9.0, its tree id checked (tests/helpers/verl_repository.py)."""
    return verl_repository("0.9.0", tmp_path_factory.mktemp("verl-0.9.0"))


@pytest.fixture
def lifecycle(checkout, monkeypatch):
    monkeypatch.setenv("VERL_PATCHES_PYTHON", sys.executable)
    make_sdist(checkout.cache, "1.0.0", {"verl/models/clamp.py": BUGGY})
    checkout.pin("1.0.0", sha256(checkout.cache / "verl-1.0.0.tar.gz"))
    assert checkout.cli("apply") == 0
    return checkout


@pytest.fixture
def two_bases(checkout, tmp_path, monkeypatch):
    """Base 1.0.0: a tag archive in a mirror; base 1.1.0: the 1.1.0 sdist over that archive."""
    mirror = tmp_path / "mirror"
    archive = make_archive(mirror, "1.0.0", {**REPO_ONLY, "README.md": README}, drop=("PKG-INFO",))
    sdist = make_sdist(checkout.cache, "1.1.0", {"README.md": README_1_1})
    overlay = overlay_tree_id(archive, sdist, tmp_path)
    tables = [
        archive_table("1.0.0", tree_id_of(archive, tmp_path)),
        overlay_table("1.1.0", "1.0.0", sha256(sdist), overlay),
    ]
    (checkout.root / "upstream.toml").write_text("\n".join(tables))
    make_queues(checkout.root, "1.0.0", "1.1.0")
    monkeypatch.setenv("VERL_PATCHES_MIRROR", str(mirror))
    monkeypatch.delenv("VERL_PATCHES_BASE", raising=False)
    checkout.overlay_tree = overlay
    return checkout


@pytest.fixture
def one_archive_base(checkout, tmp_path, monkeypatch):
    """Base 1.0.0 only, a tag archive, declared as a [base] table; tests run in this interpreter."""
    monkeypatch.setenv("VERL_PATCHES_PYTHON", sys.executable)
    mirror = tmp_path / "mirror"
    archive = make_archive(mirror, "1.0.0", {"verl/models/clamp.py": BUGGY, **REPO_ONLY}, drop=("PKG-INFO",))
    (checkout.root / "upstream.toml").write_text(archive_table("1.0.0", tree_id_of(archive, tmp_path)))
    make_queues(checkout.root, "1.0.0")
    monkeypatch.setenv("VERL_PATCHES_MIRROR", str(mirror))
    monkeypatch.delenv("VERL_PATCHES_BASE", raising=False)
    assert checkout.cli("apply") == 0
    return checkout


@pytest.fixture
def runner(tmp_path, hostile_git) -> Iterator[Replay]:
    with replay_runner(tmp_path) as replay_of_the_copy:
        yield replay_of_the_copy
