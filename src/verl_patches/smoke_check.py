"""Check the metrics of a training run (verl's console or file logger) against thresholds kept in a TOML file.

Usage: python -m verl_patches.smoke_check --thresholds ci/smoke-thresholds.toml LOG [LOG...]
Exit status: 0 when every rule holds, 1 when one is broken, 2 when a log or the thresholds cannot be read.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

# verl's console logger prints `step:N - key:value - key:value` (values through pprint.pformat), possibly after a
# Ray actor prefix such as `(TaskRunner pid=12) `.
_CONSOLE = re.compile(r"(?:^|\s)step:(\d+)((?: - [^\s:]+:\S+)+)\s*$")
_NUMBER = re.compile(r"^(?:np\.\w+\((.*)\)|(.*))$")

Metrics = dict[int, dict[str, float]]


class InputError(Exception):
    """A log or a thresholds file that cannot be read."""


@dataclass(frozen=True)
class Rule:
    name: str
    metrics: tuple[str, ...]
    required: bool = False
    min: float | None = None
    max: float | None = None
    max_abs: float | None = None
    min_ratio_to_first: float | None = None
    why: str = ""

    def check(self, series: list[tuple[int, float]]) -> list[str]:
        """Broken bounds of one metric's (step, value) series, in step order."""
        problems = []
        for step, value in series:
            if not math.isfinite(value):
                problems.append(f"step {step}: {value}")
            elif self.min is not None and value < self.min:
                problems.append(f"step {step}: {value:g} < min {self.min:g}")
            elif self.max is not None and value > self.max:
                problems.append(f"step {step}: {value:g} > max {self.max:g}")
            elif self.max_abs is not None and abs(value) > self.max_abs:
                problems.append(f"step {step}: |{value:g}| > max_abs {self.max_abs:g}")
        if self.min_ratio_to_first is not None and len(series) > 1:
            (first_step, first), (last_step, last) = series[0], series[-1]
            if math.isfinite(first) and first > 0 and math.isfinite(last) and last < first * self.min_ratio_to_first:
                problems.append(
                    f"step {last_step}: {last:g} < {self.min_ratio_to_first:g} x step {first_step}'s {first:g}"
                )
        return problems


@dataclass(frozen=True)
class Thresholds:
    min_steps: int
    rules: tuple[Rule, ...]


_RULE_KEYS = {"name", "metrics", "required", "min", "max", "max_abs", "min_ratio_to_first", "why"}


def load_thresholds(path: Path) -> Thresholds:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"{path}: {exc}") from exc
    unknown = set(data) - {"min_steps", "rule"}
    if unknown:
        raise InputError(f"{path}: unknown keys {sorted(unknown)} (known: min_steps, rule)")
    rules = []
    for i, raw in enumerate(data.get("rule", [])):
        where = f"{path}: rule {i + 1}"
        unknown = set(raw) - _RULE_KEYS
        if unknown:
            raise InputError(f"{where}: unknown keys {sorted(unknown)} (known: {sorted(_RULE_KEYS)})")
        metrics = raw.get("metrics")
        if not raw.get("name") or not isinstance(metrics, list) or not metrics:
            raise InputError(f"{where}: needs a name and a non-empty list of metrics")
        bounds = {k: raw[k] for k in ("min", "max", "max_abs", "min_ratio_to_first") if k in raw}
        if not bounds:
            raise InputError(f"{where} ({raw['name']}): sets no bound (min, max, max_abs, min_ratio_to_first)")
        if any(not isinstance(v, int | float) or isinstance(v, bool) for v in bounds.values()):
            raise InputError(f"{where} ({raw['name']}): bounds must be numbers")
        rules.append(
            Rule(
                name=raw["name"],
                metrics=tuple(metrics),
                required=bool(raw.get("required", False)),
                why=raw.get("why", ""),
                **{k: float(v) for k, v in bounds.items()},
            )
        )
    min_steps = data.get("min_steps", 1)
    if not isinstance(min_steps, int) or min_steps < 1:
        raise InputError(f"{path}: min_steps must be a positive integer")
    return Thresholds(min_steps, tuple(rules))


def _value(text: str) -> float | None:
    match = _NUMBER.match(text.strip())
    raw = (match.group(1) if match.group(1) is not None else match.group(2)).strip()
    try:
        return float(raw)
    except ValueError:
        return None


def parse_log(text: str) -> Metrics:
    """Metrics by step from verl's console lines and/or its file logger's JSON lines ({"step": N, "data": {..}})."""
    metrics: Metrics = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(record, dict):
                continue
            if isinstance(record.get("step"), int) and isinstance(record.get("data"), dict):
                row = metrics.setdefault(record["step"], {})
                for key, value in record["data"].items():
                    if isinstance(value, int | float) and not isinstance(value, bool):
                        row[key] = float(value)
            continue
        match = _CONSOLE.search(line)
        if match:
            row = metrics.setdefault(int(match.group(1)), {})
            for part in match.group(2).split(" - ")[1:]:
                key, _, raw = part.partition(":")
                value = _value(raw)
                if value is not None:
                    row[key] = value
    return metrics


def evaluate(metrics: Metrics, thresholds: Thresholds) -> tuple[list[str], list[str]]:
    """(report lines, failures)."""
    report, failures = [], []
    steps = sorted(metrics)
    report.append(f"{len(steps)} step(s) with metrics: {steps[0]}..{steps[-1]}" if steps else "no metrics found")
    if len(steps) < thresholds.min_steps:
        failures.append(f"{len(steps)} step(s) logged, at least {thresholds.min_steps} expected")
    for rule in thresholds.rules:
        name = next((m for m in rule.metrics if any(m in metrics[s] for s in steps)), None)
        if name is None:
            line = f"{rule.name}: none of {', '.join(rule.metrics)} logged"
            if rule.required:
                failures.append(line)
            report.append(line + ("" if rule.required else " (optional)"))
            continue
        series = [(s, metrics[s][name]) for s in steps if name in metrics[s]]
        values = ", ".join(f"{v:g}" for _, v in series)
        problems = rule.check(series)
        report.append(f"{rule.name}: {name} = {values}: {'BROKEN' if problems else 'ok'}")
        failures += [f"{rule.name} ({name}): {p}" + (f" -- {rule.why}" if rule.why else "") for p in problems]
    return report, failures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m verl_patches.smoke_check", description=__doc__.splitlines()[0])
    p.add_argument("--thresholds", required=True, type=Path, help="TOML file of rules")
    p.add_argument("--show-rules", action="store_true", help="print the rules and exit")
    p.add_argument("logs", nargs="*", type=Path, help="console output or file-logger JSONL of the run")
    args = p.parse_args(argv)
    try:
        thresholds = load_thresholds(args.thresholds)
        if args.show_rules:
            print(f"min_steps = {thresholds.min_steps}")
            for rule in thresholds.rules:
                bounds = {k: getattr(rule, k) for k in ("min", "max", "max_abs", "min_ratio_to_first")}
                shown = ", ".join(f"{k} {v:g}" for k, v in bounds.items() if v is not None)
                print(f"{rule.name}: {' | '.join(rule.metrics)}: {shown}{' (required)' if rule.required else ''}")
            return 0
        if not args.logs:
            raise InputError("no log given")
        metrics: Metrics = {}
        for path in args.logs:
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                raise InputError(f"{path}: {exc}") from exc
            for step, row in parse_log(text).items():
                metrics.setdefault(step, {}).update(row)
    except InputError as exc:
        print(f"smoke_check: error: {exc}", file=sys.stderr)
        return 2
    report, failures = evaluate(metrics, thresholds)
    print("\n".join(report))
    for failure in failures:
        print(f"FAILED: {failure}")
    print("smoke metrics: " + (f"{len(failures)} problem(s)" if failures else "every rule holds"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
