"""Per patch: its tests fail without its code and pass with it, and the tests of the patches before it still pass."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from verl_patches.checkout import Project
from verl_patches.git.tree import BuildTree
from verl_patches.git.trial import apply_each, scratch_tree
from verl_patches.model.patch import Patch
from verl_patches.testing.helper_tests import tests_of
from verl_patches.testing.pytest_run import FAILED_CODES
from verl_patches.testing.runner import PytestRunner

logger = logging.getLogger(__name__)

YES, NO, SKIP = "yes", "NO", "-"


@dataclass
class Proof:
    patch: Patch
    tests: list[str]
    failed_before: str = SKIP
    passed_after: str = SKIP
    earlier_pass: str = SKIP
    problems: list[str] = field(default_factory=list)
    failures_before: tuple[str, ...] = ()  # pytest's short summary lines without the patch's code

    @property
    def ok(self) -> bool:
        return not self.problems


def prove(project: Project, runner: PytestRunner) -> list[Proof]:
    upstream = project.load_upstream()
    patches = project.load_patches()
    main = BuildTree(project.tree_dir)
    proofs: list[Proof] = []
    with scratch_tree(main, upstream, project.cache_dir, mirror=project.mirror) as tree:
        base = tree.head()
        assert base, "a scratch tree starts on the import commit"
        commits = apply_each(tree, [(p.name, project.patch_path(p.name)) for p in patches])
        earlier: list[str] = []
        for index, patch in enumerate(patches):
            previous = commits[index - 1] if index else base
            proof = Proof(
                patch=patch,
                tests=tests_of(tree.git, commits[index], patch, "_on_cpu.py"),
            )
            logger.info(f"[{index + 1}/{len(patches)}] {patch.subject}")
            if patch.exemption is not None:
                proof.failed_before = "exempt"
            elif proof.tests:
                outside_code = [f for f in patch.files if not f.startswith("verl/") and f not in patch.deleted_files]
                tree.git.run("checkout", "--quiet", "--force", "--detach", previous)
                tree.git.run("checkout", commits[index], "--", *outside_code)
                before = runner.outcome(tree, proof.tests)
                rc = before.returncode
                proof.failures_before = before.lines
                proof.failed_before = YES if rc in FAILED_CODES else NO
                if rc not in FAILED_CODES:
                    proof.problems.append(f"its tests do not fail without its code (pytest exit {rc})")
            elif patch.code_files:
                proof.problems.append("changes verl/ but has no *_on_cpu.py test")
            tree.git.run("checkout", "--quiet", "--force", "--detach", commits[index])
            earlier_files = [f for f in earlier if (tree.path / f).exists() and f not in proof.tests]
            if proof.tests or earlier_files:
                rc = runner.run(tree, proof.tests + earlier_files)
                if rc == 0:
                    proof.passed_after = YES if proof.tests else SKIP
                    proof.earlier_pass = YES if earlier_files else SKIP
                else:
                    if proof.tests:
                        proof.passed_after = YES if runner.run(tree, proof.tests) == 0 else NO
                    if earlier_files:
                        proof.earlier_pass = YES if runner.run(tree, earlier_files) == 0 else NO
                    if proof.passed_after == NO:
                        proof.problems.append("its tests fail with the patch applied")
                    if proof.earlier_pass == NO:
                        proof.problems.append("earlier patches' tests fail after it (series not bisectable)")
            earlier.extend(t for t in proof.tests if t not in earlier)
            proofs.append(proof)
    return proofs
