"""verl-patches wheel: build a reproducible wheel of the patched tree into dist/."""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from verl_patches.checkout import Project
from verl_patches.cli import Command
from verl_patches.errors import VerlPatchesError
from verl_patches.git import scratch
from verl_patches.git.tree import BuildTree
from verl_patches.model.upstream import local_version
from verl_patches.queue.apply import refuse_unexported
from verl_patches.sources.sdist import unpack_members

VERSION_FILE = "verl/version/version"


COMMAND = Command(
    "wheel",
    "build a reproducible patched wheel into dist/",
    "Build dist/verl-<version>+fix.<N>-*.whl from build/verl (SOURCE_DATE_EPOCH = HEAD's date).",
    build_lock=True,
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--outdir", help="where to put the wheel (default: dist/)")


def build_wheel(tree: BuildTree, version: str, outdir: Path) -> Path:
    epoch = tree.git.out("log", "-1", "--format=%ct", "HEAD")
    archive = tree.git.run("archive", "--format=tar", "HEAD").stdout
    with scratch.folder("wheel") as tmp:
        src = Path(tmp) / "src"
        out = Path(tmp) / "out"
        src.mkdir()
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            unpack_members(tar, src, f"git archive of {tree.path} HEAD")
        (src / VERSION_FILE).write_text(version + "\n")
        env = {**os.environ, "SOURCE_DATE_EPOCH": epoch, "PYTHONHASHSEED": "0"}
        cmd = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(src)]
        # umask 022: the modes of the files the build writes (and so the wheel's bytes) do not depend on the caller's.
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, umask=0o022)
        if proc.returncode != 0:
            raise VerlPatchesError(f"wheel build failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        wheels = sorted(out.glob("*.whl"))
        if len(wheels) != 1:
            raise VerlPatchesError(f"expected one wheel, the build produced {[w.name for w in wheels]}")
        outdir.mkdir(parents=True, exist_ok=True)
        target = outdir / wheels[0].name
        shutil.copyfile(wheels[0], target)
        return target


def run(project: Project, args: argparse.Namespace) -> int:
    upstream = project.load_upstream()
    tree = BuildTree(project.tree_dir)
    if not tree.import_commit(upstream):
        raise VerlPatchesError(f"no build tree for {upstream.tag}: run `verl-patches apply` first")
    refuse_unexported(project, tree, f"build a wheel that would not match {project.queue}/")
    version = local_version(upstream.version, len(project.load_series().names))
    wheel = build_wheel(tree, version, Path(args.outdir) if args.outdir else project.dist_dir)
    print(f"built {wheel}")
    return 0
