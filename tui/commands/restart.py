"""ddtune restart: stop the running server safely, start it again (with new knobs), wait until ready."""

from __future__ import annotations

HELP = "restart the server (optionally with new knobs) and return once the new one is ready"
EXAMPLES = """\
examples:
  ddtune restart                              same knobs as the running server
  ddtune restart --set window=1024            change one knob, keep the running server's others
  ddtune restart --preset b16-t4-w2048

The old server's in-flight requests are aborted, it gets SIGTERM, then SIGKILL of its whole process
group after [server] stop_timeout_s; the new one starts only once the port is free (and, where NVML
works, the old pids hold no GPU memory). Ready means the new pid generated a token.
Exit 0 when ready with the requested knobs, 1 when the start failed, 3 when ready but a knob did
not take effect (MISMATCH; --allow-mismatch exits 0 then); exit 2, nothing stopped, when the server
runs another config file (--replace stops it and starts this one's).
"""


def add_arguments(parser) -> None:
    from tui.commands._server import add_knob_arguments, add_mismatch_argument, add_replace_argument, add_wait_argument

    add_knob_arguments(parser)
    add_mismatch_argument(parser)
    add_replace_argument(parser)
    add_wait_argument(parser)


def run(args) -> int:
    from tui.commands._server import drive, report_final, requested_config

    config = requested_config(args, keep_running_knobs=True)
    return report_final(drive(config, args, "restart", replace=args.replace), args.allow_mismatch)
