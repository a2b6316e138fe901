"""One module per subcommand; each declares COMMAND (a cli.Command), arguments(parser) and run(project, args) -> int.

__all__: the modules, in the order `verl-patches --help` lists their commands."""

__all__ = [
    "apply",
    "export",
    "status",
    "check",
    "test",
    "wheel",
    "table",
    "prove",
    "pr",
    "rebase",
    "watch",
    "compare",
    "range_diff",
    "backups",
]
