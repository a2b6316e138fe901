# Copyright 2026 verl-patches contributors
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""Logs of a training run written the way verl 0.9.1 writes them, from per-step metrics.

- console: `verl.utils.logger.aggregate_logger.concat_dict_to_str` (`step:N - key:pprint.pformat(value) - ...`,
  numbers only, so numpy scalars print as `np.float64(x)`), and the v1 trainer's `Total training steps: N` through
  `logging.basicConfig(format="%(levelname)s:%(asctime)s:%(message)s")` (verl/utils/logging_utils.py); every line
  after the `(TaskRunnerV1 pid=N) ` prefix Ray's log_to_driver adds;
- file: `verl.utils.tracking.FileLogger` (`orjson.dumps({"step": N, "data": {...}}, OPT_SERIALIZE_NUMPY)`, which
  writes NaN and Inf as null).

The metric values are synthetic: no smoke run has been recorded yet.
"""

from __future__ import annotations

import logging
import numbers
import pprint
from pathlib import Path

import numpy as np
import orjson

RAY_PREFIX = "(TaskRunnerV1 pid=4242) "
VERL_LOG_FORMAT = "%(levelname)s:%(asctime)s:%(message)s"

# Two healthy steps of the smoke run's GRPO + KL-loss configuration; loss and grad norm are numpy scalars, as verl
# reduces them.
HEALTHY = {
    1: {
        "actor/entropy": 0.6127, "actor/pg_loss": np.float64(-0.0031), "actor/kl_loss": 0.0,
        "actor/grad_norm": np.float64(0.4172), "actor/lr": 1e-06, "critic/score/mean": 0.3125,
        "training/rollout_probs_diff_valid": 1, "training/rollout_probs_diff_mean": 0.0104,
        "rollout_corr/training_log_ppl": 0.4411, "response_length/mean": 187.25, "timing_s/step": 96.7,
    },
    2: {
        "actor/entropy": 0.6051, "actor/pg_loss": np.float64(0.0118), "actor/kl_loss": 0.0009,
        "actor/grad_norm": np.float64(0.3906), "actor/lr": 1e-06, "critic/score/mean": 0.375,
        "training/rollout_probs_diff_valid": 1, "training/rollout_probs_diff_mean": 0.0098,
        "rollout_corr/training_log_ppl": 0.4302, "response_length/mean": 176.5, "timing_s/step": 91.3,
    },
}  # fmt: skip
# The symptoms MindSpeed-Bridge#41 reports for an integer attention mask used as an index: a loss of about 21.4
# and a grad norm of about 571 from the first step. The probability gap of 0.64 is an estimate for an actor that
# scores the rollout's tokens as noise, not a measurement.
INT_MASK = {
    step: {
        **row,
        "actor/entropy": 7.93,
        "actor/grad_norm": np.float64(571.3),
        "training/rollout_probs_diff_mean": 0.6412,
        "rollout_corr/training_log_ppl": 21.37,
    }
    for step, row in HEALTHY.items()
}
VALIDATION = {0: {"val-core/openai/gsm8k/acc/mean@1": 0.31}}  # trainer.val_before_train logs step 0


def console_log(path: Path, steps: dict[int, dict], total: int | None = None) -> Path:
    record = logging.makeLogRecord({"levelname": "INFO", "msg": f"Total training steps: {total or len(HEALTHY)}"})
    lines = [logging.Formatter(VERL_LOG_FORMAT).format(record)]
    for step, data in steps.items():
        values = [f"{key}:{pprint.pformat(value)}" for key, value in data.items() if isinstance(value, numbers.Number)]
        lines.append(" - ".join([f"step:{step}", *values]))
    path.write_text("".join(RAY_PREFIX + line + "\n" for line in lines))
    return path


def file_log(path: Path, steps: dict[int, dict]) -> Path:
    with path.open("wb") as fp:
        for step, data in steps.items():
            fp.write(orjson.dumps({"step": step, "data": data}, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n")
    return path


def edited(steps: dict[int, dict], values: dict[str, float | None], at: tuple[int, ...] = (2,)) -> dict[int, dict]:
    """The run with the given metrics replaced at the given steps; None drops a metric there."""
    rows = {step: dict(row) for step, row in steps.items()}
    for step in at:
        for key, value in values.items():
            rows[step].pop(key, None)
            if value is not None:
                rows[step][key] = value
    return rows
