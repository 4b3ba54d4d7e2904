"""A stand-in for the ``llama-server`` command: llama.cpp's own HTTP server from PyPI ``xllamacpp``.

``pip install 'ddtune[llamacpp]'`` brings the ``xllamacpp`` wheel (llama.cpp with DFlash, CPU,
no dependencies), which has no ``llama-server`` command: ``xllamacpp.Server(CommonParams)`` runs
llama.cpp's server in the calling process. ddtune starts this module as that process
(``python -P -m backends.drivers.llamacpp_launcher FLAGS``), in its own process group with a launch
token like any server it spawns; it takes llama-server's spellings of the flags it maps (``--help``
lists exactly those: ddtune probes it as it probes a real binary), starts the server, and runs
until SIGTERM or SIGINT. llama.cpp writes its log to this process's stderr, which ddtune follows.

What the in-process server cannot do as the command does: listen before the model loads (so
``/health`` never answers 503 here: the socket opens once the model is loaded), and report its
build (``/props`` says ``b0-unknown``): this module prints the wheel's llama.cpp build at start and
in ``--version``.

Imports the standard library and xllamacpp only (never the rest of ddtune).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from importlib import metadata

PACKAGE = "xllamacpp"
SPEC_TYPES = ("none", "draft-simple", "draft-eagle3", "draft-mtp", "draft-dflash", "draft-dspark")


def wheel_version() -> str | None:
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return None


def build_of(version: str | None) -> str | None:
    """xllamacpp ``2026.10.11549`` -> llama.cpp ``b11549`` (the wheel's last part is the build)."""
    if not version:
        return None
    last = version.split(".")[-1]
    return f"b{last}" if last.isdigit() else None


def version_line() -> str:
    version = wheel_version()
    build = build_of(version)
    if version is None:
        return "version: none (xllamacpp is not installed: pip install 'ddtune[llamacpp]')"
    return f"version: {build[1:] if build else '0'} (xllamacpp {version})"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="llamacpp_launcher", add_help=False,
        description="llama.cpp's server (PyPI xllamacpp) under llama-server's flag names; only these are mapped.")
    a = p.add_argument
    a("-h", "--help", action="help", help="show this help and exit")
    a("--version", action="store_true", help="print the llama.cpp build and exit")
    a("-m", "--model", metavar="FNAME", help="model path (GGUF)")
    a("--host", default="127.0.0.1", help="ip address to listen on (default: 127.0.0.1)")
    a("--port", type=int, default=8080, help="port to listen on (default: 8080)")
    a("-md", "--spec-draft-model", metavar="FNAME", help="draft model for speculative decoding (GGUF)")
    a("--spec-type", choices=SPEC_TYPES, default=None, help="speculative decoding type: " + ", ".join(SPEC_TYPES))
    a("--spec-draft-n-max", type=int, metavar="N", help="tokens to draft at most (default: 3)")
    a("--spec-draft-n-min", type=int, metavar="N", help="tokens to draft at least (default: 0)")
    a("--spec-draft-p-min", type=float, metavar="P", help="minimum draft probability (default: 0.0)")
    a("-c", "--ctx-size", type=int, metavar="N", help="context size (default: 0, from the model)")
    a("-np", "--parallel", type=int, metavar="N", help="number of server slots (default: 1)")
    a("-t", "--threads", type=int, metavar="N", help="CPU threads for generation (default: all)")
    a("--metrics", action="store_true", help="enable the Prometheus /metrics endpoint")
    a("--props", action="store_true", help="allow POST /props")
    a("--no-slots", action="store_true", help="disable the /slots endpoint")
    a("--api-key", metavar="KEY", help="API key requests must carry")
    a("-lv", "--verbosity", type=int, metavar="N", help="log verbosity (default: 3)")
    a("--no-warmup", action="store_true", help="skip the empty warm-up run")
    return p


def params(args: argparse.Namespace, x) -> object:
    """The CommonParams of ``args`` (``x``: the xllamacpp module)."""
    p = x.CommonParams()
    p.model.path = args.model
    p.hostnames = [args.host]
    p.port = args.port
    spec = args.spec_type or ("draft-dflash" if args.spec_draft_model else None)
    if spec is not None:
        member = "COMMON_SPECULATIVE_TYPE_" + spec.upper().replace("-", "_")
        p.speculative.types = [getattr(x.common_speculative_type, member)]
    if args.spec_draft_model:
        p.speculative.draft.mparams.path = args.spec_draft_model
    for name, attr in (("spec_draft_n_max", "n_max"), ("spec_draft_n_min", "n_min"), ("spec_draft_p_min", "p_min")):
        value = getattr(args, name)
        if value is not None:
            setattr(p.speculative.draft, attr, value)
    if args.ctx_size is not None:
        p.n_ctx = args.ctx_size
    if args.parallel is not None:
        p.n_parallel = args.parallel
    if args.threads is not None:
        p.cpuparams.n_threads = args.threads
        p.cpuparams_batch.n_threads = args.threads
        p.speculative.draft.cpuparams.n_threads = args.threads
        p.speculative.draft.cpuparams_batch.n_threads = args.threads
    p.endpoint_metrics = bool(args.metrics)
    p.endpoint_props = bool(args.props)
    p.endpoint_slots = not args.no_slots
    if args.api_key:
        p.api_keys = [args.api_key]
    if args.verbosity is not None:
        p.verbosity = args.verbosity
    if args.no_warmup:
        p.warmup = False
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.version:
        print(version_line())
        return 0
    if not args.model:
        print("error: --model is required", file=sys.stderr)
        return 2
    try:
        import xllamacpp as x
    except ImportError:
        print("error: xllamacpp is not installed: pip install 'ddtune[llamacpp]'", file=sys.stderr)
        return 1
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print(f"llamacpp_launcher: pid {os.getpid()}, llama.cpp {build_of(wheel_version()) or 'unknown'} "
          f"(xllamacpp {wheel_version()})", file=sys.stderr, flush=True)
    try:
        server = x.Server(params(args, x))
    except Exception as exc:  # the wheel raises RuntimeError and friends; say it on one line and exit
        print(f"error: llamacpp_launcher: the server did not start: {type(exc).__name__}: {exc}",
              file=sys.stderr, flush=True)
        return 1
    while not stop.wait(3600):
        pass
    del server  # llama.cpp's own clean shutdown (its main loop exits)
    return 0


if __name__ == "__main__":
    sys.exit(main())
