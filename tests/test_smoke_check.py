"""The NPU smoke run's metric checker on recorded good and bad logs (tests/data/smoke), with the project's
thresholds (ci/smoke-thresholds.toml)."""

from __future__ import annotations

from pathlib import Path

import pytest

from verl_patches.smoke_check import load_thresholds, main, parse_log

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "smoke"
THRESHOLDS = ROOT / "ci" / "smoke-thresholds.toml"


def check(*logs: str) -> int:
    return main(["--thresholds", str(THRESHOLDS), *(str(DATA / log) for log in logs)])


def test_console_lines_with_ray_prefixes_and_numpy_values_are_parsed():
    metrics = parse_log((DATA / "good-console.log").read_text())
    assert sorted(metrics) == [1, 2]
    assert metrics[1]["actor/pg_loss"] == -0.0031
    assert metrics[2]["actor/grad_norm"] == 0.3906
    assert metrics[1]["actor/lr"] == 1e-06
    assert metrics[2]["response_length/mean"] == 176.5


def test_file_logger_records_are_parsed():
    metrics = parse_log((DATA / "good-file.jsonl").read_text())
    assert metrics[2]["rollout_corr/training_log_ppl"] == 0.4302


@pytest.mark.parametrize("log", ["good-console.log", "good-file.jsonl"])
def test_good_runs_pass(log, capsys):
    assert check(log) == 0
    assert "every rule holds" in capsys.readouterr().out


def test_the_mindspeed_bridge_41_symptoms_fail(capsys):
    assert check("bad-console.log") == 1
    out = capsys.readouterr().out
    assert "FAILED: gradient norm (actor/grad_norm): step 1: 571.3 > max 100" in out
    assert "FAILED: policy loss (actor/pg_loss): step 2: |21.37| > max_abs 5" in out
    assert "FAILED: response length (response_length/mean): step 2: 3.5 < min 8" in out
    assert "rollout/actor probability gap" in out and "0.7033 > max 0.2" in out


def test_a_collapsing_response_length_fails_even_above_the_minimum(capsys):
    assert check("collapse-file.jsonl") == 1
    out = capsys.readouterr().out
    assert "step 2: 61 < 0.5 x step 1's 187.25" in out
    assert out.count("FAILED") == 1


def test_a_loss_of_21_fails(capsys):
    assert check("nll-file.jsonl") == 1
    out = capsys.readouterr().out
    assert "rollout_corr/training_log_ppl): step 1: 21.37 > max 5" in out


def test_a_run_that_logged_too_few_steps_fails(capsys):
    assert check("one-step-console.log") == 1
    assert "1 step(s) logged, at least 2 expected" in capsys.readouterr().out


def test_a_log_without_the_required_metrics_fails(tmp_path, capsys):
    log = tmp_path / "other.log"
    log.write_text("step:1 - timing_s/step:1.0\nstep:2 - timing_s/step:1.0\n")
    assert main(["--thresholds", str(THRESHOLDS), str(log)]) == 1
    assert "FAILED: gradient norm: none of actor/grad_norm logged" in capsys.readouterr().out


def test_nan_fails(tmp_path, capsys):
    log = tmp_path / "nan.log"
    text = (DATA / "good-console.log").read_text().replace("actor/pg_loss:np.float64(0.0118)", "actor/pg_loss:nan")
    log.write_text(text)
    assert main(["--thresholds", str(THRESHOLDS), str(log)]) == 1
    assert "policy loss (actor/pg_loss): step 2: nan" in capsys.readouterr().out


def test_console_and_file_logs_of_one_run_merge(capsys):
    assert check("good-console.log", "good-file.jsonl") == 0
    out = capsys.readouterr().out
    assert "rollout_corr/training_log_ppl = 0.4411, 0.4302: ok" in out


def test_unreadable_input_is_named(tmp_path, capsys):
    assert main(["--thresholds", str(THRESHOLDS), str(tmp_path / "missing.log")]) == 2
    assert "missing.log" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[rule]]\nname = 'x'\nmetrics = ['a']\nmaximum = 3\n", "unknown keys ['maximum']"),
        ("[[rule]]\nname = 'x'\nmetrics = ['a']\n", "sets no bound"),
        ("[[rule]]\nname = 'x'\nmetrics = []\nmax = 1\n", "non-empty list of metrics"),
        ("[[rule]]\nname = 'x'\nmetrics = ['a']\nmax = 'high'\n", "bounds must be numbers"),
        ("min_step = 2\n", "unknown keys ['min_step']"),
        ("min_steps = 0\n", "min_steps must be a positive integer"),
    ],
)
def test_bad_thresholds_are_named(tmp_path, capsys, text, message):
    path = tmp_path / "t.toml"
    path.write_text(text)
    assert main(["--thresholds", str(path), str(DATA / "good-file.jsonl")]) == 2
    assert message in capsys.readouterr().err


def test_the_project_thresholds_load():
    thresholds = load_thresholds(THRESHOLDS)
    assert thresholds.min_steps == 2
    assert {r.name for r in thresholds.rules if r.required} == {"response length", "gradient norm", "policy loss"}
