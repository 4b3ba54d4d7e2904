"""ddtune up: start (or restart) the configured server and return once it is ready."""

from __future__ import annotations

HELP = "start or restart the configured server and return once it is ready"
EXAMPLES = """\
examples:
  ddtune up                                   start the configured server (the simulator when none is configured)
  ddtune up --preset b8-t4-w2048              start with a shipped knob preset
  ddtune up --set window=1024 --set topk=4    change knobs (restarts the server if they differ)
  ddtune up --apply-config                    restart a tuned server back to the config file's knobs
  ddtune up --no-speculation && ddtune check-lossless --save-baseline greedy.json && ddtune up --apply-config
                                              record the lossless baseline (docs/lossless.md), then return
  ddtune --config box.toml up

Prints each startup phase to stderr; exit 0 once the server we started generates a token and
reports the requested knobs, exit 1 with the reason (fatal log line, log tail) when the start
failed, exit 3 when it is ready but a knob did not take effect (MISMATCH: the server says another
value; --allow-mismatch exits 0 then).
A server already running this exact config (file knobs + --preset + --set) is re-attached, not
restarted. Plain `ddtune up` also keeps a server of this config file that was tuned to other knobs
(console, sweep, `restart --set`) and says how they differ; `--apply-config` restarts it with the
file's knobs, and --preset/--set restart it with those.
A server that another config file started in this state dir is never stopped without asking: up
refuses (exit 2) naming it and its config; --replace stops it and starts this config's.
"""


def add_arguments(parser) -> None:
    from tui.commands._server import add_knob_arguments, add_mismatch_argument, add_replace_argument, add_wait_argument

    add_knob_arguments(parser)
    add_mismatch_argument(parser)
    add_replace_argument(parser)
    parser.add_argument("--apply-config", action="store_true",
                        help="make the server match the config file even when the running server was tuned "
                             "to other knobs (default without --preset/--set: keep the running server's knobs)")
    parser.add_argument("--no-speculation", action="store_true",
                        help="run the configured server without speculative decoding: no draft model, no draft "
                             "knobs or --speculative-* extra_args (the lossless baseline; what sweep --baseline runs)")
    add_wait_argument(parser)


def run(args) -> int:
    from tui.commands._server import drive, report_final, requested_config

    config = requested_config(args)  # --no-speculation: the same server without speculative decoding
    keep = not (args.apply_config or args.preset or args.sets or args.no_speculation)
    return report_final(drive(config, args, "up", keep_running_knobs=keep, replace=args.replace), args.allow_mismatch)
