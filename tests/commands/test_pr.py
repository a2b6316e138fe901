"""pr: a patch printed as a verl pull request, checked with verl's own PR title and description checks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import ROOT, make_sdist, sha256
from helpers.clamp import BUGGY, add_clamp_fix
from helpers.mbox import mbox

from verl_patches.checkout import Project
from verl_patches.model.patch import Patch
from verl_patches.model.pull_request import build, split_template, unwrap

TEMPLATE = """\
### What does this PR do?

> Add **concise** overview of what this PR aims to achieve or accomplish.

### Checklist Before Starting

- [ ] Search for similar PRs.

### Test

> For changes that can not be tested by CI, validate by experiment(s).

### API and Usage Example

> Demonstrate how the API changes if any.

### Design & Code Changes

> Demonstrate the high-level design if this PR is complex, and list the specific changes.
"""

PR_URL = "https://github.com/verl-project/verl/pull/7372"
TRAILER_KEYS = ("Forwarded", "Origin", "Applied-Upstream", "Prove-Exempt", "Base-Specific", "Bug:", "prove records")
UPSTREAM_FILES = (
    ".github/PULL_REQUEST_TEMPLATE.md",
    "tests/special_sanity/check_pr_title.py",
    "tests/special_sanity/check_pr_description.py",
)


@pytest.fixture
def with_template(checkout, monkeypatch):
    monkeypatch.setenv("VERL_PATCHES_PYTHON", sys.executable)
    sdist = make_sdist(
        checkout.cache, "1.0.0", {"verl/models/clamp.py": BUGGY, ".github/PULL_REQUEST_TEMPLATE.md": TEMPLATE}
    )
    checkout.pin("1.0.0", sha256(sdist))
    assert checkout.cli("apply") == 0
    add_clamp_fix(checkout)
    assert checkout.cli("export") == 0
    return checkout


def test_pr_fills_the_template_from_the_message(with_template, capsys):
    capsys.readouterr()
    assert with_template.cli("pr", "1") == 0
    out, err = capsys.readouterr()
    assert out.startswith(
        "title: [megatron] fix: clamp negative values\nbranch: verl-patches/megatron-fix-clamp-negative-values\n"
    )
    what = out.split("### What does this PR do?\n\n", 1)[1].split("\n### ", 1)[0]
    assert what.strip() == "p.\n\nRelated: issue #1."  # from its Bug trailer
    design = out.split("### Design & Code Changes\n\n", 1)[1]
    assert design.startswith("f.\n\nFiles changed:\n\n- `tests/models/test_clamp_on_cpu.py` (new)\n")
    assert "- `verl/models/clamp.py`\n" in design
    assert not [key for key in TRAILER_KEYS if key in out]
    assert "> Demonstrate how the API changes if any." in out  # left for the author, and said so
    assert "API and Usage Example" in err and "has not recorded" in err


def test_pr_shows_the_failures_prove_recorded_for_this_version_only(with_template, capsys):
    assert with_template.cli("prove") == 0
    capsys.readouterr()
    assert with_template.cli("pr", "megatron-fix-clamp-negative-values") == 0
    out, err = capsys.readouterr()
    test = out.split("### Test\n\n", 1)[1].split("\n### ", 1)[0]
    assert "FAILED tests/models/test_clamp_on_cpu.py::test_clamp - assert -1 == 0" in test
    assert "has not recorded" not in err
    # A new version of the patch (here: another message) does not inherit the old record.
    with_template.user_git(
        "commit",
        "-q",
        "--amend",
        "-m",
        "[megatron] fix: clamp negative values\n\nProblem: q.\n\nFix: f.\n\nTests: t.\n\nForwarded: no\n",
    )
    assert with_template.cli("export") == 0
    capsys.readouterr()
    assert with_template.cli("pr", "1") == 0
    out, err = capsys.readouterr()
    assert "FAILED" not in out and "has not recorded" in err


def test_pr_field_and_bad_selection(with_template, capsys):
    capsys.readouterr()
    assert with_template.cli("pr", "1", "--field", "title") == 0
    assert capsys.readouterr().out == "[megatron] fix: clamp negative values\n"
    assert with_template.cli("pr", "2") == 1
    assert "no patch number 2: the series has 1 patch(es)" in capsys.readouterr().err
    assert with_template.cli("pr", "nope") == 1
    assert "no patch named 'nope'" in capsys.readouterr().err


def test_pr_needs_a_base_with_the_template(checkout, capsys):
    assert checkout.cli("apply") == 0
    add_clamp_fix(checkout)
    assert checkout.cli("export") == 0
    capsys.readouterr()
    assert checkout.cli("pr", "1") == 1
    assert "the build tree has no .github/PULL_REQUEST_TEMPLATE.md" in capsys.readouterr().err


def test_split_template_keeps_every_section_in_order():
    preamble, sections = split_template("intro\n## A\n\none\n### B\ntwo\n")
    assert preamble == "intro"
    assert [(s.heading, s.title, s.text) for s in sections] == [("## A", "A", "\none"), ("### B", "B", "two")]


SAMPLES = [
    (
        "backport",
        (
            "[megatron] fix: build the mask (backport of verl#7372)",
            "Problem: p, with a warning (prove records each).\n\nFix: f.\n\nTests: t.\n\n"
            f"Origin: backport, {PR_URL}\nApplied-Upstream: 0.9.1, {PR_URL}\nForwarded: not-needed\n"
            "Bug: https://github.com/verl-project/verl/issues/9\nBase-Specific: why\n",
        ),
    ),
    (
        "exempt",
        ("[ci] chore: c", "Problem: p.\n\nFix: f.\n\nTests: t.\n\nProve-Exempt: only a list of names\nForwarded: no\n"),
    ),
]


def test_every_patch_passes_verls_own_pr_checks(tmp_path, verl_0_9_0):
    """The series' PRs against verl's own check_pr_title.py and check_pr_description.py (sanity.yml)."""
    for name in UPSTREAM_FILES:
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((verl_0_9_0 / name).read_bytes())
    template = (tmp_path / UPSTREAM_FILES[0]).read_text(encoding="utf-8")
    project = Project(ROOT)

    def check(script: str, title: str, body: str) -> subprocess.CompletedProcess:
        event = tmp_path / "event.json"
        event.write_text(json.dumps({"pull_request": {"title": title, "body": body}}))
        env = {"PR_TITLE": title, "GITHUB_EVENT_PATH": str(event), "GITHUB_WORKSPACE": str(tmp_path), "PATH": ""}
        return subprocess.run([sys.executable, str(tmp_path / script)], env=env, capture_output=True, text=True)

    # The checks can fail: the bare template and a free-form title are refused.
    assert check(UPSTREAM_FILES[2], "[megatron] fix: x", template).returncode != 0
    assert check(UPSTREAM_FILES[1], "fix the mask", template).returncode != 0
    queues = [project.for_base(base.version).load_patches() for base in project.bases()]
    patches = [patch for queue in queues for patch in queue] + [Patch.parse(f"{n}.patch", mbox(*m)) for n, m in SAMPLES]
    assert all(queues)
    for patch in patches:
        pr = build(patch, template, failures=None)
        assert check(UPSTREAM_FILES[1], pr.title, pr.body).returncode == 0, patch.name
        assert check(UPSTREAM_FILES[2], pr.title, pr.body).returncode == 0, patch.name
        assert not [key for key in TRAILER_KEYS if key in pr.body], patch.name
        assert patch.exemption is None or patch.exemption not in pr.body, patch.name
        what = pr.body.split("### What does this PR do?", 1)[1].split("\n### ", 1)[0]
        assert all(ref.short in what for ref in patch.bugs), patch.name


def test_unwrap_joins_wrapped_prose_but_keeps_lists_and_code_blocks():
    text = "Repro, wrapped\nover two lines:\n```python\nx = f(1)\ny = g(x)\n```\n- a list item\n- another"
    expected = "Repro, wrapped over two lines:\n```python\nx = f(1)\ny = g(x)\n```\n- a list item\n- another"
    assert unwrap(text) == expected


@pytest.mark.parametrize(
    ("trailers", "status", "note"),
    [
        (f"Origin: backport, {PR_URL}\nForwarded: not-needed", 3, f"a backport of verl-project/verl#7372 ({PR_URL})"),
        ("Forwarded: not-needed", 3, "is 'Forwarded: not-needed': it is not meant to be sent upstream"),
        (f"Forwarded: {PR_URL}", 0, f"was already sent upstream as {PR_URL}"),
    ],
)
def test_pr_says_when_a_patch_is_not_to_be_sent(with_template, trailers, status, note, capsys):
    subject = "[megatron] fix: clamp negative values" + (" (backport of verl#7372)" if "Origin" in trailers else "")
    message = f"{subject}\n\nProblem: q (prove records each).\n\nFix: f.\n\nTests: t.\n\n{trailers}\n"
    with_template.user_git("commit", "-q", "--amend", "-m", message)
    assert with_template.cli("export") == 0
    capsys.readouterr()
    assert with_template.cli("pr", "1") == status
    out, err = capsys.readouterr()
    assert note in err and "### What does this PR do?\n\nq.\n" in out


JOB = "  nightly:\n    runs-on: {runner}\n    steps:\n      - run: bash tests/special_npu/run.sh\n"


@pytest.mark.parametrize(
    ("runner", "trailer", "status"),
    [
        ("linux-aarch64-a3-16", "", 3),  # a new job on a self-hosted runner, never run there
        ("linux-aarch64-a3-16", "Hardware-Run: https://github.com/o/verl/actions/runs/1\n", 0),
        ("ubuntu-latest", "", 0),  # GitHub-hosted: its pull request's own CI runs it
    ],
)
def test_pr_holds_back_a_new_self_hosted_job_until_a_run_is_named(with_template, runner, trailer, status, capsys):
    message = "[ci] test: add a nightly job\n\nProblem: p.\n\nFix: f.\n\nTests: t.\n\nProve-Exempt: CI\n"
    with_template.commit_in_tree(
        ".github/workflows/nightly.yml", "on: push\njobs:\n" + JOB.format(runner=runner), message + trailer
    )
    assert with_template.cli("export") == 0
    capsys.readouterr()
    assert with_template.cli("pr", "2") == status
    err = capsys.readouterr().err
    held = "adds a CI job on the self-hosted runner linux-aarch64-a3-16, which has never run there"
    assert (held in err) == (status == 3) and ("'Hardware-Run: <URL of the run>'" in err) == (status == 3)
