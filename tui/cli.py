"""The ``ddtune`` entry point: one parser, one module per subcommand, no Textual unless needed.

Each ``tui/commands/<name>.py`` module exports ``HELP`` (one line), ``EXAMPLES`` (epilog text),
``add_arguments(parser)`` and ``run(args) -> int``. Modules keep their top-level imports cheap,
so ``ddtune --help`` and the headless commands start fast and never load Textual.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from backends.core import DdtuneError

# Order is the order of ``ddtune --help``.
COMMANDS = [
    "sim", "up", "down", "restart", "status", "inspect", "doctor", "gpu",
    "bench", "eval", "load", "sweep", "search", "ab", "check-lossless", "report", "selftest",
]

MAIN_EXAMPLES = """\
examples:
  ddtune                                  open the console (the built-in simulator when no server is configured)
  ddtune --load 8                         open it and start the live coding load with 8 streams
  ddtune --load 8 --load-prompts my-traffic.jsonl   ... with your own prompts (p picks another source)
  ddtune sim --model-path demo --port 30000 --speculative-algorithm DFLASH \\
             --speculative-draft-model-path demo-draft
  ddtune --config box.toml up --preset b8-t4-w2048
  ddtune status --json
  ddtune COMMAND --help                   every command has examples

config: --config FILE, else ./ddtune.toml, else $XDG_CONFIG_HOME/ddtune/ddtune.toml
state:  $DDTUNE_STATE_DIR, else $XDG_STATE_HOME/ddtune (server.json, startups.jsonl, runs/)
"""


class Parser(argparse.ArgumentParser):
    """argparse that exits 2 with a hint instead of a bare usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\nhint: run '{self.prog} --help' for options and examples\n")
        raise SystemExit(2)


class MainHelp(argparse.RawDescriptionHelpFormatter):
    """``ddtune --help``: the help column leaves room for the longest command name (check-lossless),
    so each command and its help share a line."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=26)
        self._action_max_length = 4 + max(len(name) for name in COMMANDS)


class ShowVersion(argparse.Action):
    """``--version``: the installed metadata's version (backends/core/version.py), looked up when the
    flag is given rather than each time the parser is built."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show program's version number and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from tui import __version__

        sys.stdout.write(f"ddtune {__version__}\n")
        parser.exit()


def load_command(name: str) -> ModuleType:
    return importlib.import_module(f"tui.commands.{name.replace('-', '_')}")


def build_parser() -> Parser:
    common = Parser(add_help=False)
    # SUPPRESS keeps a value given before the subcommand when the subcommand does not repeat it.
    common.add_argument("--config", metavar="FILE", default=argparse.SUPPRESS,
                        help="config file (default: ./ddtune.toml, then $XDG_CONFIG_HOME/ddtune/ddtune.toml)")
    parser = Parser(
        prog="ddtune",
        description="Tune SGLang speculative decoding (DFlash, DDTree) from one terminal console.",
        epilog=MAIN_EXAMPLES,
        formatter_class=MainHelp,
    )
    parser.add_argument("--version", action=ShowVersion)
    parser.add_argument("--config", metavar="FILE", default=None,
                        help="config file (default: ./ddtune.toml, then $XDG_CONFIG_HOME/ddtune/ddtune.toml)")
    parser.add_argument("--load", metavar="C", type=int, default=None,
                        help="console only: start the live coding load with C streams on open")
    parser.add_argument("--load-prompts", metavar="SOURCE", default=None,
                        help="console only: the live load's prompts (default coding; story, humaneval, a JSON/JSONL "
                             "file, hf:NAME; p in the console picks another)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in COMMANDS:
        module = load_command(name)
        if getattr(module, "PASSTHROUGH", False):
            # The command parses its own flags (ddtune sim speaks SGLang's flag language).
            cmd = sub.add_parser(name, help=module.HELP, add_help=False, prefix_chars="\0")
            cmd.add_argument("argv", nargs=argparse.REMAINDER)
        else:
            cmd = sub.add_parser(
                name, help=module.HELP, description=module.HELP, epilog=getattr(module, "EXAMPLES", None),
                parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
            )
            module.add_arguments(cmd)
        cmd.set_defaults(_module=module)
    return parser


def one_line(text: str) -> str:
    """The error contract is one line: line breaks that came in with the input (a key, a value, a
    file name) are shown escaped rather than splitting the message."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def said(exc: DdtuneError) -> int:
    """A DdtuneError as one ``ddtune: error:`` line (plus a ``hint:`` line); its exit code."""
    sys.stderr.write(f"ddtune: error: {one_line(exc.message)}\n")
    if exc.hint:
        sys.stderr.write(f"hint: {one_line(exc.hint)}\n")
    return exc.exit_code


def report_errors(action: Callable[[], int]) -> int:
    """Run ``action`` the way every command runs: a DdtuneError becomes one ``ddtune: error:`` line
    (plus a ``hint:`` line) and its exit code (2 bad usage or input, 1 failed run); Ctrl-C is 130."""
    from backends.core import DdtuneError

    try:
        return action()
    except DdtuneError as exc:
        return said(exc)
    except KeyboardInterrupt:
        sys.stderr.write("ddtune: interrupted\n")
        return 130


def main(argv: list[str] | None = None) -> int:
    """Run one ddtune command; a reader that went away (``ddtune status | head -1``) ends it quietly.

    Python's own advice (signal module docs, "Note on SIGPIPE"): on EPIPE point stdout at
    /dev/null, so the flush at interpreter exit has nowhere to fail. Flushing here makes the broken
    pipe surface inside this ``try`` rather than as "Exception ignored" at exit. A reader of stdout
    that stopped reading (``| head``) is not a failure: exit 0, as the command's output was taken
    as far as it was wanted. Only an error line that could not reach stderr exits 1: that run failed."""
    global _STDERR_BROKE
    _STDERR_BROKE = False
    code = 0
    try:
        try:
            code = _main(argv)
            return code
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        for stream in (sys.stdout, sys.stderr):
            if _reader_gone(stream):
                os.dup2(devnull, stream.fileno())
        os.close(devnull)
        return 1 if _STDERR_BROKE else code  # code: the command's own, when only the last flush broke


_STDERR_BROKE = False  # set when a write to stderr met the closed pipe: an error line was lost


def _reader_gone(stream) -> bool:
    """Whether ``stream`` is a pipe nobody reads any more (poll reports POLLERR on its write end)."""
    import select

    try:
        poller = select.poll()
        poller.register(stream.fileno(), select.POLLOUT)
        return any(mask & select.POLLERR for _, mask in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


class MaskedStream:
    """stdout or stderr of a headless command, with every API key ddtune knows masked in what is
    written (``backends.core.apikey.mask``): the last guard, behind the masking where log lines are read
    and errors are made."""

    def __init__(self, stream, is_stderr: bool = False) -> None:
        self._stream = stream
        self._is_stderr = is_stderr

    def write(self, text: str) -> int:
        from backends.core import mask

        try:
            self._stream.write(mask(text))
        except BrokenPipeError:
            if self._is_stderr:
                global _STDERR_BROKE
                _STDERR_BROKE = True
            raise
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _main(argv: list[str] | None) -> int:
    from backends.core import DdtuneError, private_umask

    private_umask()  # every file ddtune writes is 0600, every dir 0700; launched servers keep the user's umask
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser()
    except DdtuneError as exc:  # the help lists the shipped knobs: an install whose presets are missing or hidden
        return said(exc)
    args = parser.parse_args(argv)
    if args.config is not None and not os.path.exists(os.path.expanduser(args.config)):
        parser.error(f"--config: no such file: {args.config}")  # a pipe or a device: the reader names it

    def action() -> int:
        if args.command is None:
            from tui.commands import console

            return console.run(args)
        return int(args._module.run(args) or 0)

    if args.command in (None, "sim"):  # the console draws through Textual; the simulator is the server
        return report_errors(action)
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = MaskedStream(sys.stdout), MaskedStream(sys.stderr, is_stderr=True)
    try:
        return report_errors(action)
    finally:
        sys.stdout, sys.stderr = streams


if __name__ == "__main__":
    raise SystemExit(main())
