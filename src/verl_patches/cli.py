"""verl-patches: the command-line entry point; dispatches to one module per subcommand."""

from __future__ import annotations

import importlib
import sys

from verl_patches import __version__

COMMANDS = {
    "apply": ("apply", "materialise build/verl: pinned upstream source + patches/series"),
    "export": ("export", "write build/verl's commits back to patches/"),
    "status": ("status", "list un-exported work in build/verl (non-zero if any)"),
    "check": ("check", "lint patches and series, trial-apply, compare with build/verl"),
    "test": ("test", "run the series' CPU (or --gpu) tests in build/venv"),
    "wheel": ("wheel", "build a reproducible patched wheel into dist/"),
    "table": ("table", "print the series as a table"),
    "prove": ("prove", "per patch: its tests fail without it and pass with it"),
    "rebase": ("rebase", "replay the series onto a newer verl sdist and classify each patch"),
    "range-diff": ("range_diff", "git range-diff of the series between two refs of this repository"),
}


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
    module = importlib.import_module(f"verl_patches.commands.{COMMANDS[name][0]}")
    return module.main(rest)
