"""Replaying a queue onto a newer verl release: classify each patch, test what is carried, report, write it."""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

from verl_patches.checkout import BASE_ENV, Project
from verl_patches.errors import PatchApplyError, PinMismatchError, VerlPatchesError
from verl_patches.git.tree import BuildTree
from verl_patches.git.trial import apply_each, linked_worktree
from verl_patches.model.compare import BASE_SPECIFIC
from verl_patches.model.patch import Patch
from verl_patches.model.table import render
from verl_patches.model.trailers import APPLIED_UPSTREAM, EXEMPT_TRAILER, HOME
from verl_patches.model.upstream import GIT_ARCHIVE, SDIST_OVER_ARCHIVE, Upstream
from verl_patches.queue import new_queue
from verl_patches.queue.apply import refuse_unexported
from verl_patches.sources import source
from verl_patches.sources.sdist import archive_commit, download, fetch, sha256_of
from verl_patches.testing.helper_tests import tests_of
from verl_patches.testing.runner import PytestRunner
from verl_patches.testing.venv import ensure, requirements_stamp

logger = logging.getLogger(__name__)

CLEAN = "applies cleanly"


UPSTREAM = "already upstream"


PARTLY = "partly upstream"


CONFLICT = "conflict"


TESTS_FAIL = "applies, its tests fail"


TESTS_ONLY = "fixed upstream: carried as tests only"


APPLIED = "applied upstream"


APPLIED_DROPPED = "fixed upstream: dropped"


BACKPORT_DROPPED = "fixed upstream: backport dropped"


@dataclass
class Outcome:
    patch: Patch
    result: str
    detail: str = ""
    tests_on_new_base: str = "-"
    carried: str = "as is"
    resolved: bool = True
    notes: list[str] = field(default_factory=list)
    failing: list[str] = field(default_factory=list)  # tests that fail on the new base without the patch's code
    commit: str = ""  # the patch's commit in the replayed series, when it is carried


def changed_lines(diff: str) -> int:
    return sum(
        1 for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++ ", "--- ")) and line != "---"
    )


def fetch_new(project: Project, version: str, expected: str | None) -> tuple[Upstream, Path, str]:
    name = project.load_upstream().name
    if expected:
        upstream = Upstream(name=name, version=version, sha256=expected)
        return upstream, fetch(upstream, project.cache_dir), "verified against --sha256"
    path = download(Upstream(name=name, version=version, sha256="0" * 64), project.cache_dir)
    upstream = Upstream(name=name, version=version, sha256=sha256_of(path))
    return upstream, path, "not pinned before: recorded from the download (check it against PyPI)"


def pin_tag_archive(project: Project, tree: BuildTree, old: Upstream, version: str, tag: str):
    """The new release as a tag-archive base pinned from its download: the commit its archive names, the tree id
    of its files."""
    repository = old.repository or (old.over.repository if old.over else "") or HOME
    candidate = Upstream(name=old.name, version=version, source=GIT_ARCHIVE, repository=repository, git_tag=tag)
    path = source.fetch(candidate, project.cache_dir, project.mirror)
    pinned = dataclasses.replace(candidate, commit=archive_commit(path), tree=tree.tree_id(path))
    return pinned, path, "pinned here from this download: the commit its archive names and the tree id of its files"


def replay(project: Project, tree: BuildTree, old_commits: dict[str, str], patches: list[Patch], runner, version):
    outcomes = []
    for patch in patches:
        patch_file = project.patch_path(patch.name)
        before = tree.head()
        assert before, "the replay starts on the new base's import commit"
        applied = patch.applied_upstream
        if applied and applied.released_by(version):
            logger.info(f"dropping {patch.name}: {APPLIED_UPSTREAM}: {applied.format()}")
            outcomes.append(
                Outcome(
                    patch,
                    APPLIED,
                    f"its trailer '{APPLIED_UPSTREAM}: {applied.format()}' says verl {applied.version} has it, "
                    f"and {applied.version} <= {version}: dropped from the new queue",
                    carried=APPLIED_DROPPED,
                )
            )
            continue
        logger.info(f"replaying {patch.name}")
        try:
            changed = tree.am(patch.name, patch_file)
        except PatchApplyError as exc:
            outcome = Outcome(
                patch, CONFLICT, exc.detail.replace("\n", "; "), resolved=False, carried="no: port by hand"
            )
            if tree.ok_reverse(patch_file):
                outcome = Outcome(patch, UPSTREAM, "the patch reverse-applies on the new base", carried="dropped")
        else:
            if not changed:
                outcome = Outcome(patch, UPSTREAM, "the patch became empty", carried="dropped")
            else:
                old = changed_lines(tree.git.out("show", "--format=", old_commits[patch.name]))
                new = changed_lines(tree.git.out("show", "--format=", "HEAD"))
                if new < old:
                    left = tree.git.out("show", "--stat=100", "--format=", "HEAD")
                    outcome = Outcome(
                        patch, PARTLY, f"{new} of {old} changed lines left: {left.strip()}", carried="what is left"
                    )
                else:
                    outcome = Outcome(patch, CLEAN)
        if outcome.result in (CONFLICT, PARTLY):
            tree.git.run("reset", "--quiet", "--hard", before)
            carry_tests_only(tree, patch, old_commits[patch.name], outcome, runner, version)
            if outcome.result == PARTLY and outcome.carried not in (TESTS_ONLY, BACKPORT_DROPPED):
                tree.am(patch.name, patch_file)  # keep what is left of it
        elif outcome.result == UPSTREAM and patch.origin is not None:
            backport_upstream(tree, patch, outcome, runner, version)
        if tree.head() != before:
            outcome.commit = tree.head() or ""
        outcomes.append(outcome)
    return outcomes


def test_carried(tree: BuildTree, new_base: str, outcomes: list[Outcome], runner, version: str) -> None:
    """Run the CPU tests of each patch carried as it is on the replayed series; a patch whose tests fail there
    needs a hand port too: it is taken out of the series (and so is a later one that no longer applies)."""
    for outcome in outcomes:
        if outcome.result != CLEAN or not outcome.commit:
            continue
        tests = tests_of(tree.git, outcome.commit, outcome.patch, "_on_cpu.py")
        if not tests:
            continue
        logger.info(f"testing {outcome.patch.name} on {version}")
        result = runner.outcome(tree, tests)
        outcome.tests_on_new_base = f"pass ({result.summary})" if result.passed else f"fail ({result.summary})"
        if result.passed:
            continue
        outcome.result, outcome.resolved, outcome.carried = TESTS_FAIL, False, "no: port by hand"
        outcome.failing = list(result.failed)
        outcome.notes.append(f"it applies, but its tests fail on {version} with the series; port it by hand")
    if all(o.resolved or not o.commit for o in outcomes):
        return
    tree.git.run("reset", "--quiet", "--hard", new_base)
    for outcome in outcomes:
        if not outcome.commit:
            continue
        if outcome.resolved and tree.git.ok("cherry-pick", "--allow-empty", outcome.commit):
            outcome.commit = tree.head() or ""
            continue
        if outcome.resolved:
            tree.git.run("cherry-pick", "--abort", check=False)
            outcome.result, outcome.resolved, outcome.carried = CONFLICT, False, "no: port by hand"
            outcome.notes.append("it no longer applies without the patches taken out before it")
        outcome.commit = ""


def carry_tests_only(tree, patch: Patch, old_commit: str, outcome: Outcome, runner, version: str) -> None:
    """Run the patch's CPU tests on the new base without its code; if they pass, keep them as a tests-only patch."""
    tests = tests_of(tree.git, old_commit, patch, "_on_cpu.py")
    outside = [f for f in patch.files if not f.startswith("verl/") and f not in patch.deleted_files]
    if not tests:
        outcome.tests_on_new_base = "no CPU tests"
        return
    if not patch.code_files:  # nothing upstream could have fixed: its tests passing there tell nothing
        outcome.tests_on_new_base = "not run"
        outcome.notes.append("it changes nothing under verl/, so no upstream fix can replace it; port it by hand")
        return
    tree.git.run("checkout", old_commit, "--", *outside)
    result = runner.outcome(tree, tests)
    if not result.passed:
        outcome.tests_on_new_base = f"fail ({result.summary or f'pytest exit {result.returncode}'})"
        outcome.failing = list(result.failed)
        shown = ", ".join(t.split("::", 1)[-1] for t in result.failed[:12])
        more = f" and {len(result.failed) - 12} more" if len(result.failed) > 12 else ""
        outcome.notes.append(
            "still needed on the new base: its tests fail there without its code"
            + (f" ({shown}{more})" if shown else "")
            + "; port it by hand in the build tree"
        )
        tree.git.run("reset", "--quiet", "--hard")
        return
    outcome.tests_on_new_base = f"pass ({result.summary})" if result.summary else "pass"
    if patch.origin is not None:
        tree.git.run("reset", "--quiet", "--hard")
        outcome.carried = BACKPORT_DROPPED
        outcome.resolved = True
        outcome.notes.append(
            f"a backport of {patch.origin.pr.url}, which verl {version} has: its tests pass there without its code, "
            "so it is dropped from the new queue (not carried as tests only)"
        )
        return
    message = tests_only_message(patch, version)
    # The original's author and date: writing the same queue twice gives the same bytes.
    author = ["--author", patch.author] if patch.author else []
    date = {"GIT_AUTHOR_DATE": patch.date, "GIT_COMMITTER_DATE": patch.date} if patch.date else None
    tree.git.run("commit", "--quiet", "--no-verify", *author, "-F", "-", input=message.encode(), env=date)
    outcome.carried = TESTS_ONLY
    outcome.resolved = True
    outcome.notes.append("upstream fixed the bug in its own way: its tests pass on the new base without the code")


def backport_upstream(tree, patch: Patch, outcome: Outcome, runner, version: str) -> None:
    """A backport the new base already holds: dropped; its CPU tests (upstream's copy of them) are run there."""
    assert patch.origin is not None, "called for backports only"
    tests = patch.tests_matching("_on_cpu.py")
    outcome.carried = BACKPORT_DROPPED
    note = f"a backport of {patch.origin.pr.url}, which verl {version} has as it is: dropped from the new queue"
    if tests:
        result = runner.outcome(tree, tests)
        summary = result.summary or f"pytest exit {result.returncode}"
        outcome.tests_on_new_base = f"pass ({summary})" if result.passed else f"fail ({summary})"
        if not result.passed:
            note += f"; but its tests fail there ({', '.join(result.failed[:12]) or summary}): look at them by hand"
    outcome.notes.append(note)


def tests_only_message(patch: Patch, version: str) -> str:
    """The message of the patch carried as its tests alone: its trailers kept, but Applied-Upstream (now the new
    release, with the URL the old trailer named), Prove-Exempt and Base-Specific written anew."""
    subject = re.sub(r"\] (feat|fix|refactor|chore|perf): ", "] test: ", patch.subject, count=1)
    ours = {key.lower() for key in (APPLIED_UPSTREAM, EXEMPT_TRAILER, BASE_SPECIFIC)}
    kept = [f"{key}: {value}" for key, value in patch.trailers if key.lower() not in ours]
    old = patch.applied_upstream
    applied = f"{APPLIED_UPSTREAM}: {version}" + (f", {old.url}" if old and old.url else "")
    note = (
        f"Rebased onto verl {version}: upstream fixed this in its own way, so this patch keeps only its tests, "
        "which pass on that release and guard the fix."
    )
    exempt = f"{EXEMPT_TRAILER}: tests of a fix that is upstream in verl {version}"
    specific = f"{BASE_SPECIFIC}: verl {version} has the fix upstream, so this queue carries only its tests"
    trailers = "\n".join([*kept, applied, exempt, specific])
    return f"{subject}\n\n{patch.message_without_trailers.rstrip()}\n\n{note}\n\n{trailers}\n"


def overlay_summary(old: Upstream, new: Upstream, shipped: list[str], kept: list[str], dropped=()) -> list[str]:
    """Report lines on which paths of the new base were checked (the sdist's) and which were carried over."""
    if not old.is_archive:
        return []
    folders: dict[str, int] = {}
    for path in kept:
        top = path.split("/", 1)[0] if "/" in path else "(top level)"
        folders[top] = folders.get(top, 0) + 1
    by_folder = ", ".join(f"`{name}` {count}" for name, count in sorted(folders.items()))
    archive = f"{old.git_tag} tag archive" if old.git_tag else old.archive_name
    lines = [
        f"- new base: verl {new.version}'s sdist over the {archive} (no tag archive of {new.version} "
        f"was used): {len(shipped)} paths checked (the sdist's files, pinned by its sha256); {len(kept)} paths "
        f"carried over from {old.git_tag or old.commit[:12]} unchecked ({by_folder})",
    ]
    inside = [path for path in kept if path.startswith(f"{old.name}/")]
    modules = [path for path in inside if path.endswith(".py")]
    if inside:
        kinds: dict[str, int] = {}
        for path in inside:
            suffix = Path(path).suffix or "(no suffix)"
            kinds[suffix] = kinds.get(suffix, 0) + 1
        lines.append(
            f"- of those, {len(inside)} are under `{old.name}/` ("
            + ", ".join(f"{count} `{suffix}`" for suffix, count in sorted(kinds.items()))
            + f"); the sdist ships the package's Python modules, so a `.py` among them was probably deleted "
            f"upstream: {len(modules)}"
            + (": " + ", ".join(f"`{path}`" for path in modules[:20]) if modules else "")
            + (f" and {len(modules) - 20} more" if len(modules) > 20 else "")
        )
    if dropped:
        lines.append("- left out, the sdist's build metadata: " + ", ".join(f"`{path}`" for path in dropped))
    return lines


def report(
    old: Upstream, new: Upstream, provenance: str, outcomes: list[Outcome], took: float, base_lines=(), command=""
) -> str:
    rows = [["#", "patch", "result", "tests on new base", "carried forward"]]
    for n, o in enumerate(outcomes, start=1):
        rows.append([str(n), o.patch.subject, o.result, o.tests_on_new_base, o.carried])
    details = []
    for o in outcomes:
        if o.detail or o.notes:
            details.append(f"- `{o.patch.name}`: " + "; ".join(filter(None, [o.detail, *o.notes])))
    unresolved = [o for o in outcomes if not o.resolved]
    lines = [
        f"# Rebase of the series from verl {old.version} onto verl {new.version}",
        "",
        *([f"- command: `{command}`"] if command else []),
        f"- new tag archive: {new.repository} {new.git_tag}, tree `{new.tree}` ({provenance})"
        if new.is_archive
        else f"- new sdist sha256: `{new.sha256}` ({provenance})",
        *base_lines,
        f"- {len(outcomes)} patch(es); unresolved: {len(unresolved)}; wall time {took:.0f} s",
        "",
        "```",
        render(rows),
        "```",
        "",
        *(["Details:", "", *details, ""] if details else []),
    ]
    return "\n".join(lines)


def rebase(project: Project, args, command: str) -> int:
    """The rebase command's work on its parsed options (args); command: the command line, for the report."""
    start = time.monotonic()
    bases = project.bases()
    declared = next((b for b in bases if b.version == args.onto), None)
    if not (args.base or os.environ.get(BASE_ENV)):
        older = [b for b in bases if Version(b.version) < Version(args.onto)]
        if older:
            project = project.for_base(older[-1].version)
    old = project.load_upstream()
    if Version(args.onto) <= Version(old.version):
        raise VerlPatchesError(f"--onto {args.onto} is not newer than the base {old.version} of {project.queue}")
    main_tree = BuildTree(project.tree_dir)
    base = main_tree.import_commit(old)
    if not base:
        raise VerlPatchesError(f"no build tree for {old.tag}: run `verl-patches apply --base {old.version}` first")
    refuse_unexported(project, main_tree, "rebase a series that differs from the build tree")
    patches = project.load_patches()
    tag_archive = declared is not None and declared.upstream.is_archive
    if args.tag_archive and declared is not None:
        raise VerlPatchesError(
            f"--tag-archive {args.tag_archive}: upstream.toml declares {args.onto} already; rebase without the option"
        )
    if args.tag_archive:
        new, sdist, provenance = pin_tag_archive(project, main_tree, old, args.onto, args.tag_archive)
        tag_archive = True
    elif declared is not None and tag_archive:
        new, sdist = declared.upstream, source.fetch(declared.upstream, project.cache_dir, project.mirror)
        provenance = "its tag archive, checked against the tree id upstream.toml pins"
    else:
        expected = args.sha256 or (declared.upstream.sha256 if declared else None)
        new, sdist, provenance = fetch_new(project, args.onto, expected)
        if declared and not args.sha256:
            provenance = "verified against upstream.toml"
    python = ensure(project.venv_dir, project.requirements_paths, project.tree_dir)
    stamp = requirements_stamp(project.requirements_paths)
    runner = PytestRunner(python=python, cache_path=project.build_dir / "prove-cache.json", env_stamp=stamp)
    branch = f"rebase/{new.version}"
    archive = old if old.is_archive else old.over
    if declared is not None and declared.upstream.over is not None:
        archive = declared.upstream.over  # the new base names the archive its sdist is laid over
    with linked_worktree(main_tree, base, keep=branch) as tree:
        old_commits = dict(
            zip(
                [p.name for p in patches],
                apply_each(tree, [(p.name, project.patch_path(p.name)) for p in patches]),
                strict=True,
            )
        )
        if tag_archive:
            new_base, base_lines = tree.import_upstream(new, sdist, parent=base, tag=False), []
        elif archive is not None:
            # The archive's import in this tree; made here (fetched, checked against its pin) when it has none.
            over = (
                base
                if archive == old
                else source.import_pinned(main_tree, archive, project.cache_dir, project.mirror, checkout=False)
            )
            new_base, shipped, kept, dropped = tree.overlay_sdist(new, sdist, over, parent=base)
            base_lines = overlay_summary(archive, new, shipped, kept, dropped)
            new = dataclasses.replace(
                new, source=SDIST_OVER_ARCHIVE, over=archive, tree=tree.git.out("rev-parse", f"{new_base}^{{tree}}")
            )
        else:
            new_base, base_lines = tree.import_upstream(new, sdist, parent=base, tag=False), []
        if declared and declared.upstream.pins_tree and declared.upstream.tree != new.tree:
            where = f"{sdist} laid over {archive.tag if archive else old.tag}"
            raise PinMismatchError.tree(where, declared.upstream.tree, new.tree)
        outcomes = replay(project, tree, old_commits, patches, runner, new.version)
        test_carried(tree, new_base, outcomes, runner, new.version)
        text = report(old, new, provenance, outcomes, time.monotonic() - start, base_lines, command)
        print(text)
        if args.report:
            Path(args.report).parent.mkdir(parents=True, exist_ok=True)
            Path(args.report).write_text(text + "\n", encoding="utf-8")
        unresolved = [o for o in outcomes if not o.resolved]
        if args.write:
            queue = declared.queue if declared else f"patches/{new.version}"
            files = new_queue.files(project, tree.export(new_base), unresolved, old.version, new.version)
            new_queue.write(project, new, queue, files, declared is None, args.force)
            if unresolved:
                print(
                    f"{len(unresolved)} patch(es) of {project.queue} need a hand port onto {new.version}: "
                    f"listed in {queue}/{new_queue.TO_PORT} with their failing tests"
                )
    print(f"the replayed series is kept on branch {branch} of {project.tree_dir}")
    return 1 if unresolved else 0
