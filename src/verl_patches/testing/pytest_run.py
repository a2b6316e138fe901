"""The tool's one way to run pytest: the command line, and a run whose results are read from its junit XML.

Every pytest run of the tool is built here: the series' tests (`test`), the runner of `prove` and `rebase`
(`runner`) and verl's own suites (`verl_suite`). The results come from pytest's junit XML (family xunit1, whose
test cases name their file), not from its terminal output. junit XML writes an expected failure (xfail) as a skip
of type pytest.xfail, a strict unexpected pass (XPASS(strict)) as a failure, and any other XPASS as a plain pass."""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from verl_patches.git import scratch

logger = logging.getLogger(__name__)

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
# pytest exit codes: 0 all passed, 1 some failed, 2 interrupted (collection errors), 5 nothing collected.
FAILED_CODES = (1, 2)
COMPLETE_CODES = (0, 1, 5)  # any other (interrupted, killed, internal or usage error): an incomplete run
XFAIL = "pytest.xfail"  # the type of a junit XML <skipped> that is an expected failure
_SUMMARY_ORDER = ("failed", "passed", "skipped", "xfailed", "error")  # pytest's order


def command(python: Path | str, targets: Sequence[str], timeout: int, options: Sequence[str] = (),
            junit: Path | None = None) -> list[str]:  # fmt: skip
    """`python -m pytest` without its cache, with a per-test timeout, options, a junit XML file when given, then
    the targets (test files, or further options and files)."""
    cmd = [str(python), "-m", "pytest", "-p", "no:cacheprovider", *options, f"--timeout={timeout}"]
    if junit is not None:
        cmd += [f"--junitxml={junit}", "-o", "junit_family=xunit1"]
    return [*cmd, *targets]


@dataclass(frozen=True)
class Case:
    """One test case of the junit XML."""

    node_id: str  # as pytest names it: tests/a_test.py::TestC::test_x[1], or the file of a collection error
    junit_id: str  # classname::name, as the junit XML names it
    outcome: str  # passed, failed (a failure or an error) or skipped (an expected failure too)
    error: bool  # an error (collection, setup or teardown), not a failure of the test itself
    message: str  # the first line of the failure or error
    xfailed: bool = False  # skipped as an expected failure (xfail)


@dataclass(frozen=True)
class PytestResult:
    returncode: int
    cases: tuple[Case, ...] = ()
    seconds: float = 0.0
    output: str = ""  # stdout and stderr, for a run that did not complete
    junit: bool = False  # whether pytest wrote its junit XML

    @property
    def passed(self) -> bool:
        return self.returncode == 0

    @property
    def complete(self) -> bool:
        return self.returncode in COMPLETE_CODES and self.junit

    @property
    def outcomes(self) -> dict[str, str]:
        """Outcome per junit id; a test reported twice (it passed, then errored in teardown): the worse wins."""
        return outcomes_of(self.cases)

    def _failing(self) -> list[Case]:
        """The failed cases in the order of pytest's short summary (-rfE): the failures, then the errors."""
        failing = [c for c in self.cases if c.outcome == FAILED]
        return [c for c in failing if not c.error] + [c for c in failing if c.error]

    @property
    def failed(self) -> tuple[str, ...]:
        """The pytest ids of the failing tests (and of the files that failed to collect), once each."""
        return tuple(dict.fromkeys(c.node_id for c in self._failing()))

    @property
    def lines(self) -> tuple[str, ...]:
        """pytest's short test summary lines (-rfE): `FAILED id - message`, then `ERROR id - message`."""
        lines = [
            f"{'ERROR' if c.error else 'FAILED'} {c.node_id}" + (f" - {c.message}" if c.message else "")
            for c in self._failing()
        ]
        return tuple(dict.fromkeys(lines))

    @property
    def summary(self) -> str:
        """pytest's summary line, e.g. '1 failed, 2 passed, 1 xfailed in 0.31s'; '' when no test ran. A test that
        passes unexpectedly (XPASS, not strict) counts as passed, where pytest says xpassed: junit XML does not tell
        them apart."""
        tally = Counter("error" if c.error else "xfailed" if c.xfailed else c.outcome for c in self.cases)
        parts = [f"{tally[key]} {key}" + ("s" if key == "error" and tally[key] > 1 else "")
                 for key in _SUMMARY_ORDER if tally[key]]  # fmt: skip
        return f"{', '.join(parts)} in {self.seconds:.2f}s" if parts else ""


def run(python: Path | str, targets: Sequence[str], timeout: int, cwd: Path, env: Mapping[str, str],
        options: Sequence[str] = (), keep: Path | None = None, say: bool = False) -> PytestResult:  # fmt: skip
    """`command` in cwd, its results read from its junit XML; keep: a path the junit XML is also copied to;
    say: log the command and its exit status (at INFO)."""
    with scratch.folder("pytest") as tmp:
        junit = Path(tmp) / "junit.xml"
        cmd = command(python, targets, timeout, options, junit)
        if say:
            logger.info(f"+ (in {cwd}) {' '.join(cmd)}")
        proc = subprocess.run(cmd, cwd=cwd, env=dict(env), capture_output=True, text=True)
        if say:
            logger.info(f"  pytest exit {proc.returncode}: {(proc.stdout.strip().splitlines() or [''])[-1]}")
        output = proc.stdout[-3000:] + proc.stderr[-3000:]
        if not junit.exists():
            return PytestResult(proc.returncode, output=output)
        if keep is not None:
            keep.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(junit, keep)
        cases, seconds = parse(junit.read_text(encoding="utf-8"))
        return PytestResult(proc.returncode, cases, seconds, output, junit=True)


def parse(text: str) -> tuple[tuple[Case, ...], float]:
    """The test cases of a junit XML document, and the time its suites took."""
    root = ET.fromstring(text)
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    seconds = sum(float(s.get("time") or 0) for s in suites)
    return tuple(_case(element) for element in root.iter("testcase")), seconds


def outcomes_of(cases: Sequence[Case]) -> dict[str, str]:
    outcomes: dict[str, str] = {}
    for case in cases:
        if outcomes.get(case.junit_id) != FAILED:
            outcomes[case.junit_id] = case.outcome
    return outcomes


def _case(element: ET.Element) -> Case:
    classname, name, file = element.get("classname", ""), element.get("name", ""), element.get("file", "")
    failure, error, skipped = element.find("failure"), element.find("error"), element.find("skipped")
    problem = failure if failure is not None else error
    outcome = FAILED if problem is not None else SKIPPED if skipped is not None else PASSED
    message = ""
    if problem is not None:
        message = (problem.get("message") or "").split("\n", 1)[0]
        if failure is None and message == "collection failure":  # the exception is the last `E   ` line
            raised = [line[1:].strip() for line in (problem.text or "").splitlines() if line.startswith("E ")]
            message = raised[-1] if raised else message
    xfailed = outcome == SKIPPED and skipped is not None and skipped.get("type") == XFAIL
    return Case(_node_id(classname, name, file), f"{classname}::{name}", outcome, failure is None and error is not None,
                message, xfailed)  # fmt: skip


def _node_id(classname: str, name: str, file: str) -> str:
    """pytest's id of a junit test case: the file, the classes in the classname past the module, the name."""
    if not file:
        return f"{classname}::{name}" if classname else name
    module = re.sub(r"\.py$", "", file).replace("/", ".")
    if not classname:
        return file  # a collection error: pytest names the module
    classes = classname[len(module) + 1 :].split(".") if classname.startswith(module + ".") else []
    return "::".join([file, *classes, name])
