"""Wall times of the tool's main operations on the real, cached upstream source. Prints figures; asserts nothing.

    python benchmarks/bench_tool.py                # apply (cold, warm), export, check
    python benchmarks/bench_tool.py --prove        # also prove: first run (empty cache), then a re-run (cached)
    python benchmarks/bench_tool.py --fresh-clone  # also `make test` in a fresh clone (minutes)

Runs on a temporary copy of upstream.toml, patches/ and requirements/ with its own build folder, so
neither patches/ nor build/ of the checkout is touched;
the tests run with the checkout's build/venv when it exists. The fresh clone gets VERL_PATCHES_MIRROR, or
../shared/upstream beside the checkout when that folder exists (as .ci/run does).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from verl_patches.checkout import Project

ROOT = Path(__file__).resolve().parents[1]
TOOL = [sys.executable, "-m", "verl_patches"]


def timed(label: str, cmd: list[str], env: dict[str, str], cwd: Path = ROOT) -> float:
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    took = time.monotonic() - start
    status = "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
    print(f"{label:<44} {took:8.2f} s  ({status})", flush=True)
    if proc.returncode != 0:
        print((proc.stdout + proc.stderr)[-2000:])
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prove", action="store_true")
    parser.add_argument("--fresh-clone", action="store_true")
    parser.add_argument("--base", help="the base whose queue to time (default: the newest declared)")
    args = parser.parse_args()
    project_of_root = Project(ROOT, base=args.base)
    base = ["--base", project_of_root.selected().version]
    series = project_of_root.load_series().names
    print(f"base {base[1]}: {len(series)} patch(es); cores: {os.cpu_count()}")
    with tempfile.TemporaryDirectory(prefix="verl-patches-bench-") as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        shutil.copy2(ROOT / "upstream.toml", project)
        for folder in ("patches", "requirements"):
            shutil.copytree(ROOT / folder, project / folder)
        env = {k: v for k, v in os.environ.items() if k != "VERL_PATCHES_BUILD_DIR"}
        venv_python = ROOT / "build/venv/bin/python"
        if venv_python.exists():
            env["VERL_PATCHES_PYTHON"] = str(venv_python)
        timed("apply (cold: import upstream + git am)", [*TOOL, "apply", "-C", str(project), *base], env)
        timed("apply (warm: reset to import + git am)", [*TOOL, "apply", "-C", str(project), *base], env)
        timed("export (no change)", [*TOOL, "export", "-C", str(project), *base], env)
        timed("check (lint + trial apply + compare)", [*TOOL, "check", "-C", str(project), *base], env)
        if args.prove:
            timed("prove (empty cache)", [*TOOL, "prove", "-C", str(project), *base], env)
            timed("prove (re-run, nothing changed)", [*TOOL, "prove", "-C", str(project), *base], env)
        if args.fresh_clone:
            clone = Path(tmp) / "clone"
            subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
            fresh = {k: v for k, v in os.environ.items() if not k.startswith("VERL_PATCHES_")}
            mirror = os.environ.get("VERL_PATCHES_MIRROR") or ROOT.parent / "shared" / "upstream"
            if Path(mirror).is_dir() or "://" in str(mirror):
                fresh["VERL_PATCHES_MIRROR"] = str(mirror)
            timed("make test (fresh clone, new venvs)", ["make", "test"], fresh, cwd=clone)
    return 0


if __name__ == "__main__":
    sys.exit(main())
