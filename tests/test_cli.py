"""The command line: one argparse parser built from what each module of commands/ declares; a closed pipe is quiet."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest
from helpers import ROOT

from verl_patches import __version__, cli

COMMANDS = ROOT / "src" / "verl_patches" / "commands"


def test_every_command_module_is_listed_and_declares_its_command():
    listed = ast.literal_eval(
        next(
            node.value
            for node in ast.parse((COMMANDS / "__init__.py").read_text()).body
            if isinstance(node, ast.Assign) and node.targets[0].id == "__all__"
        )
    )
    assert sorted(listed) == sorted(p.stem for p in COMMANDS.glob("*.py") if p.stem != "__init__")
    modules = cli.command_modules()
    assert [m.COMMAND.name for m in modules] == [name.replace("_", "-") for name in listed]
    assert all(callable(m.arguments) and callable(m.run) for m in modules)


def test_help_lists_every_command_and_the_version(capsys):
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    assert f"version {__version__}" in out and "range-diff" in out and "<command> --help" in out
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"{__version__}\n"


def test_an_unknown_command_is_a_usage_error(capsys):
    assert cli.main(["frobnicate"]) == 2
    err = capsys.readouterr().err
    assert "verl-patches: unknown command 'frobnicate'" in err and "apply" in err


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["status", "extra"], "unrecognized arguments: extra"),
        (["apply", "--bogus"], "unrecognized arguments: --bogus"),
        (["export", "--base"], "argument --base: expected one argument"),
    ],
    ids=["extra-word", "unknown-option", "missing-value"],
)
def test_a_usage_error_shows_its_command_usage(tmp_path, monkeypatch, capsys, argv, error):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: verl-patches {argv[0]} [-h] [-C DIR]"), err
    assert err.endswith(f"verl-patches {argv[0]}: error: {error}\n"), err


@pytest.mark.parametrize("word", ["--bogus", "-x", "-C"])
def test_an_option_in_place_of_the_command_is_an_unknown_command(capsys, word):
    assert cli.main([word, "status"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"verl-patches: unknown command {word!r}") and "range-diff" in err


def test_a_command_help_needs_no_checkout(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["export", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: verl-patches export") and "--base VERSION" in out and "--force" in out


def test_outside_a_checkout_a_command_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["status"]) == 1
    assert "verl-patches: error: no upstream.toml in" in capsys.readouterr().err


def test_progress_goes_to_stderr_as_it_is_and_in_order_with_stdout(checkout, capsys):
    assert checkout.cli("apply") == 0
    (checkout.tree / "verl" / "scratch.py").write_text("X = 1\n")  # work that apply --force keeps in a backup
    capsys.readouterr()
    assert checkout.cli("apply", "--force") == 0
    out, err = capsys.readouterr()
    assert err.startswith("kept a backup of build/1.0.0/verl: ") and "kept a backup" not in out
    (checkout.tree / "verl" / "scratch.py").write_text("X = 2\n")
    proc = subprocess.run(
        [sys.executable, "-m", "verl_patches", "apply", "--force", "-C", str(checkout.root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=True,
    )
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("kept a backup of build/1.0.0/verl: ") and lines[-1].startswith("applied 0 patch(es)")


def test_piping_into_a_closed_reader_is_quiet(checkout):
    assert checkout.cli("apply") == 0
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `| head` that has already exited
    proc = subprocess.run(
        [sys.executable, "-m", "verl_patches", "table", "-C", str(checkout.root)],
        stdout=write_end,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(write_end)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.returncode != 0


@pytest.mark.parametrize("command", ["table", "apply"])
def test_a_closed_stdout_is_no_crash(checkout, command):
    """`verl-patches table >&-`: Python's sys.stdout is None; progress messages and the result's flush cope."""
    assert checkout.cli("apply") == 0
    proc = subprocess.run(
        [
            "bash",
            "-c",
            'exec "$@" >&-',
            "bash",
            sys.executable,
            "-m",
            "verl_patches",
            command,
            "-C",
            str(checkout.root),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert "Traceback" not in proc.stderr and "Error" not in proc.stderr, proc.stderr
    assert proc.returncode == 0


@pytest.mark.parametrize("redirect", ["1</dev/null", ">/dev/full"])
@pytest.mark.parametrize("command", ["table", "status"])
def test_a_stdout_that_cannot_be_written_is_an_error_without_a_traceback(checkout, command, redirect):
    proc = subprocess.run(
        ["bash", "-c", f'exec "$@" {redirect}', "bash", sys.executable, "-m", "verl_patches", command],
        stderr=subprocess.PIPE,
        text=True,
        cwd=checkout.root,
        env={name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"},  # written at the end
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert proc.stderr.startswith(f"verl-patches: error: {command} could not write its output to stdout: "), proc.stderr
    assert "VERL_PATCHES_BUILD_DIR" not in proc.stderr  # the build folder has nothing to do with it
