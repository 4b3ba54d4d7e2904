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
    engine: str = "SGLang"       # the engine's label: what ``version`` is a version of
    log_paths: list[str] | None = None

    @property
    def ok(self) -> bool:
        return all(c.status != "fail" for c in self.checks)

    def to_json(self) -> dict:
        return {"ok": self.ok, "backend": self.backend, "engine": self.engine,
                "sglang_version": self.version if self.engine == "SGLang" else None, "engine_version": self.version,
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
    from backends.knobs.engine import engine
    from backends.knobs.plan import help_flags, plan_launch
    from backends.selftest.plan import unknown_flags

    try:
        helptext = backend.learn_help()
    except DdtuneError as exc:
        return Check("flags", "fail", exc.message, exc.hint), None
    unknown = unknown_flags(derived.extra_args, help_flags(helptext.text))
    version = helptext.version
    on = f"{engine(derived.engine).label} {version}" if version else "this server"
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


def draft_runner_check(state, config: ServerConfig, name: str = "draft_runner", test=None) -> Check:
    """The requested draft settings (SGLang: window and compact cache; llama.cpp: n_max), as the
    server's draft line (or /server_info) says them: verified, or the server's default when unset
    (``test``: the engine's, backends.selftest.engines; SGLang's when not given)."""
    if test is not None and test.default_ok:
        checks = _knob_checks(state, test.draft_settings)
        bad = [c for c in checks if c.status not in ("verified", "default")]
        said = "; ".join(c.sentence for c in checks) or f"no {' or '.join(test.draft_settings)} check"
        if not checks or bad:
            return Check(name, "fail", said, f"the {test.draft_line} did not say what was requested: read the "
                         "server log; a knob clamped by the draft's block shows as a mismatch")
        return Check(name, "pass", said)
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


async def _acceptance_checks(url: str, key: str | None, block: int, test, config: ServerConfig,
                             effective: dict | None = None) -> list[Check]:
    """Acceptance readable, and the agreeing draft near what one step can yield (SGLang: the block
    size; llama.cpp: n_max + 1, n_max at most the block - 1). ``test``: the engine's."""
    measured = await measure(url, key, REQUESTS, test.tokens, dialect=test.dialect)
    if measured.errors and len(measured.errors) == REQUESTS:
        return [Check("acceptance", "fail", f"no request succeeded: {measured.errors[0]}",
                      "look at the server log (server_logs in --json)")]
    if measured.value is None:
        return [Check("acceptance", "fail", f"no acceptance in the {test.dialect.generate_path} answers and no "
                      "speculative counters in /metrics: bench, load and the collapse guard "
                      "cannot read acceptance on this server",
                      "run the server with its metrics switch (ddtune adds --enable-metrics / --metrics where "
                      "--help lists it), or a release that reports acceptance per request"),
                Check("agree", "skip", "needs acceptance")]
    where = {"request": f"per request ({test.dialect.generate_path} answers)", "counters": "from /metrics counters"}
    first = Check("acceptance", "pass", f"readable {where[measured.source or 'counters']}"
                  + (f"; counters agree: {measured.counters:.2f}" if measured.counters and measured.request_values
                     else "") + _drafts_text(measured.drafts))
    value = measured.value
    ceiling = test.ceiling(config, block, effective or {})
    what = f"{test.ceiling_label} {block}" if ceiling == block and not test.start_at_block \
        else f"{test.ceiling_label} = {ceiling:.0f} (draft block {block})"
    if value >= AGREE_SHARE * ceiling:
        return [first, Check("agree", "pass", f"agreeing draft: acceptance {value:.2f} of {what}")]
    want = AGREE_SHARE * ceiling
    return [first, Check("agree", "fail", f"agreeing draft: acceptance {value:.2f}, want >= {want:.1f} ({what})",
                         "verification or the draft's hidden-state capture is broken on "
                         "this build (target layers, the draft's block size); see the server log")]


def _drafts_text(drafts) -> str:
    """llama.cpp's own draft counters over the batch: rate, mean length, survival per position."""
    if drafts is None or not drafts.drafts:
        return ""
    per = " ".join(f"{n:.0f}" for n in drafts.per_position)
    return (f"; llamacpp:spec_decode_* counters: {drafts.accepted:.0f}/{drafts.drafted:.0f} drafted tokens "
            f"accepted, mean len {drafts.mean_len:.2f} over {drafts.drafts:.0f} drafts, accepted per position [{per}]")


async def _collapse_check(session, url: str, key: str | None, dialect=None) -> Check:
    """The random draft: acceptance about 1 must trip ``acceptance_collapse`` (50 requests in a row)."""
    from backends.launch.dialect import SGLANG
    from backends.logs.alarms import WINDOW_REQUESTS

    dialect = dialect or SGLANG
    values: list[float] = []
    batch = await measure(url, key, WINDOW_REQUESTS, COLLAPSE_TOKENS, dialect=dialect)
    values = batch.request_values
    if not values and batch.counters is not None:  # no per-request field: the counters around each request
        for _ in range(WINDOW_REQUESTS):
            one = await measure(url, key, 1, COLLAPSE_TOKENS, concurrency=1, dialect=dialect)
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
