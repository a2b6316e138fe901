"""The NPU smoke run's metric check (smoke_check.py) with the project's thresholds (ci/smoke-thresholds.toml), on
logs written the way verl 0.9.1's console and file loggers write them (smoke_logs.py; the values are synthetic):
one test per kind of broken run it exists to catch."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

import pytest
from helpers import ROOT
from helpers.smoke_logs import HEALTHY, INT_MASK, VALIDATION, console_log, edited, file_log

CI = ROOT / "ci"
THRESHOLDS = CI / "smoke-thresholds.toml"
_spec = importlib.util.spec_from_file_location("smoke_check", CI / "smoke_check.py")
assert _spec and _spec.loader
smoke_check = sys.modules["smoke_check"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(smoke_check)
load_thresholds, main, parse_log = smoke_check.load_thresholds, smoke_check.main, smoke_check.parse_log
PROBS_GAP = "training/rollout_probs_diff_mean"
NAN = float("nan")


def check(*args: str | Path) -> int:
    return main(["--thresholds", str(THRESHOLDS), *map(str, args)])


@pytest.fixture
def logs(tmp_path):
    """Write a run's console log, file log or both; returns the paths."""

    def write(steps: dict[int, dict], kinds: tuple[str, ...] = ("console",), total: int | None = None) -> list[Path]:
        writers = {"console": lambda p: console_log(p, steps, total), "file": lambda p: file_log(p, steps)}
        return [writers[kind](tmp_path / f"run-{kind}.log") for kind in kinds]

    return write


def test_verls_console_and_file_lines_are_parsed(logs):
    console, file = logs(HEALTHY, ("console", "file"))
    run = parse_log(console.read_text())
    assert run.totals == {2}  # `INFO:<time>:Total training steps: 2` after the Ray prefix
    assert run.metrics[1]["actor/pg_loss"] == -0.0031 and run.metrics[2]["actor/grad_norm"] == 0.3906  # np.float64
    assert parse_log(file.read_text()).metrics == parse_log(console.read_text()).metrics


@pytest.mark.parametrize(
    ("kinds", "args"),
    [(("console",), ()), (("console", "file"), ()), (("file",), ("--steps", "2"))],
    ids=["console", "both", "file"],
)
@pytest.mark.parametrize("steps", [HEALTHY, {**VALIDATION, **HEALTHY}], ids=["train", "validates at step 0"])
def test_a_healthy_run_passes(logs, capsys, kinds, args, steps):
    assert check(*args, *logs(steps, kinds)) == 0
    assert "every check holds" in capsys.readouterr().out


def test_the_integer_mask_symptoms_fail(logs, capsys):
    assert check(*logs(INT_MASK)) == 1
    out = capsys.readouterr().out
    assert f"FAILED: rollout/actor probability gap ({PROBS_GAP}): step 1: 0.6412 > max 0.2" in out
    assert "(rollout_corr/training_log_ppl): step 1: 21.37 > max 5" in out
    assert "FAILED: gradient norm (actor/grad_norm): step 1: 571.3 > max 100" in out
    assert "response length" not in out.split("FAILED", 1)[1]  # unchanged in 2 steps: not what catches it


NULL_LOSSES = {"actor/pg_loss": NAN, "actor/kl_loss": NAN, "critic/score/mean": NAN}


@pytest.mark.parametrize("kinds", [("file",), ("console",), ("console", "file")])
def test_a_step_with_null_losses_fails(logs, capsys, kinds):
    assert check("--steps", "2", *logs(edited(HEALTHY, NULL_LOSSES), kinds)) == 1
    out = capsys.readouterr().out
    for rule, metric in [("policy loss", "actor/pg_loss"), ("KL loss", "actor/kl_loss"), ("reward score", "critic")]:
        assert re.search(rf"FAILED: {rule} \({metric}[^)]*\): step 2: nan \(null or not a finite number\)", out)


def test_a_step_whose_metrics_are_all_null_fails(logs, capsys):
    assert check("--steps", "2", *logs(edited(HEALTHY, dict.fromkeys(HEALTHY[2], NAN)), ("file",))) == 1
    out = capsys.readouterr().out
    assert f"FAILED: step 2: all {len(HEALTHY[2])} metrics are null or not finite numbers" in out


@pytest.mark.parametrize("at", [(2,), (1, 2)], ids=["at one step", "never"])
@pytest.mark.parametrize("metric", [PROBS_GAP, "actor/kl_loss"])
def test_a_required_metric_not_logged_fails(logs, capsys, at, metric):
    assert check(*logs(edited(HEALTHY, {metric: None}, at))) == 1
    out = capsys.readouterr().out
    assert f"({metric}): not logged at step(s) 2" in out if at == (2,) else f"none of {metric} logged" in out


def test_an_empty_file_log_beside_a_good_console_log_fails(logs, capsys, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert check(*logs(HEALTHY), empty) == 1
    assert f"FAILED: {empty} logs no step: its logger wrote nothing" in capsys.readouterr().out


def test_a_run_that_stopped_before_its_last_step_fails(logs, capsys):
    assert check(*logs({1: HEALTHY[1]})) == 1
    assert "FAILED: step(s) 2 not logged: the run stopped early" in capsys.readouterr().out


def test_the_step_count_is_the_runs_own(logs, capsys):
    """A manual run with smoke_steps=1 logs one step and says so; asking for another count is a failure."""
    (log,) = logs({1: HEALTHY[1]}, total=1)
    assert check(log) == 0 and check("--steps", "1", log) == 0
    capsys.readouterr()
    assert check("--steps", "2", log) == 1
    assert "FAILED: the run's total_training_steps is 1, but 2 were asked for" in capsys.readouterr().out


def test_an_unknown_step_count_is_an_input_error(logs, capsys):
    assert check(*logs(HEALTHY, ("file",))) == 2
    assert "total_training_steps is unknown: give its console log" in capsys.readouterr().err


def test_unreadable_input_is_named(tmp_path, capsys):
    assert check(tmp_path / "missing.log") == 2
    assert "missing.log" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[rule]]\nname = 'x'\nmetrics = ['a']\nmaximum = 3\n", "unknown keys ['maximum']"),
        ("[[rule]]\nname = 'x'\nmetrics = ['a']\n", "sets no bound (min, max, max_abs) and not finite = true"),
        ("[[rule]]\nname = 'x'\nmetrics = ['a']\nfinite = 1\n", "required and finite are true or false"),
        ("[[rule]]\nname = 'x'\nmetrics = []\nmax = 1\n", "non-empty list of metrics"),
        ("[[rule]]\nname = 'x'\nmetrics = ['a']\nmax = 'high'\n", "bounds must be numbers"),
        ("min_steps = 2\n", "unknown keys ['min_steps'] (known: rule; the number of steps is the run's own"),
    ],
)
def test_bad_thresholds_are_named(tmp_path, logs, capsys, text, message):
    path = tmp_path / "t.toml"
    path.write_text(text)
    assert main(["--thresholds", str(path), *map(str, logs(HEALTHY))]) == 2
    assert message in capsys.readouterr().err


def test_the_project_thresholds_bound_the_integer_mask_metrics_and_only_require_finite_losses():
    rules = {rule.metrics[0]: rule for rule in load_thresholds(THRESHOLDS)}
    assert all(rule.required for rule in rules.values())
    assert rules[PROBS_GAP].max is not None and rules["rollout_corr/training_log_ppl"].max is not None
    assert all(rules[m].finite and rules[m].max_abs is None for m in ("actor/pg_loss", "actor/kl_loss"))


NIGHTLY_PATCHES = sorted(ROOT.glob("patches/*/*nightly-ascend*smoke*.patch"))
assert NIGHTLY_PATCHES, "no queue holds the nightly Ascend smoke patch: update the glob"


@pytest.mark.parametrize("patch", NIGHTLY_PATCHES, ids=lambda p: p.parent.name)
def test_the_nightly_jobs_checker_in_verl_has_the_same_upper_bounds(patch):
    """The series' nightly Ascend job checks its run with a copy of two of these bounds, in verl's tree."""
    line = next(line for line in patch.read_text(encoding="utf-8").splitlines() if line.startswith("+MAX = {"))
    in_verl = ast.literal_eval(line.removeprefix("+MAX = "))
    here = {metric: rule.max for rule in load_thresholds(THRESHOLDS) for metric in rule.metrics if metric in in_verl}
    assert in_verl == here
