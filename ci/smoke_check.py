"""Check the metrics of a training run (verl's console and file loggers) against thresholds kept in a TOML file.

Usage: .venv/bin/python ci/smoke_check.py --thresholds ci/smoke-thresholds.toml [--steps N] LOG [LOG...]

The run must have logged every step 1..N, N being its total_training_steps (its console line `Total training
steps: N`, else --steps); every required rule's metric at every step; a rule's metric only as a finite number
(verl's file logger writes NaN and Inf as null); no step whose metrics are all null; some step in every log given.
Exit status: 0 when every check holds, 1 when one fails, 2 when a log or the thresholds cannot be read or the
number of steps is unknown.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from verl_patches.checkout import tomllib  # the package's tomllib (tomli on Python 3.10)

# verl's console logger prints `step:N - key:value - key:value` (values through pprint.pformat), possibly after a
# Ray actor prefix such as `(TaskRunnerV1 pid=12) `; its trainer says `Total training steps: N` before step 1,
# printed (ray_trainer.py) or through logging's `LEVEL:time:message` format (v1/trainer_base.py).
_CONSOLE = re.compile(r"(?:^|\s)step:(\d+)((?: - [^\s:]+:\S+)+)\s*$")
_TOTAL = re.compile(r"(?:^|[\s:])Total training steps: (\d+)\s*$")
_NUMBER = re.compile(r"^(?:np\.\w+\((.*)\)|(.*))$")
_BOUNDS = ("min", "max", "max_abs")
_RULE_KEYS = {"name", "metrics", "required", "finite", "why", *_BOUNDS}


class InputError(Exception):
    """A log or a thresholds file that cannot be read, or a run whose number of steps is unknown."""


@dataclass
class Run:
    """What the logs of one run say: metrics by step (NaN for null or unreadable values), the total steps, and the
    steps that one log gave as nothing but null (step -> how many metrics)."""

    metrics: dict[int, dict[str, float]] = field(default_factory=dict)
    totals: set[int] = field(default_factory=set)
    all_null: dict[int, int] = field(default_factory=dict)

    def add(self, step: int, key: str, value: float) -> None:
        row = self.metrics.setdefault(step, {})
        # Two logs of one run: a value that one of them could not give as a finite number stays so.
        if math.isfinite(row.get(key, 0.0)):
            row[key] = value

    def merge(self, other: Run) -> None:
        for step, row in other.metrics.items():
            for key, value in row.items():
                self.add(step, key, value)
        self.totals |= other.totals
        for step, count in other.all_null.items():
            self.all_null[step] = max(count, self.all_null.get(step, 0))


@dataclass(frozen=True)
class Rule:
    name: str
    metrics: tuple[str, ...]
    required: bool = False
    finite: bool = False  # only a finite number, with no bound (every rule checks that)
    min: float | None = None
    max: float | None = None
    max_abs: float | None = None
    why: str = ""

    def check(self, series: list[tuple[int, float]]) -> list[str]:
        """Broken bounds of one metric's (step, value) series, in step order."""
        problems = []
        for step, value in series:
            if not math.isfinite(value):
                problems.append(f"step {step}: {value} (null or not a finite number)")
            elif self.min is not None and value < self.min:
                problems.append(f"step {step}: {value:g} < min {self.min:g}")
            elif self.max is not None and value > self.max:
                problems.append(f"step {step}: {value:g} > max {self.max:g}")
            elif self.max_abs is not None and abs(value) > self.max_abs:
                problems.append(f"step {step}: |{value:g}| > max_abs {self.max_abs:g}")
        return problems

    def describe(self) -> str:
        shown = ", ".join(f"{k} {getattr(self, k):g}" for k in _BOUNDS if getattr(self, k) is not None) or "finite"
        return f"{self.name}: {' | '.join(self.metrics)}: {shown}{' (required)' if self.required else ''}"


def load_thresholds(path: Path) -> tuple[Rule, ...]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"{path}: {exc}") from exc
    unknown = set(data) - {"rule"}
    if unknown:
        raise InputError(
            f"{path}: unknown keys {sorted(unknown)} (known: rule; the number of steps is the run's own "
            "total_training_steps)"
        )
    rules = []
    for i, raw in enumerate(data.get("rule", [])):
        where = f"{path}: rule {i + 1}"
        unknown = set(raw) - _RULE_KEYS
        if unknown:
            raise InputError(f"{where}: unknown keys {sorted(unknown)} (known: {sorted(_RULE_KEYS)})")
        metrics = raw.get("metrics")
        if not raw.get("name") or not isinstance(metrics, list) or not metrics:
            raise InputError(f"{where}: needs a name and a non-empty list of metrics")
        bounds = {k: raw[k] for k in _BOUNDS if k in raw}
        flags = {k: raw.get(k, False) for k in ("required", "finite")}
        if any(not isinstance(v, bool) for v in flags.values()):
            raise InputError(f"{where} ({raw['name']}): required and finite are true or false")
        if not bounds and not flags["finite"]:
            raise InputError(f"{where} ({raw['name']}): sets no bound ({', '.join(_BOUNDS)}) and not finite = true")
        if any(not isinstance(v, int | float) or isinstance(v, bool) for v in bounds.values()):
            raise InputError(f"{where} ({raw['name']}): bounds must be numbers")
        rules.append(
            Rule(
                name=raw["name"],
                metrics=tuple(metrics),
                required=flags["required"],
                finite=flags["finite"],
                why=raw.get("why", ""),
                **{k: float(v) for k, v in bounds.items()},
            )
        )
    return tuple(rules)


def _console_value(text: str) -> float:
    match = _NUMBER.match(text.strip())
    assert match is not None  # the pattern's second branch matches any line
    raw = (match.group(1) if match.group(1) is not None else match.group(2)).strip()
    try:
        return float(raw)
    except ValueError:
        return math.nan  # the console logger prints numbers only: what is not one cannot be checked


def parse_log(text: str) -> Run:
    """Metrics by step from verl's console lines and its file logger's JSON lines ({"step": N, "data": {..}})."""
    run = Run()
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            step, data = (record.get("step"), record.get("data")) if isinstance(record, dict) else (None, None)
            if isinstance(step, int) and isinstance(data, dict):
                run.metrics.setdefault(step, {})
                for key, value in data.items():
                    if value is None:  # orjson writes NaN and Inf as null
                        run.add(step, key, math.nan)
                    elif isinstance(value, int | float) and not isinstance(value, bool):
                        run.add(step, key, float(value))
            continue
        total = _TOTAL.search(line)
        if total:
            run.totals.add(int(total.group(1)))
            continue
        match = _CONSOLE.search(line)
        if match:
            step = int(match.group(1))
            run.metrics.setdefault(step, {})
            for part in match.group(2).split(" - ")[1:]:
                key, _, raw = part.partition(":")
                if raw not in ("True", "False"):
                    run.add(step, key, _console_value(raw))
    for step, row in run.metrics.items():
        if row and not any(math.isfinite(v) for v in row.values()):
            run.all_null[step] = len(row)
    return run


def expected_steps(run: Run, steps: int | None) -> tuple[int, list[str]]:
    """The number of steps the run must have logged, and the failures of disagreeing counts."""
    if len(run.totals) > 1:
        return max(run.totals), [f"the logs name different total_training_steps: {sorted(run.totals)}"]
    if run.totals:
        (total,) = run.totals
        wrong = steps is not None and steps != total
        return total, [f"the run's total_training_steps is {total}, but {steps} were asked for"] if wrong else []
    if steps is None:
        raise InputError(
            "the run's total_training_steps is unknown: give its console log (the line 'Total training steps: N') "
            "or --steps"
        )
    return steps, []


def evaluate(run: Run, rules: tuple[Rule, ...], steps: int | None = None) -> tuple[list[str], list[str]]:
    """(report lines, failures)."""
    total, failures = expected_steps(run, steps)
    logged = sorted(s for s, row in run.metrics.items() if row)
    report = [f"{len(logged)} step(s) with metrics ({', '.join(map(str, logged)) or 'none'}); the run has {total}"]
    missing = [s for s in range(1, total + 1) if s not in logged]
    if missing:
        failures.append(f"step(s) {', '.join(map(str, missing))} not logged: the run stopped early or its logger broke")
    for step, count in sorted(run.all_null.items()):
        failures.append(f"step {step}: all {count} metrics are null or not finite numbers")
    for rule in rules:
        name = next((m for m in rule.metrics if any(m in run.metrics[s] for s in logged)), None)
        if name is None:
            line = f"{rule.name}: none of {', '.join(rule.metrics)} logged"
            if rule.required:
                failures.append(line)
            report.append(line + ("" if rule.required else " (optional)"))
            continue
        series = [(s, run.metrics[s][name]) for s in logged if name in run.metrics[s]]
        problems = rule.check(series)
        absent = [s for s in range(1, total + 1) if s in logged and name not in run.metrics[s]]
        if rule.required and absent:
            problems.append(f"not logged at step(s) {', '.join(map(str, absent))}")
        values = ", ".join(f"{v:g}" for _, v in series)
        report.append(f"{rule.name}: {name} = {values}: {'BROKEN' if problems else 'ok'}")
        failures += [f"{rule.name} ({name}): {p}" + (f" -- {rule.why}" if rule.why else "") for p in problems]
    return report, failures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=".venv/bin/python ci/smoke_check.py", description=__doc__.splitlines()[0])
    p.add_argument("--thresholds", required=True, type=Path, help="TOML file of rules")
    p.add_argument(
        "--steps", type=int, help="the run's total_training_steps, when its console log does not say (must agree)"
    )
    p.add_argument("--show-rules", action="store_true", help="print the rules and exit")
    p.add_argument("logs", nargs="*", type=Path, help="console output and/or file-logger JSONL of the run")
    args = p.parse_args(argv)
    try:
        if args.steps is not None and args.steps < 1:
            raise InputError(f"--steps must be a positive number of steps, not {args.steps}")
        rules = load_thresholds(args.thresholds)
        if args.show_rules:
            print("\n".join(rule.describe() for rule in rules))
            return 0
        if not args.logs:
            raise InputError("no log given")
        run, empty = Run(), []
        for path in args.logs:
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                raise InputError(f"{path}: {exc}") from exc
            one = parse_log(text)
            if not one.metrics:
                empty.append(f"{path} logs no step: its logger wrote nothing or the run never reached step 1")
            run.merge(one)
        report, failures = evaluate(run, rules, args.steps)
        failures = empty + failures
    except InputError as exc:
        print(f"smoke_check: error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(report))
    for failure in failures:
        print(f"FAILED: {failure}")
    print("smoke metrics: " + (f"{len(failures)} problem(s)" if failures else "every check holds"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
