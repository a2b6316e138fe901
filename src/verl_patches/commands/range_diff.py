"""verl-patches range-diff A B: git range-diff of the series as two refs of this repository have it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from verl_patches.checkout import UPSTREAM_FILE, Project, tomllib
from verl_patches.cli import Command
from verl_patches.errors import VerlPatchesError
from verl_patches.git import scratch
from verl_patches.git.repo import Git
from verl_patches.git.tree import BuildTree
from verl_patches.git.trial import apply_each, scratch_tree

WORKING_COPY = "."


COMMAND = Command(
    "range-diff",
    "git range-diff of the series between two refs of this repository",
    "Compare two versions of the series (refs of this repository; '.' is the working copy).",
    build_lock=True,
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("old", help="a ref of this repository, e.g. origin/main, v1, HEAD~3")
    p.add_argument("new", nargs="?", default=WORKING_COPY, help="another ref (default: the working copy)")


def materialise(project: Project, ref: str, dest: Path) -> Project:
    """A minimal project (upstream.toml + patches/) holding the series as ref has it, on the same base when ref
    declares it (else on ref's newest)."""
    if ref == WORKING_COPY:
        return project
    git = Git(project.root)
    if not git.rev(ref):
        raise VerlPatchesError(f"{ref!r} is not a commit of {project.root}")
    (dest / "patches").mkdir(parents=True)
    (dest / UPSTREAM_FILE).write_text(as_base_tables(git.out("show", f"{ref}:{UPSTREAM_FILE}")), encoding="utf-8")
    listing = git.out("ls-tree", "-r", "--name-only", ref, "--", "patches")
    for name in listing.splitlines():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes(git.run("show", f"{ref}:{name}").stdout)
    wanted = project.selected().version
    declared = [base.version for base in Project(dest).bases()]
    at_ref = Project(dest, base=wanted if wanted in declared else declared[-1])
    if not at_ref.series_path.exists():  # ref has no such queue yet: an empty one there
        at_ref.patches_dir.mkdir(parents=True, exist_ok=True)
        at_ref.series_path.write_text("")
    return at_ref


def as_base_tables(text: str) -> str:
    """upstream.toml as a ref from before per-base queues has it (one [upstream] table, its queue patches/), written
    as the [base."<version>"] table the tool reads; any other text as it is."""
    data = tomllib.loads(text)
    if "base" in data or not isinstance(data.get("upstream"), dict):
        return text
    header = f'[base."{data["upstream"].get("version")}"]'
    lines = [f'{header}\nqueue = "patches"' if line.strip() == "[upstream]" else line for line in text.splitlines()]
    return "\n".join(line.replace("[upstream.", header[:-1] + ".", 1) for line in lines) + "\n"


def applied_range(project: Project, version_of: Project, main: BuildTree) -> tuple[str, str]:
    upstream = version_of.load_upstream()
    series = version_of.load_series()
    with scratch_tree(main, upstream, project.cache_dir, mirror=project.mirror) as tree:
        base = tree.head()
        # A ref's queue comes byte for byte from git; one committed before export wrote its end marker lacks it.
        marker = version_of is project
        apply_each(tree, [(name, version_of.patch_path(name)) for name in series.names], marker=marker)
        head = tree.head()
        assert base and head
        # Keep the commits reachable while range-diff runs (and for later inspection).
        main.git.run("update-ref", f"refs/range-diff/{head}", head)
    assert base and head
    return base, head


def run(project: Project, args: argparse.Namespace) -> int:
    main_tree = BuildTree(project.tree_dir)
    if not main_tree.exists():
        raise VerlPatchesError(f"no build tree at {main_tree.path}: run `verl-patches apply` first")
    with scratch.folder("range-diff") as tmp:
        old = materialise(project, args.old, Path(tmp) / "old")
        new = materialise(project, args.new, Path(tmp) / "new")
        old_base, old_head = applied_range(project, old, main_tree)
        new_base, new_head = applied_range(project, new, main_tree)
    if old_base == old_head or new_base == new_head:  # git range-diff takes no empty range
        sys.stdout.write(one_sided(main_tree.git, old_base, old_head, new_base, new_head))
        return 0
    proc = main_tree.git.run(
        "range-diff", "--no-color", f"{old_base}..{old_head}", f"{new_base}..{new_head}", check=True
    )
    sys.stdout.write(proc.stdout.decode(errors="replace"))
    return 0


def one_sided(git: Git, old_base: str, old_head: str, new_base: str, new_head: str) -> str:
    """range-diff's listing when one side has no patches: every patch of the other side, removed or added."""
    lines = []
    for side, (base, head) in (("old", (old_base, old_head)), ("new", (new_base, new_head))):
        log = git.out("log", "--reverse", "--format=%h %s", "--abbrev=7", f"{base}..{head}")
        for number, entry in enumerate(log.splitlines(), 1):
            short, subject = entry.split(" ", 1)
            if side == "old":
                lines.append(f"{number}:  {short} < -:  ------- {subject}")
            else:
                lines.append(f"-:  ------- > {number}:  {short} {subject}")
    return "".join(line + "\n" for line in lines)
