"""One module per ``ddtune`` subcommand; see tui/cli.py for the interface."""
