"""``ddtune selftest``: the user's SGLang, flags and knobs on tiny models, through ddtune's own lifecycle.

Before a 590 GB model loads for six minutes, find out in a minute whether this SGLang takes these
flags, whether ddtune's readiness, knob verification, acceptance readings, collapse alarm, GPU
attribution and stop hold on it. The tiny models are built by ``backends/selftest/tinymodels/build_tiny.py``
with the server's own interpreter; the server runs under a temporary state dir (the user's real
server record, logs and startup history are not touched) on a free port.

Each check is a ``Check`` (name, status pass/fail/skip, what was seen, the fix). Pure of any UI.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from backends.knobs.config import ServerConfig
from backends.core.errors import DdtuneError
from backends.selftest.probe import measure
from backends.selftest.tinymodels import BUILDER

AGREE_SHARE = 0.8        # "near the block size": at least this share of it
REQUESTS, TOKENS = 8, 64  # the agreeing draft's batch
COLLAPSE_TOKENS = 16     # each request of the random draft's run (one verify step per token)
SUPPORTED = "SGLang 0.5.11-0.5.23 (DFLASH; the window flag of 0.5.11 and 0.5.12+ alike)"


@dataclass(frozen=True)
class Check:
    name: str
    status: str              # "pass" | "fail" | "skip"
    detail: str
    fix: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class Report:
    checks: list[Check]
    set_aside: list[dict]
    backend: str
    version: str | None = None
    work_dir: str | None = None
    log_paths: list[str] | None = None

    @property
    def ok(self) -> bool:
        return all(c.status != "fail" for c in self.checks)

    def to_json(self) -> dict:
        return {"ok": self.ok, "backend": self.backend, "sglang_version": self.version,
                "checks": [c.to_json() for c in self.checks], "set_aside": self.set_aside,
                "work_dir": self.work_dir, "server_logs": self.log_paths or []}


@contextmanager
def temporary_state_dir(path: str) -> Iterator[None]:
    """Point ddtune's state dir at ``path`` for the block (this process and the servers it starts)."""
    old = os.environ.get("DDTUNE_STATE_DIR")
    os.environ["DDTUNE_STATE_DIR"] = path
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("DDTUNE_STATE_DIR", None)
        else:
            os.environ["DDTUNE_STATE_DIR"] = old


def build_models(config: ServerConfig, out: str, block: int) -> tuple[Check, dict | None]:
    """Run the shipped builder with the server's interpreter (the simulator's: configs only)."""
    from backends.server import driver_flags

    sim = driver_flags(config.backend).simulated
    python = sys.executable if sim else config.python
    argv = [python, str(BUILDER), "--out", out, "--block-size", str(block)] + (["--no-weights"] if sim else [])
    env = {**os.environ, **config.env}
    env.pop("PYTHONPATH", None) if not sim and "PYTHONPATH" not in config.env else None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("build", "fail", f"{python} could not run the builder: {exc}",
                     "set [server] python to the interpreter that has sglang, torch and safetensors"), None
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        return Check("build", "fail", f"the builder failed under {python} (exit {done.returncode}): {tail}",
                     "that interpreter needs torch and safetensors (pip install safetensors)"), None
    try:
        info = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return Check("build", "fail", f"the builder printed no description: {done.stdout[-200:]!r}",
                     "report this as a ddtune bug"), None
    what = "configs and tokenizer (the simulator reads no weights)" if sim else "weights, configs and tokenizer"
    return Check("build", "pass", f"tiny Qwen3 target + agreeing and random DFlash drafts (block {block}), "
                 f"{what}, by {python}; tokenizer {info.get('tokenizer')}"), info


def _flags_check(derived: ServerConfig, backend) -> tuple[Check, str | None]:
    from backends.knobs.plan import help_flags, plan_launch
    from backends.selftest.plan import unknown_flags

    try:
        helptext = backend.learn_help()
    except DdtuneError as exc:
        return Check("flags", "fail", exc.message, exc.hint), None
    unknown = unknown_flags(derived.extra_args, help_flags(helptext.text))
    version = helptext.version
    on = f"SGLang {version}" if version else "this server"
    if unknown:
        return Check("flags", "fail", f"{on} does not take {', '.join(unknown)} (not in its --help)",
                     "fix the spelling in [server] extra_args for this release (e.g. 0.5.11 spells the window "
                     "--speculative-dflash-draft-window-size, 0.5.12+ --speculative-draft-window-size)"), version
    try:
        plan = plan_launch(derived, helptext.text, backend.command_prefix(), version or "unknown")
    except DdtuneError as exc:
        return Check("flags", "fail", exc.message, exc.hint), version
    routes = ", ".join(f"{k} via {r.flag or 'env ' + str(r.env)}" for k, r in plan.routes.items()) or "no knob routes"
    return Check("flags", "pass", f"{on} lists every flag of extra_args in its --help; knobs: {routes}"), version


def _first_line(text: str | None) -> str:
    return (text or "no reason given").splitlines()[0][:300]


def _knob_checks(state, names: tuple[str, ...]) -> list:
    return [c for c in state.checks if c.name in names]


def draft_runner_check(state, config: ServerConfig, name: str = "draft_runner") -> Check:
    """The requested window and compact cache, as the draft runner line (or /server_info) says them."""
    checks = _knob_checks(state, ("window", "compact_cache"))
    bad = [c for c in checks if c.status != "verified"]
    said = "; ".join(c.sentence for c in checks) or "no window or compact cache check"
    if not checks or bad:
        route = config.knob_map.get("window")
        how = f" (it reaches the server as {'env ' + route.env if route and route.env else route.flag})" \
            if route else ""
        return Check(name, "fail", said, f"the window knob{how} did not take effect: route it through the flag "
                     "this SGLang lists (docs/knobs.md, [knobs.map]) or drop the [knobs.map] entry")
    return Check(name, "pass", said)


async def _acceptance_checks(url: str, key: str | None, block: int) -> list[Check]:
    measured = await measure(url, key, REQUESTS, TOKENS)
    if measured.errors and len(measured.errors) == REQUESTS:
        return [Check("acceptance", "fail", f"no request succeeded: {measured.errors[0]}",
                      "look at the server log (server_logs in --json)")]
    if measured.value is None:
        return [Check("acceptance", "fail", "no spec_verify_ct in /generate's meta_info and no "
                      "sglang:spec_verify_calls_total in /metrics: bench, load and the collapse guard "
                      "cannot read acceptance on this server",
                      "run SGLang with --enable-metrics (ddtune adds it where --help lists it), or a release "
                      "that reports spec_verify_ct"),
                Check("agree", "skip", "needs acceptance")]
    where = {"request": "per request (meta_info.spec_verify_ct)", "counters": "from /metrics counters"}
    first = Check("acceptance", "pass", f"readable {where[measured.source or 'counters']}"
                  + (f"; counters agree: {measured.counters:.2f}" if measured.counters and measured.request_values
                     else ""))
    value = measured.value
    if value >= AGREE_SHARE * block:
        return [first, Check("agree", "pass", f"agreeing draft: acceptance {value:.2f} of block size {block}")]
    return [first, Check("agree", "fail", f"agreeing draft: acceptance {value:.2f}, want >= {AGREE_SHARE * block:.1f} "
                         f"(block size {block})", "verification or the draft's hidden-state capture is broken on "
                         "this build (target_layer_ids, --speculative-num-draft-tokens); see the server log")]


async def _collapse_check(session, url: str, key: str | None) -> Check:
    """The random draft: acceptance about 1 must trip ``acceptance_collapse`` (50 requests in a row)."""
    from backends.logs.alarms import WINDOW_REQUESTS

    values: list[float] = []
    batch = await measure(url, key, WINDOW_REQUESTS, COLLAPSE_TOKENS)
    values = batch.request_values
    if not values and batch.counters is not None:  # no per-request field: the counters around each request
        for _ in range(WINDOW_REQUESTS):
            one = await measure(url, key, 1, COLLAPSE_TOKENS, concurrency=1)
            if one.counters is not None:
                values.append(one.counters)
    if not values:
        return Check("collapse_alarm", "skip", "needs acceptance")
    for value in values:
        session.observe_request(value)
    mean = sum(values) / len(values)
    alarm = session.acceptance.alarm
    if alarm is not None:
        return Check("collapse_alarm", "pass", f"random draft: acceptance {mean:.2f}; alarm: {alarm.message}")
    return Check("collapse_alarm", "fail", f"random draft: acceptance {mean:.2f} over {len(values)} requests, "
                 "and no acceptance_collapse alarm", "report this as a ddtune bug (backends/logs/alarms.py)")


def gpu_check(config: ServerConfig, pids: set[int], sampler=None) -> Check:
    from backends.machine.gpu import GpuSampler

    from backends.server import driver_flags

    if driver_flags(config.backend).simulated and "--sim-gpu-alloc-gib" not in " ".join(config.extra_args):
        return Check("gpu", "skip", "the simulator holds no GPU memory (give it --sim-gpu-alloc-gib to test this)")
    sampler = sampler or GpuSampler()
    snap = sampler.sample(pids)
    if not snap.available:
        return Check("gpu", "skip", f"NVML does not work here: {snap.reason}")
    share = snap.server_share
    if share is not None and share.used_bytes > 0:
        return Check("gpu", "pass", share.summary())
    if snap.host_pids:
        return Check("gpu", "fail", "NVML reports pids of another pid namespace: attribution is off",
                     "run ddtune in the server's pid namespace (docker run --pid=host, or inside the container)")
    return Check("gpu", "fail", f"NVML sees no GPU memory of the server's pids {sorted(pids)}",
                 "check CUDA_VISIBLE_DEVICES in [server.env] and that the server runs on this host's GPUs")


async def _stop_check(session, pids: set[int], port: int) -> Check:
    import psutil

    from backends.launch.process import port_owner
    from backends.server import gpu_holders, recorded_server

    def port_in_use(port: int) -> bool:
        return port_owner(port) is not None

    try:
        await session.stop()
    except DdtuneError as exc:
        return Check("stop", "fail", exc.message, exc.hint)
    deadline = time.monotonic() + 15
    left: list[int] = []
    while time.monotonic() < deadline:
        left = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        if not left and not port_in_use(port):
            break
        await asyncio.sleep(0.2)
    record = recorded_server(lambda _: None) is not None
    if left or port_in_use(port) or record:
        what = [f"pids {sorted(left)} alive"] if left else []
        what += [f"port {port} still bound"] if port_in_use(port) else []
        what += ["server.json still recorded"] if record else []
        return Check("stop", "fail", "; ".join(what), "report this as a ddtune bug (backends/launch/ownership.py)")
    holders, why = await asyncio.to_thread(gpu_holders, pids)
    if holders:
        return Check("stop", "fail", f"pids {sorted(holders)} still hold GPU memory after the stop",
                     "kill them; report this as a ddtune bug (backends/launch/ownership.py)")
    gpu = "no GPU memory held" if holders is not None else f"GPU memory not checked: {why}"
    return Check("stop", "pass", f"every process of the server is gone ({len(pids)} pids), port {port} is free, "
                 f"{gpu}")
