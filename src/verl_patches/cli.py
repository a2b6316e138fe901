"""verl-patches: the command-line entry point.

Each module of commands/ declares its subcommand: COMMAND (a Command: name, help line, locks, what to run after an
interrupt), arguments(parser), which adds its options, and run(project, args) -> exit status. main() builds one
argparse parser from them, loads the checkout once, takes the locks, and reports errors and interrupts."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import logging
import os
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

from verl_patches import __version__, signals
from verl_patches.checkout import Project
from verl_patches.errors import VerlPatchesError, os_error_message
from verl_patches.git import scratch
from verl_patches.queue import lock
from verl_patches.sources.source import mirror_from

PROG = "verl-patches"
# What the top parser takes before a command.
TOP_OPTIONS = ("-h", "--help", "--version")
# What to run after an interrupted command that declares no advice of its own.
RECOVERY = "run `verl-patches status` to see where the build tree stands, then the command again"


@dataclasses.dataclass(frozen=True)
class Command:
    """What a module of commands/ declares about its subcommand."""

    name: str
    help: str  # its line in `verl-patches --help`
    description: str  # the text of `verl-patches <name> --help`
    # Reads or writes build/verl or patches/: one such command at a time per build folder (its build lock).
    build_lock: bool = False
    # Writes patches/ or upstream.toml: also the checkout's queue lock, shared by every build folder.
    queue_lock: bool = False
    recovery: str = RECOVERY  # what to run after the command was interrupted


def options() -> argparse.ArgumentParser:
    """The options every command takes."""
    p = argparse.ArgumentParser(add_help=False)
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


def command_modules() -> list[ModuleType]:
    """The modules of commands/, in the order `--help` lists them (the package's __all__)."""
    package = importlib.import_module(f"{__package__}.commands")
    return [importlib.import_module(f"{package.__name__}.{name}") for name in package.__all__]


def build_parser(modules: Sequence[ModuleType]) -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog=PROG,
        description=f"Keep fixes to verl as patch queues, one per pinned verl release (version {__version__}).",
        epilog=f"Run `{PROG} <command> --help` for a command's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=__version__)
    sub = top.add_subparsers(title="commands", metavar="<command>", prog=PROG, required=True)
    common = options()
    for module in modules:
        command: Command = module.COMMAND
        p = sub.add_parser(command.name, help=command.help, description=command.description, parents=[common])
        module.arguments(p)
        p.set_defaults(func=module.run, command=command, parser=p)
    return top


class _Stderr(logging.StreamHandler):
    """A log record's message alone, on the stderr of the moment (a caller may have replaced sys.stderr); stdout is
    flushed first, so that the two streams keep their order in a log that holds both."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(OSError, ValueError):  # a stdout that cannot be written: the command's end says so
            flush_stdout()
        self.stream = sys.stderr  # not setStream(): that flushes the stream of before, which may be closed
        super().emit(record)


def flush_stdout() -> None:
    """stdout's buffer written out, when there is a stdout that is open (a caller may have closed sys.stdout)."""
    if sys.stdout is not None and not getattr(sys.stdout, "closed", False):
        sys.stdout.flush()


def stdout_to_devnull() -> None:
    """What stdout still holds, and the interpreter's final flush, go to /dev/null quietly."""
    with contextlib.suppress(AttributeError, ValueError, OSError):  # no stdout, or a closed one: nothing held
        fd = sys.stdout.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)


def standard_streams() -> None:
    """A stream the tool was started without (`verl-patches table >&-`: Python's sys.stdout is None) writes to
    /dev/null: the command runs as usual, its output goes nowhere, and its descriptor holds /dev/null, so that no
    file the tool opens takes it (a child, git or pytest, would write into that file)."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:
            continue
        try:
            os.fstat(fd)
        except OSError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            if devnull != fd:
                os.dup2(devnull, fd)
                os.close(devnull)
        setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # open until the process ends


def log_to_stderr() -> None:
    """The package's progress messages (its modules' loggers, at level INFO) go to stderr as they are."""
    logger = logging.getLogger(__package__)
    if not any(isinstance(handler, _Stderr) for handler in logger.handlers):
        logger.addHandler(_Stderr())
    logger.setLevel(logging.INFO)
    logger.propagate = False


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    standard_streams()
    log_to_stderr()
    command: Command | None = None
    try:
        with signals.as_interrupts():
            # Imported inside the handler: Ctrl-C while the commands' modules load is an interrupt like any other.
            modules = command_modules()
            top = build_parser(modules)
            names = {module.COMMAND.name for module in modules}
            if not argv:
                print(top.format_help(), end="")
                return 0
            if argv[0] not in names and argv[0] not in TOP_OPTIONS:
                print(f"{PROG}: unknown command {argv[0]!r}\n\n{top.format_help()}", end="", file=sys.stderr)
                return 2
            args, extras = top.parse_known_args(argv)
            if extras:  # reported with the command's usage, as its parser would (the top parser shows its own)
                args.parser.error(f"unrecognized arguments: {' '.join(extras)}")
            command = args.command
            status = run_command(args, " ".join(argv))
            try:
                flush_stdout()  # a reader that went away is noticed here, not at exit
            except BrokenPipeError:
                raise
            except OSError as exc:  # `1</dev/null`: the result was not written
                cause = exc.strerror or exc
                print(f"{PROG}: error: {command.name} could not write its output to stdout: {cause}", file=sys.stderr)
                stdout_to_devnull()
                return 1
            return status
    except KeyboardInterrupt as exc:
        name = command.name if command else (argv[0] if argv else PROG)
        advice = command.recovery if command else RECOVERY
        print(f"{PROG}: {name} interrupted; nothing is lost: {advice}", file=sys.stderr)
        return signals.exit_status(exc)
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: stop quietly, and keep the interpreter's final flush quiet too.
        stdout_to_devnull()
        return 1


def run_command(args: argparse.Namespace, line: str) -> int:
    """Run the parsed command (its module's run) on the checkout, under the locks it declares; an error (and a failed
    file operation) is one message. line: the command line, as the lock file names its holder."""
    command: Command = args.command
    func: Callable[[Project, argparse.Namespace], int] = args.func
    try:
        if not (command.build_lock or command.queue_lock):
            return func(project_of(args), args)
        checkout = Project.find(args.project)  # where the locks are; upstream.toml is read under them
        with contextlib.ExitStack() as locks:
            locks.enter_context(lock.held(checkout.build_dir, line))
            if command.queue_lock:
                locks.enter_context(lock.held(checkout.root / "build", line, name=lock.QUEUE_LOCK_FILE))
            scratch.sweep(checkout.build_dir)
            return func(project_of(args), args)
    except VerlPatchesError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        raise
    except OSError as exc:  # a read-only folder, a full disk: the condition and what to do, no traceback
        print(f"{PROG}: error: {os_error_message(exc, f'{command.name} stopped')}", file=sys.stderr)
        return 1


def project_of(args: argparse.Namespace) -> Project:
    """The checkout a command works on, upstream.toml read once, with its --mirror and --base."""
    project = dataclasses.replace(
        Project.find(args.project).loaded(), mirror=mirror_from(args.mirror), base=getattr(args, "base", None)
    )
    project.selected()  # an unknown base is an error that lists the declared ones
    return project
