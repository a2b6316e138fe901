"""One module per subcommand; each has build_parser() and main(argv) -> int."""
