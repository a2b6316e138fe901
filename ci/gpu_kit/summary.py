"""One-screen summary of the GPU evidence kit's run: host, torch, GPU, then passed/failed/skipped per test file.

Usage: python summary.py JUNIT_XML TREE   (run by gpu_evidence.sh with the kit's interpreter)
"""

from __future__ import annotations

import datetime
import platform
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


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


def main(argv: list[str]) -> int:
    import torch

    cuda = torch.cuda.is_available()
    gpu = ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())) if cuda else "none"
    print(f"date   {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"host   {platform.node()} {platform.machine()} Python {platform.python_version()}")
    print(f"torch  {torch.__version__} (CUDA {torch.version.cuda}); CUDA available: {cuda}")
    print(f"GPU    {gpu}")
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    print(f"{'passed':>6} {'failed':>6} {'skipped':>7}  file")
    for name, counts in sorted(outcomes(argv[0], Path(argv[1])).items()):
        print(f"{counts['passed']:>6} {counts['failed']:>6} {counts['skipped']:>7}  {name}")
        for kind in totals:
            totals[kind] += counts[kind]
    print(f"{totals['passed']:>6} {totals['failed']:>6} {totals['skipped']:>7}  total")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
