"""Option types and server options shared by the workload commands (bench, eval, load)."""

from __future__ import annotations

import argparse

DEFAULT_URL = "http://127.0.0.1:30000"


def _number(text: str, cast, ok, expected: str, bound: str):
    """Parse ``text`` with ``cast`` and check it with ``ok``; argparse turns the errors into exit 2."""
    try:
        value = cast(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text[:40]!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"must be {bound}, got {text if len(text) <= 40 else text[:37] + '...'}")
    return value


def positive_int(text: str) -> int:
    return _number(text, int, lambda v: v >= 1, "a positive integer", "at least 1")


def non_negative_int(text: str) -> int:
    return _number(text, int, lambda v: v >= 0, "an integer >= 0", "0 or more")


def positive_float(text: str) -> float:
    return _number(text, float, lambda v: v > 0, "a number of seconds", "more than 0")


def count_option(name: str, low: int = 1):
    """The type of an integer option from ``low`` to the most a plan may hold (``PLAUSIBLE[name]``,
    workloads/runs/checks.py: what a resume reads back), so a run is never started with a number its
    own resume would refuse, nor one that overflows a bound or fills memory (10**400 streams)."""
    def parse(text: str) -> int:
        from workloads.bench import PLAUSIBLE

        most = PLAUSIBLE[name]
        return _number(text, int, lambda v: low <= v <= most, "an integer", f"from {low} to {most:,}")
    return parse


def rate_option(text: str) -> float:
    """A request rate or a burstiness, within what a plan read back may hold (``RATES``)."""
    from workloads.bench import RATES

    low, high = RATES
    return _number(text, float, lambda v: low <= v <= high, "a number", f"from {low:g} to {high:g}")


def url_type(text: str) -> str:
    from backends.core import DdtuneError, server_base

    try:
        return server_base(text, check=True)  # http://host:30000/v1 is the server at http://host:30000
    except DdtuneError as exc:
        raise argparse.ArgumentTypeError(f"{exc.message}; expected http://HOST:PORT") from None


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
