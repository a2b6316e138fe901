"""Replay a GitHub Actions workflow's `run:` steps on this machine, in order, in a fresh copy of the project.

Only what the project's workflows use is supported: `${{ }}` expressions of the forms `inputs.X`, `vars.X`,
`secrets.X`, `runner.temp`, `github.workspace` (not in a job with a `container:`, where they name the host's
paths), `matrix.X` (one run per combination: matrix_runs) and `'literal'`, joined by `||`, in `env:` values (never in
`run:`); `uses:` steps of the actions in ACTIONS, which the replay stands in for (the copy is the checkout, this
interpreter the Python); `working-directory`; `$GITHUB_ENV`; step `if:` conditions (conditions.py), with
`steps.<id>.outcome`; step outputs (`$GITHUB_OUTPUT`) as job `outputs:` (`steps.<id>.outputs.X`), read by later
jobs as `needs.<job>.outputs.X`, and a matrix list `fromJSON(needs.<job>.outputs.X)`. Job `if:` conditions are
not evaluated. Steps whose names start as one in Replay.failing are
made to fail without running, to see which steps run after a failure.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from helpers.conditions import evaluate

ACTIONS = ("actions/checkout", "actions/setup-python", "actions/upload-artifact")
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
# Expressions that expand to a path of the runner host; inside a container job the step sees other paths.
_HOST_PATHS = {("runner", "temp"), ("github", "workspace")}
# The outer process's virtual environment must not leak into the replayed steps (the job's own variables are
# cleared for every test by conftest's JOB_ENVIRONMENT).
_DROP = ("VIRTUAL_ENV",)


class ReplayError(Exception):
    """The workflow uses something the replay cannot stand in for."""


@dataclass
class StepResult:
    job: str
    name: str
    returncode: int | None  # None: skipped by its if: condition
    output: str

    @property
    def outcome(self) -> str:
        return "skipped" if self.returncode is None else "success" if self.returncode == 0 else "failure"


@dataclass
class Replay:
    workflow: Path
    workspace: Path
    temp: Path
    vars: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    # workflow_dispatch inputs given to the run (the others take their defaults)
    given: dict[str, str] = field(default_factory=dict)
    # starts of the names of run: steps that fail without running (a red test step stands in)
    failing: set[str] = field(default_factory=set)
    secrets: dict[str, str] = field(default_factory=dict)
    # the `outputs:` of the jobs run so far: `needs.<job>.outputs.<name>` -> value
    needs: dict[str, str] = field(default_factory=dict)

    def load(self) -> dict:
        data = yaml.safe_load(self.workflow.read_text(encoding="utf-8"))
        # YAML 1.1 reads the key `on` as True.
        data["on"] = data.pop(True, data.get("on")) or {}
        return data

    def inputs(self, data: dict) -> dict[str, str]:
        dispatch = data["on"].get("workflow_dispatch") if isinstance(data["on"], dict) else None
        inputs = (dispatch or {}).get("inputs") or {}
        unknown = set(self.given) - set(inputs)
        if unknown:
            raise ReplayError(f"{self.workflow.name} has no inputs {sorted(unknown)}")
        return {name: self.given.get(name, str(spec.get("default", ""))) for name, spec in inputs.items()}

    def expand(self, value, context: dict[str, dict[str, str]], where: str) -> str:
        def one(match: re.Match) -> str:
            for alternative in match.group(1).split("||"):
                alternative = alternative.strip()
                literal = re.fullmatch(r"'([^']*)'", alternative)
                if literal:
                    result = literal.group(1)
                else:
                    scope, _, name = alternative.partition(".")
                    if scope not in context or not name:
                        raise ReplayError(f"{where}: unsupported expression {match.group(0)}")
                    if name not in context[scope] and (scope, name) in _HOST_PATHS:
                        raise ReplayError(
                            f"{where}: {match.group(0)} names the runner host's path, not the container's; "
                            "use the environment variable in the step's script"
                        )
                    result = context[scope].get(name, "")
                if result:
                    return result
            return ""

        return _EXPR.sub(one, str(value))

    def job_env(self, name: str, job: dict, data: dict, matrix: dict[str, str] | None = None) -> dict[str, str]:
        """The environment the steps of one run of the job see: the runner's, then the workflow's and the job's env:."""
        context = self.context(job, data, matrix)
        env = {k: v for k, v in os.environ.items() if k not in _DROP}
        github_env = self.temp / f"{name}.env"
        github_env.write_text("")
        env.update(
            CI="true",
            GITHUB_ACTIONS="true",
            GITHUB_WORKSPACE=str(self.workspace),
            GITHUB_ENV=str(github_env),
            GITHUB_OUTPUT=str(self.temp / f"{name}.output"),
            GITHUB_STEP_SUMMARY=str(self.temp / f"{name}.summary"),
            RUNNER_TEMP=str(self.temp),
        )
        env.update(self.env)
        for level, values in (("workflow", data.get("env")), (f"job {name}", job.get("env"))):
            for key, value in (values or {}).items():
                env[key] = self.expand(value, context, f"{level} env {key}")
        return env

    def run_job(self, name: str, job: dict, data: dict, matrix: dict[str, str] | None = None) -> list[StepResult]:
        context = self.context(job, data, matrix)
        env = self.job_env(name, job, data, matrix)
        github_env = Path(env["GITHUB_ENV"])
        results = []
        outcomes: dict[str, dict[str, str]] = {}  # steps.<id>.outcome / .conclusion
        outputs: dict[str, str] = {}  # `<id>.outputs.<name>` -> value
        for i, step in enumerate(job.get("steps", [])):
            label = step.get("name") or step.get("uses") or f"step {i + 1}"
            if "uses" in step:
                action = step["uses"].split("@")[0]
                if action not in ACTIONS:
                    raise ReplayError(f"job {name}: the replay cannot stand in for {step['uses']}")
                continue
            script = step["run"]
            if _EXPR.search(script):
                raise ReplayError(f"job {name}, {label}: pass expressions through env:, not inside run:")
            failed = any(r.returncode for r in results)
            if not evaluate(str(step.get("if", "")), failed, {"steps": outcomes}, f"job {name}, {label}"):
                result = StepResult(name, label, None, "skipped by its if: condition")
            elif any(label.startswith(prefix) for prefix in self.failing):
                result = StepResult(name, label, 1, "made to fail by the replay")
            else:
                result = self.run_step(name, label, step, env, context, github_env)
            results.append(result)
            output = Path(env["GITHUB_OUTPUT"])
            written = output.read_text().splitlines() if output.is_file() else []
            output.unlink(missing_ok=True)
            if "id" in step:
                outcomes[step["id"]] = dict.fromkeys(("outcome", "conclusion"), result.outcome)
                for key, sep, value in (line.partition("=") for line in written):
                    if sep:
                        outputs[f"{step['id']}.outputs.{key}"] = value
        for key, value in (job.get("outputs") or {}).items():
            self.needs[f"{name}.outputs.{key}"] = self.expand(value, {**context, "steps": outputs}, f"job {name}")
        return results

    def run_step(self, job: str, label: str, step: dict, env: dict, context: dict, github_env: Path) -> StepResult:
        step_env = dict(env)
        for key, value in (step.get("env") or {}).items():
            step_env[key] = self.expand(value, context, f"{label} env {key}")
        for line in github_env.read_text().splitlines():
            key, sep, value = line.partition("=")
            if sep:
                step_env[key] = env[key] = value
        cwd = self.workspace / self.expand(step.get("working-directory", "."), context, label)
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=cwd,
            env=step_env,
            capture_output=True,
            text=True,
        )
        return StepResult(job, label, proc.returncode, proc.stdout + proc.stderr)

    def context(self, job: dict, data: dict, matrix: dict[str, str] | None) -> dict[str, dict[str, str]]:
        """The expression contexts of one job run; a container job has no host paths in them."""
        host = "container" not in job
        return {
            "matrix": dict(matrix or {}),
            "needs": self.needs,
            "secrets": self.secrets,
            "inputs": self.inputs(data),
            "vars": self.vars,
            "runner": {"temp": str(self.temp)} if host else {},
            "github": {"workspace": str(self.workspace)} if host else {},
        }

    def container_options(self, name: str, job: dict, data: dict, matrix: dict[str, str] | None = None) -> list[str]:
        """The job container's `options:` as docker receives them (expressions expanded, split as a shell
        would); empty for a job without a container."""
        container = job.get("container") or {}
        options = self.expand(container.get("options", ""), self.context(job, data, matrix), f"job {name} options")
        return shlex.split(options)


def matrix_runs(job: dict, needs: dict[str, str] | None = None) -> list[dict[str, str]]:
    """The combinations of the job's strategy.matrix (lists of values, or `${{ fromJSON(needs.<job>.outputs.X) }}`
    of a list, from the outputs of the jobs run before; no include/exclude): one empty one for a job without a
    matrix."""
    matrix = dict((job.get("strategy") or {}).get("matrix") or {})
    for key, value in matrix.items():
        found = re.fullmatch(r"\$\{\{\s*fromJSON\(needs\.([\w.-]+)\)\s*\}\}", value) if isinstance(value, str) else None
        if found and found.group(1) in (needs or {}):
            matrix[key] = json.loads(needs[found.group(1)])
    if not isinstance(matrix, dict) or any(not isinstance(v, list) for v in matrix.values()):
        raise ReplayError(f"unsupported matrix {matrix!r}: lists of values, or fromJSON of an earlier job's output")
    runs: list[dict[str, str]] = [{}]
    for key, values in matrix.items():
        runs = [{**run, key: str(value)} for run in runs for value in values]
    return runs


def fresh_copy(project: Path, target: Path, edit: Callable[[Path], None] | None = None) -> Path:
    """The project's working tree as a checkout gives it: tracked and untracked files that git does not ignore,
    committed in a new repository; nothing that is ignored (build/, .venv/, dist/). edit(target) runs before the
    commit."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=project,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        source = project / rel
        if source.is_file():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / rel, follow_symlinks=False)
    if edit:
        edit(target)
    git_env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "replay",
        "GIT_AUTHOR_EMAIL": "replay@example.invalid",
        "GIT_COMMITTER_NAME": "replay",
        "GIT_COMMITTER_EMAIL": "replay@example.invalid",
    }
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "replay"]):
        subprocess.run(["git", *cmd], cwd=target, env=git_env, check=True, capture_output=True)
    return target
