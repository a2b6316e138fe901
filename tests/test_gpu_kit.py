"""Offline parts of the GPU evidence kit (ci/gpu_kit): the import stubs and the summary. Building the kit needs an
index with the wheels; docs/gpu-evidence.md records that check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

KIT = Path(__file__).resolve().parent.parent / "ci" / "gpu_kit"

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
__version__ = "2.13.0+fake"
class version:
    cuda = None
class cuda:
    is_available = staticmethod(lambda: False)
    device_count = staticmethod(lambda: 0)
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


def test_the_summary_counts_outcomes_per_test_file(tmp_path):
    tree = tmp_path / "tree"
    for name in ("tests/models/test_a_on_gpu.py", "tests/workers/test_b_on_gpu.py"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text("")
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(FAKE_TORCH)
    (tmp_path / "junit.xml").write_text(JUNIT)
    code = f"import sys; sys.argv = ['summary.py', 'junit.xml', 'tree']; exec(open({str(KIT / 'summary.py')!r}).read())"
    proc = run(code, tmp_path, [tmp_path])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "torch  2.13.0+fake (CUDA None); CUDA available: False" in lines
    assert "GPU    none" in lines
    assert lines[-3:] == [
        "     1      1       1  tests/models/test_a_on_gpu.py",
        "     0      1       0  tests/workers/test_b_on_gpu.py",
        "     1      2       1  total",
    ]
