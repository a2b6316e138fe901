"""`verl-patches test` and `wheel` give the same result whatever the caller's environment: no
PYTHONDONTWRITEBYTECODE, a PYTHONPYCACHEPREFIX inside the tree, an unfriendly umask; the tool's own tests pass in
the environment of the CI job that runs them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers import GOOD_MESSAGE
from helpers.ci_replay import BASES, ROOT, WORKFLOW_DIR
from helpers.replay import Replay

MAKEFILE_TESTS = ROOT / "tests" / "ci" / "test_makefile.py"

CPU_TEST = (
    "from verl.models.util import build_mask\n\n\ndef test_mask():\n    assert build_mask([1], 2) == [[True, False]]\n"
)


def run_cli(checkout, *argv: str, umask: int, env: dict) -> subprocess.CompletedProcess:
    command, *rest = argv
    return subprocess.run(
        [sys.executable, "-m", "verl_patches", command, "-C", str(checkout.root), *rest],
        capture_output=True,
        text=True,
        env=env,
        umask=umask,
    )


@pytest.mark.parametrize("prefix", [None, "build/pycache"])
def test_series_tests_leave_the_tree_clean_and_the_wheel_ignores_the_umask(checkout, tmp_path, prefix):
    assert checkout.cli("apply") == 0
    for path, text in (("tests/models/test_util_on_cpu.py", CPU_TEST), ("verl/models/extra.py", "E = 1\n")):
        (checkout.tree / path).parent.mkdir(parents=True, exist_ok=True)
        (checkout.tree / path).write_text(text)
        checkout.user_git("add", path)
    checkout.user_git("commit", "-q", "-F", "-", input=GOOD_MESSAGE)
    assert checkout.cli("export") == 0
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env["VERL_PATCHES_PYTHON"] = sys.executable
    if prefix:
        env["PYTHONPYCACHEPREFIX"] = str(checkout.root / prefix)
    proc = run_cli(checkout, "test", umask=0o077, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
    leftovers = checkout.user_git("status", "--porcelain", "--ignored", "--untracked-files=all")
    assert leftovers == ""
    assert run_cli(checkout, "status", umask=0o077, env=env).returncode == 0
    one, two = tmp_path / "umask077", tmp_path / "umask022"
    assert run_cli(checkout, "wheel", "--outdir", str(one), umask=0o077, env=env).returncode == 0
    assert run_cli(checkout, "wheel", "--outdir", str(two), umask=0o022, env=env).returncode == 0
    (wheel_077,) = one.glob("*.whl")
    (wheel_022,) = two.glob("*.whl")
    assert wheel_077.read_bytes() == wheel_022.read_bytes()


@pytest.mark.parametrize("base", BASES)
def test_the_makefile_tests_pass_in_the_cpu_jobs_environment(tmp_path, base):
    # cpu.yml sets BASES for the whole job, and `make test` adds make's own variables: a test that runs make
    # must not inherit them (a copied Makefile would keep the job's BASES instead of reading its upstream.toml).
    runner = Replay(workflow=WORKFLOW_DIR / "cpu.yml", workspace=ROOT, temp=tmp_path)
    data = runner.load()
    env = runner.job_env("test", data["jobs"]["test"], data, {"base": base})
    env.update(MAKEFLAGS="-j2 --no-print-directory", MAKELEVEL="1", MFLAGS="-j2")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(MAKEFILE_TESTS)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert env["BASES"] == base and proc.returncode == 0, proc.stdout[-2000:]
