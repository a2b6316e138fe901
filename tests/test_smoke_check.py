"""The NPU smoke run's metric check (smoke_check.py) with the project's thresholds (ci/smoke-thresholds.toml), on
synthetic logs in the formats of verl's console and file loggers (tests/data/smoke; none is recorded from a run):
one test per kind of failure it exists for."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from verl_patches.smoke_check import load_thresholds, main, parse_log

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "smoke"
THRESHOLDS = ROOT / "ci" / "smoke-thresholds.toml"
GOOD_CONSOLE = DATA / "synthetic-good-console.log"
GOOD_FILE = DATA / "synthetic-good-file.jsonl"
PROBS_GAP = "training/rollout_probs_diff_mean"


def check(*args: str | Path) -> int:
    return main(["--thresholds", str(THRESHOLDS), *map(str, args)])


def edited(tmp_path: Path, source: Path, old: str, new: str) -> Path:
    text = source.read_text()
    assert old in text
    path = tmp_path / source.name
    path.write_text(text.replace(old, new))
    return path


def test_console_lines_with_ray_prefixes_numpy_values_and_the_step_count_are_parsed():
    run = parse_log(GOOD_CONSOLE.read_text())
    assert sorted(run.metrics) == [1, 2] and run.totals == {2}
    assert run.metrics[1]["actor/pg_loss"] == -0.0031
    assert run.metrics[2]["actor/grad_norm"] == 0.3906
    assert run.metrics[1]["actor/lr"] == 1e-06


def test_null_in_the_file_log_is_read_as_not_a_number():
    run = parse_log((DATA / "synthetic-null-step-file.jsonl").read_text())
    assert run.metrics[1][PROBS_GAP] == 0.0104
    assert math.isnan(run.metrics[2][PROBS_GAP])


@pytest.mark.parametrize(
    "logs", [[GOOD_CONSOLE], [GOOD_CONSOLE, GOOD_FILE], ["--steps", "2", GOOD_FILE]], ids=["console", "both", "file"]
)
def test_a_healthy_run_passes(logs, capsys):
    assert check(*logs) == 0
    assert "every check holds" in capsys.readouterr().out


def test_the_integer_mask_symptoms_fail(capsys):
    assert check(DATA / "synthetic-int-mask-console.log") == 1
    out = capsys.readouterr().out
    assert f"FAILED: rollout/actor probability gap ({PROBS_GAP}): step 1: 0.6412 > max 0.2" in out
    assert "(rollout_corr/training_log_ppl): step 1: 21.37 > max 5" in out
    assert "FAILED: gradient norm (actor/grad_norm): step 1: 571.3 > max 100" in out
    assert "response length" not in out.split("FAILED", 1)[1]  # unchanged in 2 steps: not what catches it


@pytest.mark.parametrize("logs", [["--steps", "2"], [GOOD_CONSOLE]], ids=["file alone", "with the console log"])
def test_a_step_whose_metrics_are_all_null_fails(logs, capsys):
    assert check(*logs, DATA / "synthetic-null-step-file.jsonl") == 1
    out = capsys.readouterr().out
    assert "FAILED: step 2: all 6 metrics are null or not finite numbers" in out
    assert f"({PROBS_GAP}): step 2: nan (null or not a finite number)" in out


def test_nan_on_the_console_fails(tmp_path, capsys):
    log = edited(tmp_path, GOOD_CONSOLE, "actor/grad_norm:np.float64(0.3906)", "actor/grad_norm:np.float64(nan)")
    assert check(log) == 1
    out = capsys.readouterr().out
    assert "FAILED: gradient norm (actor/grad_norm): step 2: nan (null or not a finite number)" in out


def test_a_required_metric_missing_at_one_step_fails(tmp_path, capsys):
    lines = [json.loads(line) for line in GOOD_FILE.read_text().splitlines()]
    del lines[1]["data"][PROBS_GAP]
    log = tmp_path / "file.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert check("--steps", "2", log) == 1
    assert f"FAILED: rollout/actor probability gap ({PROBS_GAP}): not logged at step(s) 2" in capsys.readouterr().out


def test_a_renamed_required_metric_fails(tmp_path, capsys):
    log = edited(tmp_path, GOOD_CONSOLE, "rollout_corr/training_log_ppl", "rollout_corr/log_ppl")
    assert check(log) == 1
    assert "FAILED: per-token NLL of the rollout tokens under the actor: none of" in capsys.readouterr().out


def test_a_run_that_stopped_before_its_last_step_fails(capsys):
    assert check(DATA / "synthetic-crashed-console.log") == 1
    assert "FAILED: step(s) 2 not logged: the run stopped early" in capsys.readouterr().out


def test_the_step_count_is_the_runs_own(tmp_path, capsys):
    """A manual run with smoke_steps=1 logs one step and says so; asking for another count is a failure."""
    text = GOOD_CONSOLE.read_text().replace("Total training steps: 2", "Total training steps: 1")
    log = tmp_path / "one-step-console.log"
    log.write_text("\n".join(line for line in text.splitlines() if "step:2 " not in line) + "\n")
    assert check(log) == 0
    assert check("--steps", "1", log) == 0
    capsys.readouterr()
    assert check("--steps", "2", log) == 1
    assert "FAILED: the run's total_training_steps is 1, but 2 were asked for" in capsys.readouterr().out


def test_an_unknown_step_count_is_an_input_error(capsys):
    assert check(GOOD_FILE) == 2
    assert "total_training_steps is unknown: give its console log" in capsys.readouterr().err


def test_unreadable_input_is_named(tmp_path, capsys):
    assert check(tmp_path / "missing.log") == 2
    assert "missing.log" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[rule]]\nname = 'x'\nmetrics = ['a']\nmaximum = 3\n", "unknown keys ['maximum']"),
        ("[[rule]]\nname = 'x'\nmetrics = ['a']\n", "sets no bound"),
        ("[[rule]]\nname = 'x'\nmetrics = []\nmax = 1\n", "non-empty list of metrics"),
        ("[[rule]]\nname = 'x'\nmetrics = ['a']\nmax = 'high'\n", "bounds must be numbers"),
        ("min_steps = 2\n", "unknown keys ['min_steps'] (known: rule; the number of steps is the run's own"),
    ],
)
def test_bad_thresholds_are_named(tmp_path, capsys, text, message):
    path = tmp_path / "t.toml"
    path.write_text(text)
    assert main(["--thresholds", str(path), str(GOOD_CONSOLE)]) == 2
    assert message in capsys.readouterr().err


def test_the_project_thresholds_require_the_integer_mask_rules_and_no_policy_loss_bound():
    rules = {rule.metrics: rule for rule in load_thresholds(THRESHOLDS)}
    assert rules[(PROBS_GAP,)].required and rules[("rollout_corr/training_log_ppl",)].required
    assert all(rule.required for rule in rules.values())
    assert not any("actor/pg_loss" in metrics for metrics in rules)
