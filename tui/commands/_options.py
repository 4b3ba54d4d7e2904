"""Option types and server options shared by the workload commands (bench, eval, load)."""

from __future__ import annotations

import argparse

DEFAULT_URL = "http://127.0.0.1:30000"


def _checked(name: str, text: str, low: int = 1):
    """``text`` as option ``name`` takes it (workloads.bench.option_value); argparse turns the error
    into its one line and exit 2."""
    from workloads.bench import option_value

    try:
        return option_value(name, text, low)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_float(text: str) -> float:
    return _checked("seconds", text)


def count_option(name: str, low: int = 1):
    """The type of an integer option from ``low`` to the most a plan may hold (``PLAUSIBLE[name]``,
    workloads/runs/checks.py: what a resume reads back), so a run is never started with a number its
    own resume would refuse, nor one that overflows a bound or fills memory (10**400 streams)."""
    def parse(text: str) -> int:
        return _checked(name, text, low)
    return parse


def rate_option(text: str) -> float:
    """A request rate or a burstiness, within what a plan read back may hold (``RATES``)."""
    return _checked("rate", text)


def url_type(text: str) -> str:
    return _checked("url", text)  # http://host:30000/v1 is the server at http://host:30000


def add_server_options(parser) -> None:
    parser.add_argument("--url", type=url_type, metavar="URL",
                        help=f"server base URL (default: the configured server, else {DEFAULT_URL})")
    parser.add_argument("--api-key", metavar="KEY", default=None,
                        help="API key sent as a Bearer token (default: the key ddtune launched the managed server "
                             "with, else $DDTUNE_API_KEY, else none)")


def server_url(args) -> tuple[str, str | None]:
    """The URL and API key (backends.server.server_target): --url, else the config's [server]
    host/port, else the managed server's recorded url, else the default; --api-key, else the key
    ddtune launched that server with (when the URL is its), else $DDTUNE_API_KEY."""
    from backends.server import server_target

    target = server_target(args.url, args.api_key, getattr(args, "config", None), DEFAULT_URL)
    return target.url, target.api_key


def add_log_option(parser) -> None:
    parser.add_argument("--log", metavar="FILE", default=None,
                        help="the server's log, read over each measured stretch for acceptance from its Decode batch "
                             "lines when neither the requests nor /metrics carry it (a server started without "
                             "--enable-metrics); default: the managed server's log, when the URL is its")


def server_log(args, url: str) -> str | None:
    """The server log a workload reads acceptance from as a last resort: --log, else the managed
    server's (its recorded log) when ``url`` is that server's."""
    if getattr(args, "log", None):
        return str(args.log)
    from backends.server import server_target

    return server_target(url).log_path
