"""verl's own suites as a guard: the same selection on the base and on the patched tree, compared per test.

The CPU suite (cpu_unit_tests.yml's selection) also runs the two steps of verl's sanity.yml that need verl
installed: `pytest tests/special_sanity` and `tests/special_sanity/validate_imported_docs.py`. The GPU suite is
gpu_unit_tests.yml's selection, read from each tree (upstream_ci.py)."""

from __future__ import annotations

import logging
import os
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from verl_patches.errors import VerlPatchesError
from verl_patches.git import scratch
from verl_patches.sources import files
from verl_patches.testing import pytest_run
from verl_patches.testing.venv import run_env
from verl_patches.testing.verl_workflows import gpu_unit_test_args

logger = logging.getLogger(__name__)

# The selection of upstream's .github/workflows/cpu_unit_tests.yml: `python_files = *_on_cpu.py` in a
# pytest.ini, then `pytest -s -x --asyncio-mode=auto tests/`. Here without -x and past collection errors (modules
# that need vllm or sglang): every outcome is compared.
SELECTION = ["-o", "python_files=*_on_cpu.py", "--asyncio-mode=auto", "--continue-on-collection-errors", "tests/"]
# An empty ini file and the tree as rootdir: no configuration of a folder around the tree (this project's own
# pyproject.toml around build/verl) applies, and test ids are the same in every tree.
INI = "[pytest]\n"
# Per test, against hangs that pytest-timeout can interrupt.
TIMEOUT_S = 120
# Tests that reserve Ray CPUs (TransferQueue's placement group in tests/trainer/ppo/v1) wait forever on a
# machine with fewer cores, in ray.get, where pytest-timeout does not interrupt them. Ray's logical CPU count
# is set to 128, above what any test asks for (tests/single_controller calls ray.init(num_cpus=100)), unless
# RAY_OVERRIDE_RESOURCES is already set.
RAY_RESOURCES = {"RAY_OVERRIDE_RESOURCES": '{"CPU": 128}'}
SANITY = ["tests/special_sanity"]
SANITY_SCRIPT = "tests/special_sanity/validate_imported_docs.py"
ENV = {"TORCH_COMPILE_DISABLE": "1", "TORCHINDUCTOR_DISABLE": "1", "PYTHONDONTWRITEBYTECODE": "1"}


@dataclass(frozen=True)
class Suite:
    """One of verl's suites: how it is selected in a tree, and how it runs."""

    name: str  # as printed: "CPU suite", "GPU unit tests"
    label: str  # in file names: cpu, gpu
    selection: Callable[[Path], list[str]]
    timeout_s: int  # per test, against hangs that pytest-timeout can interrupt
    env: dict[str, str]
    sanity: bool  # also sanity.yml's two steps

    @property
    def cache_file(self) -> str:
        """The file, in the base's build folder, that keeps the outcomes on the base."""
        return "upstream-suite-base.json" if self.label == "cpu" else f"upstream-{self.label}-suite-base.json"


CPU = Suite("CPU suite", "cpu", lambda tree: list(SELECTION), TIMEOUT_S, ENV, sanity=True)
# Here without -x and past collection errors too; torch.compile stays as upstream runs it.
GPU = Suite(
    "GPU unit tests",
    "gpu",
    lambda tree: ["--continue-on-collection-errors", *gpu_unit_test_args(tree)],
    900,
    {"PYTHONDONTWRITEBYTECODE": "1"},
    sanity=False,
)


@dataclass
class SuiteResult:
    outcomes: dict[str, str]

    def counts(self) -> str:
        tally = Counter(self.outcomes.values())
        return ", ".join(f"{tally[k]} {k}" for k in ("passed", "failed", "skipped")) + f" ({len(self.outcomes)} tests)"


def run(python: Path, tree: Path, extra: list[str], suite: Suite = CPU, keep: Path | None = None):
    """The suite's selection (and sanity.yml's steps for the CPU suite) in tree, with tree first on sys.path;
    outcome per test id. keep: a path prefix under which each run's junit XML is kept (PREFIX.xml, ...)."""
    env = run_env(python, {**RAY_RESOURCES, **os.environ, **suite.env, "PYTHONPATH": str(tree)})
    outcomes = _pytest(python, tree, env, [*extra, *suite.selection(tree)], suite.timeout_s, keep, "")
    if suite.sanity and (tree / SANITY[0]).is_dir():
        outcomes.update(_pytest(python, tree, env, [*extra, *SANITY], suite.timeout_s, keep, "-sanity"))
    if suite.sanity and (tree / SANITY_SCRIPT).is_file():
        proc = subprocess.run([str(python), SANITY_SCRIPT], cwd=tree, env=env, capture_output=True, text=True)
        logger.info(f"+ (in {tree}) python {SANITY_SCRIPT}: exit {proc.returncode}")
        outcomes[f"{SANITY_SCRIPT}::main"] = "passed" if proc.returncode == 0 else "failed"
    return SuiteResult(outcomes)


def _pytest(python: Path, tree: Path, env, args: list[str], timeout: int, keep: Path | None, part: str):
    with scratch.folder("suite") as tmp:
        ini = Path(tmp) / "pytest.ini"
        ini.write_text(INI)
        options = ["-c", str(ini), f"--rootdir={tree}", "-q"]
        kept = Path(f"{keep}{part}.xml") if keep else None
        result = pytest_run.run(python, args, timeout, tree, env, options=options, keep=kept, say=True)
        # 0: all passed, 1: some failed, 5: nothing collected; anything else (interrupted, killed, internal
        # or usage error) is an incomplete run that must not be compared or cached.
        if not result.complete:
            raise VerlPatchesError(f"pytest did not complete (exit {result.returncode}) in {tree}:\n{result.output}")
        return result.outcomes


def regressions(base: SuiteResult, patched: SuiteResult) -> list[str]:
    """Tests that pass on the base and fail with the series."""
    return sorted(t for t, o in base.outcomes.items() if o == "passed" and patched.outcomes.get(t) == "failed")


def gone(base: SuiteResult, patched: SuiteResult) -> list[str]:
    """Tests that pass on the base and are not run with the series (removed, renamed or skipped)."""
    return sorted(t for t, o in base.outcomes.items() if o == "passed" and patched.outcomes.get(t) in (None, "skipped"))


def cache_key(base_tree: str, env_stamp: str, extra: list[str], suite: Suite = CPU) -> str:
    """What the base outcomes depend on: the base files (a GPU selection is read from them), the environment and
    the selection."""
    ray = os.environ.get("RAY_OVERRIDE_RESOURCES", RAY_RESOURCES["RAY_OVERRIDE_RESOURCES"])
    selection = [suite.label, f"timeout={suite.timeout_s}", ray, INI.strip(), *sorted(suite.env.items())]
    selection += [*SELECTION, *SANITY, SANITY_SCRIPT] if suite.sanity else ["--continue-on-collection-errors"]
    return " ".join([base_tree, env_stamp, *map(str, selection), *extra])


def cached_base(cache: Path, key: str) -> SuiteResult | None:
    data = files.read_json(cache)
    return SuiteResult(data["outcomes"]) if isinstance(data, dict) and data.get("key") == key else None


def store_base(cache: Path, key: str, result: SuiteResult) -> None:
    files.write_json(cache, {"key": key, "outcomes": result.outcomes}, indent=0)
