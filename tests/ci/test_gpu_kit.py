"""The GPU evidence kit (ci/gpu_kit, ci/gpu_evidence.sh) offline: the import stubs, the summary, and the kit's
script run on a synthetic kit by this interpreter with a fake torch. Building a real kit needs an index with the
wheels; docs/gpu-evidence.md records that check."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import GOOD_MESSAGE, ROOT, make_sdist, sha256

KIT = ROOT / "ci" / "gpu_kit"
PYTHON = "{}.{}".format(*sys.version_info[:2])

USES_STUBS = """\
import ray
from ray.util.placement_group import PlacementGroup
import datasets


@ray.remote
class Worker:
    pass


@ray.remote(num_gpus=1)
def task():
    return 1


def load(frame: datasets.Dataset = None) -> PlacementGroup | None:
    return frame


class Handle(ray.actor.ActorHandle):
    pass


assert Worker.__name__ == "Worker" and task() == 1 and load() is None and issubclass(Handle, ray.actor.ActorHandle)
assert isinstance(Handle(), Handle)
print(ray.__version__)
try:
    ray.get([1])
except Exception as exc:
    print(type(exc).__name__, exc)
"""
FAKE_TORCH = """\
import os

__version__ = "2.11.0+fake"


class version:
    cuda = os.environ.get("FAKE_CUDA") or None


class cuda:
    is_available = staticmethod(lambda: bool(os.environ.get("FAKE_CUDA")))
    device_count = staticmethod(lambda: 1 if os.environ.get("FAKE_CUDA") else 0)
    get_device_name = staticmethod(lambda i: "Fake H200")
"""
JUNIT = """\
<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.models.test_a_on_gpu" name="test_one"/>
<testcase classname="tests.models.test_a_on_gpu" name="test_two"><skipped message="no CUDA"/></testcase>
<testcase classname="tests.models.test_a_on_gpu.TestGroup" name="test_three"><failure message="x"/></testcase>
<testcase classname="" name="tests.workers.test_b_on_gpu"><error message="collection failure"/></testcase>
</testsuite></testsuites>
"""
# The kit's one test file: it needs the kit's wheel, and ray from the host where the host has it, else the stub.
KIT_TEST = """\
import os
import time

import kitdep
import pytest
import ray

if os.environ["KIT_TEST"] == "skip":
    pytestmark = pytest.mark.skip(reason="requires a CUDA device")


def test_the_kit_runs():
    assert kitdep.VALUE == 1
    assert os.environ["KIT_TEST"] != "fail"
    if os.environ["KIT_TEST"] == "slow":
        time.sleep(120)


def test_ray_is_the_hosts_where_it_has_one():
    assert (ray.__version__ != "0+gpu-kit-stub") == bool(os.environ.get("HOST_RAY"))
"""
RESOLVED = "resolved for CPython {python} on manylinux_2_28_x86_64 next to torch 2.11.0\n"
RESULTS = ["junit.xml", "manifest.txt", "run.log", "summary.txt"]


def run(code: str, tmp_path: Path, pythonpath: list[Path]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, pythonpath))}
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)


def test_the_stubs_import_decorate_and_annotate_but_refuse_real_calls(tmp_path):
    proc = run(USES_STUBS, tmp_path, [KIT / "stubs"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "0+gpu-kit-stub",
        "StubUsed ray.get is an import stub of the GPU evidence kit; the package is not installed",
    ]


@pytest.mark.parametrize(("cuda", "status"), [("", 3), ("13.0", 0)], ids=["no CUDA", "CUDA"])
def test_the_summary_counts_outcomes_per_test_file(tmp_path, monkeypatch, cuda, status):
    tree = tmp_path / "tree"
    for name in ("tests/models/test_a_on_gpu.py", "tests/workers/test_b_on_gpu.py"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text("")
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(FAKE_TORCH)
    (tmp_path / "junit.xml").write_text(JUNIT)
    code = f"import sys; sys.argv = ['summary.py', 'junit.xml', 'tree']; exec(open({str(KIT / 'summary.py')!r}).read())"
    monkeypatch.setenv("FAKE_CUDA", cuda)
    proc = run(code, tmp_path, [tmp_path])
    assert proc.returncode == status, proc.stderr
    lines = proc.stdout.splitlines()
    assert f"torch  2.11.0+fake (CUDA {cuda or None}); CUDA available: {bool(cuda)}" in lines
    total = lines.index("     1      2       1  total")
    assert lines[total - 2 : total + 1] == [
        "     1      1       1  tests/models/test_a_on_gpu.py",
        "     0      1       0  tests/workers/test_b_on_gpu.py",
        "     1      2       1  total",
    ]


def wheel(path: Path) -> None:
    """A one-module wheel, kitdep 1.0, as the kit's wheelhouse holds them."""
    with zipfile.ZipFile(path, "w") as whl:
        whl.writestr("kitdep.py", "VALUE = 1\n")
        whl.writestr("kitdep-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: kitdep\nVersion: 1.0\n")
        whl.writestr("kitdep-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        whl.writestr("kitdep-1.0.dist-info/RECORD", "")


@pytest.fixture
def kit(tmp_path) -> Path:
    """A kit as build.py lays it out, with one test file and one wheel."""
    kit = tmp_path / "gpu-kit"
    (kit / "tree" / "tests").mkdir(parents=True)
    (kit / "tree" / "tests" / "test_kit_on_gpu.py").write_text(KIT_TEST)
    (kit / "tests.txt").write_text("tests/test_kit_on_gpu.py\n")
    (kit / "wheelhouse").mkdir()
    wheel(kit / "wheelhouse" / "kitdep-1.0-py3-none-any.whl")
    (kit / "requirements.txt").write_text("kitdep==1.0\n")
    (kit / "KIT").write_text(f"base 9.9.9\n{RESOLVED.format(python=PYTHON)}")
    shutil.copytree(KIT / "stubs", kit / "stubs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(KIT / "summary.py", kit / "summary.py")
    shutil.copy2(ROOT / "ci" / "gpu_evidence.sh", kit / "gpu_evidence.sh")
    return kit


def evidence(kit: Path, tmp_path: Path, *args: str, cuda: str = "", test: str = "pass", host_ray: bool = False):
    """gpu_evidence.sh run by this interpreter, with a fake torch (and a real ray when host_ray) on the host."""
    host = tmp_path / "host"
    (host / "torch").mkdir(parents=True, exist_ok=True)
    (host / "torch" / "__init__.py").write_text(FAKE_TORCH)
    if host_ray:
        (host / "ray").mkdir(exist_ok=True)
        (host / "ray" / "__init__.py").write_text("__version__ = '2.60.0'\n")
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{host}" exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    env = {**os.environ, "FAKE_CUDA": cuda, "KIT_TEST": test, "HOST_RAY": "1" if host_ray else ""}
    env.pop("PYTHONPATH", None)
    cmd = ["bash", str(kit / "gpu_evidence.sh"), "--python", str(python), *args]
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)


@pytest.mark.parametrize(
    ("cuda", "test", "host_ray", "status"),
    [("", "pass", False, 3), ("13.0", "skip", False, 4), ("13.0", "pass", True, 0), ("13.0", "fail", False, 1)],
    ids=["no CUDA", "nothing ran on CUDA", "passed on CUDA with the host's ray", "failed on CUDA"],
)
def test_the_kit_writes_its_results_and_nothing_else_into_the_out_folder(kit, tmp_path, cuda, test, host_ray, status):
    proc = evidence(kit, tmp_path, "--out", "results", cuda=cuda, test=test, host_ray=host_ray)
    assert proc.returncode == status, proc.stdout + proc.stderr
    assert sorted(os.listdir(tmp_path / "results")) == RESULTS
    manifest = (tmp_path / "results" / "manifest.txt").read_text()
    assert "torch  2.11.0+fake" in manifest and "next to torch 2.11.0" in manifest
    stubs = "stubs used: datasets pandas; the host's own: ray" if host_ray else "stubs used: datasets pandas ray"
    assert stubs in manifest and f"gpu_evidence.sh exit {status}" in manifest
    kit_parts = ["KIT", "gpu_evidence.sh", "requirements.txt", "stubs", "summary.py", "tests.txt", "tree", "wheelhouse"]
    assert sorted(os.listdir(kit)) == kit_parts  # the kit is only read


def test_the_budget_stops_pytest_and_its_report_comes_back(kit, tmp_path):
    proc = evidence(kit, tmp_path, "--out", "results", "--budget", "5", cuda="13.0", test="slow")
    assert proc.returncode == 124, proc.stdout + proc.stderr
    assert sorted(os.listdir(tmp_path / "results")) == RESULTS
    assert "pytest exit 124; gpu_evidence.sh exit 124" in (tmp_path / "results" / "manifest.txt").read_text()
    assert "KeyboardInterrupt" in (tmp_path / "results" / "run.log").read_text()


@pytest.mark.parametrize(
    ("args", "kit_python", "message"),
    [
        ([], PYTHON, "--out DIR is required"),
        (["--out", "r", "--budget", "soon"], PYTHON, "--budget must be a number of seconds, not 'soon'"),
        (["--out", "r"], "2.7", f"the kit is built for CPython 2.7, {{python}} is {PYTHON}"),
    ],
    ids=["no out folder", "bad budget", "other Python"],
)
def test_unusable_arguments_are_named(kit, tmp_path, args, kit_python, message):
    (kit / "KIT").write_text(RESOLVED.format(python=kit_python))
    proc = evidence(kit, tmp_path, *args)
    assert proc.returncode == 2
    assert message.format(python=tmp_path / "python") in proc.stderr
    assert not (tmp_path / "r").exists() or os.listdir(tmp_path / "r") == []


def test_the_kit_takes_its_tests_from_the_queue_of_its_tree(checkout):
    spec = importlib.util.spec_from_file_location("gpu_kit_build", KIT / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    root, tests = checkout.root, {"1.0.0": "tests/test_old_on_gpu.py", "1.1.0": "tests/test_new_on_gpu.py"}
    tables = []
    for version in tests:
        sha = sha256(make_sdist(checkout.cache, version))
        table = f'name = "verl"\nqueue = "patches/{version}"\nsource = "pypi-sdist"\nsha256 = "{sha}"\n'
        tables.append(f'[base."{version}"]\n{table}')
        (root / "patches" / version).mkdir(parents=True)
        (root / "patches" / version / "series").write_text("# series\n")
    (root / "upstream.toml").write_text("\n".join(tables))
    for version, test in tests.items():
        assert checkout.cli("apply", "--base", version) == 0
        tree = root / "build" / version / "verl"
        (tree / test).write_text("def test_gpu():\n    pass\n")
        subprocess.run(["git", "-C", str(tree), "add", test], check=True)
        subprocess.run(["git", "-C", str(tree), "commit", "-q", "-F", "-"], input=GOOD_MESSAGE, text=True, check=True)
        assert checkout.cli("export", "--base", version) == 0
    assert build.kit_series(root, "1.0.0") == ("1.0.0", root / "build" / "1.0.0" / "verl", [tests["1.0.0"]])
    assert build.kit_series(root, None)[2] == [tests["1.1.0"]]
