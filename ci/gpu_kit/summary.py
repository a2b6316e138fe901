"""One-screen summary of the GPU evidence kit's run: host, torch, GPU, then passed/failed/skipped per test file.

Usage (by gpu_evidence.sh, with the interpreter that has torch):
  python summary.py JUNIT_XML TREE   the summary; exit 3 when torch sees no CUDA device, 4 when it sees one but
                                     no test passed or failed, 2 when there is no junit XML, else 0
  python summary.py --host           the host lines alone (date, host, Python, torch, CUDA, GPUs, driver)
"""

from __future__ import annotations

import datetime
import platform
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

NO_CUDA, NOTHING_RAN, NO_REPORT = 3, 4, 2


def test_file(case: ET.Element, tree: Path) -> str:
    """The test file of a junit test case: the longest dotted prefix of its class (or, for a collection error,
    its name) that is a file of the tree."""
    parts = (case.get("classname") or case.get("name") or "?").split(".")
    for end in range(len(parts), 0, -1):
        candidate = "/".join(parts[:end]) + ".py"
        if (tree / candidate).is_file():
            return candidate
    return ".".join(parts)


def outcomes(path: str, tree: Path) -> dict[str, dict[str, int]]:
    per_file: dict[str, dict[str, int]] = defaultdict(lambda: {"passed": 0, "failed": 0, "skipped": 0})
    for case in ET.parse(path).getroot().iter("testcase"):
        name = test_file(case, tree)
        kinds = {child.tag for child in case}
        kind = "failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds else "passed"
        per_file[name][kind] += 1
    return dict(per_file)


def driver() -> str:
    try:
        proc = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True
        )
    except OSError:
        return "unknown (no nvidia-smi)"
    return ", ".join(sorted(set(proc.stdout.split()))) or "unknown"


def host_lines() -> tuple[list[str], bool]:
    import torch

    cuda = torch.cuda.is_available()
    gpu = ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())) if cuda else "none"
    return [
        f"date   {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"host   {platform.node()} {platform.machine()} Python {platform.python_version()}",
        f"torch  {torch.__version__} (CUDA {torch.version.cuda}); CUDA available: {cuda}",
        f"GPU    {gpu}; driver {driver()}",
    ], cuda


def main(argv: list[str]) -> int:
    lines, cuda = host_lines()
    print("\n".join(lines))
    if argv == ["--host"]:
        return 0
    junit, tree = argv
    if not Path(junit).is_file():
        print(f"no junit XML ({junit}): pytest wrote no report (see run.log)")
        return NO_REPORT
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    print(f"{'passed':>6} {'failed':>6} {'skipped':>7}  file")
    for name, counts in sorted(outcomes(junit, Path(tree)).items()):
        print(f"{counts['passed']:>6} {counts['failed']:>6} {counts['skipped']:>7}  {name}")
        for kind in totals:
            totals[kind] += counts[kind]
    print(f"{totals['passed']:>6} {totals['failed']:>6} {totals['skipped']:>7}  total")
    if not cuda:
        print("torch sees no CUDA device: this run is no GPU evidence")
        return NO_CUDA
    if totals["passed"] + totals["failed"] == 0:
        print("no test passed or failed on this CUDA host: this run is no GPU evidence")
        return NOTHING_RAN
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
