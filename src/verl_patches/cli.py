"""verl-patches: the command-line entry point; dispatches to one module per subcommand."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import importlib
import os
import sys
from collections.abc import Callable

from verl_patches import __version__, signals
from verl_patches.checkout import Project
from verl_patches.errors import ConfigError, VerlPatchesError, os_error_message
from verl_patches.git import scratch
from verl_patches.queue import lock
from verl_patches.sources.source import mirror_from

COMMANDS = {
    "apply": ("apply", "materialise build/verl: pinned upstream source + patches/series"),
    "export": ("export", "write build/verl's commits back to patches/"),
    "status": ("status", "list un-exported work in build/verl (non-zero if any)"),
    "check": ("check", "lint patches and series, trial-apply, compare with build/verl"),
    "test": ("test", "run the series' CPU (or --gpu) tests in build/venv"),
    "wheel": ("wheel", "build a reproducible patched wheel into dist/"),
    "table": ("table", "print the series as a table"),
    "prove": ("prove", "per patch: its tests fail without it and pass with it"),
    "pr": ("pr", "print a patch as a verl pull request (title, branch, body)"),
    "rebase": ("rebase", "replay the series onto a newer verl sdist and classify each patch"),
    "watch": ("watch", "list verl releases newer than the newest base (PyPI, GitHub tags); --prs: forwarded PRs"),
    "compare": ("compare", "compare two queues (bases): patches missing from one, and patches that differ"),
    "range-diff": ("range_diff", "git range-diff of the series between two refs of this repository"),
    "backups": ("backups", "list the backups taken before work was discarded, and how to restore them"),
}

# What to run after a command was interrupted.
RECOVERY = {
    "apply": "run `verl-patches apply` again; it recovers the build tree (keeping a backup of what it held)",
    "test": "run `verl-patches test` again; its apply recovers the build tree (keeping a backup of what it held)",
    "export": "run `verl-patches export` again to finish the export",
    None: "run `verl-patches status` to see where the build tree stands, then the command again",
}

# Commands that read or write build/verl or patches/ run one at a time per checkout.
LOCKED = {"apply", "export", "status", "check", "test", "wheel", "prove", "rebase", "range-diff"}
# Commands that write patches/ or upstream.toml also hold the checkout's queue lock, shared by every build folder.
WRITES_QUEUE = {"export", "rebase"}


def usage() -> str:
    lines = [f"usage: verl-patches <command> [options]   (version {__version__})", "", "commands:"]
    lines += [f"  {name:<11} {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "Run `verl-patches <command> --help` for a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    if argv[0] == "--version":
        print(__version__)
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"verl-patches: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    try:
        # Imported inside the handler: Ctrl-C while a command's modules load is an interrupt like any other.
        module = importlib.import_module(f"verl_patches.commands.{COMMANDS[name][0]}")
        with signals.as_interrupts():
            project = _project(rest) if name in LOCKED else None
            if project is None:
                return module.main(rest)
            try:
                command = " ".join([name, *rest])
                with contextlib.ExitStack() as locks:
                    locks.enter_context(lock.held(project.build_dir, command))
                    if name in WRITES_QUEUE:
                        locks.enter_context(lock.held(project.root / "build", command, name=lock.QUEUE_LOCK_FILE))
                    scratch.sweep(project.build_dir)
                    return module.main(rest)
            except VerlPatchesError as exc:  # the lock could not be taken
                print(f"verl-patches: error: {exc}", file=sys.stderr)
                return 1
    except KeyboardInterrupt as exc:
        print(
            f"verl-patches: {name} interrupted; nothing is lost: {RECOVERY.get(name, RECOVERY[None])}", file=sys.stderr
        )
        return signals.exit_status(exc)
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: stop quietly, and keep the interpreter's final flush quiet too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _project(rest: list[str]) -> Project | None:
    """The checkout a command will use (its -C option, else the cwd); None for --help or outside a checkout."""
    if "-h" in rest or "--help" in rest:
        return None
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("-C", "--project")
    known, _ = pre.parse_known_args(rest)
    try:
        return Project.find(known.project)
    except ConfigError:
        return None


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"verl-patches {prog}", description=description)
    p.add_argument("-C", "--project", metavar="DIR", help="the verl-patches checkout (default: found from the cwd)")
    p.add_argument(
        "--mirror",
        metavar="DIR|URL",
        help="a folder or URL prefix holding upstream tag archives (default: $VERL_PATCHES_MIRROR; else GitHub)",
    )
    p.add_argument(
        "--base",
        metavar="VERSION",
        help="the declared base (upstream.toml) whose queue to work on (default: $VERL_PATCHES_BASE; else the newest)",
    )
    return p


def project_of(args: argparse.Namespace) -> Project:
    project = dataclasses.replace(
        Project.find(args.project).loaded(), mirror=mirror_from(args.mirror), base=getattr(args, "base", None)
    )
    project.selected()  # an unknown base is an error that lists the declared ones
    return project


def reports_errors(func: Callable[[list[str] | None], int]) -> Callable[[list[str] | None], int]:
    @functools.wraps(func)
    def wrapper(argv: list[str] | None = None) -> int:
        try:
            return func(argv)
        except VerlPatchesError as exc:
            print(f"verl-patches: error: {exc}", file=sys.stderr)
            return 1
        except OSError as exc:  # a read-only folder, a full disk: the condition and what to do, no traceback
            command = func.__module__.rsplit(".", 1)[-1].replace("_", "-")
            print(f"verl-patches: error: {os_error_message(exc, f'{command} stopped')}", file=sys.stderr)
            return 1

    return wrapper
