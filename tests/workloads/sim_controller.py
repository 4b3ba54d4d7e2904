"""A ServerController for engine tests that starts the simulator directly (no lifecycle layer).

Each configuration gets its own simulator process (own session, killed by process group); knobs
become the simulator's SGLang flags the way the DDTree PR spells them. ``fail`` names configs whose
start must fail (the simulator dies while loading weights).
"""

from __future__ import annotations

import asyncio
import time

from tests.simproc import launch
from workloads.sweep import Applied

BASE = ("--sim-load-seconds", "0.2")


def knob_args(knobs: dict, baseline: bool) -> tuple[tuple[str, ...], dict[str, str]]:
    if baseline:
        return (), {}
    args = ["--speculative-algorithm", "DDTREE", "--speculative-draft-model-path", "demo-draft"]
    env = {}
    if knobs.get("budget") is not None:
        args += ["--speculative-ddtree-budget", str(knobs["budget"])]
    if knobs.get("topk") is not None:
        env["SGLANG_DDTREE_MAX_TOPK"] = str(knobs["topk"])
    if knobs.get("window") is not None:
        args += ["--speculative-draft-window-size", str(knobs["window"])]
    return tuple(args), env


class SimController:
    def __init__(self, log_dir, extra: tuple[str, ...] = (), fail: tuple[str, ...] = ()) -> None:
        self.log_dir = log_dir
        self.extra = extra
        self.fail = fail
        self.current = None  # (name, SimProc)
        self.started: list = []
        self.applied: list[str] = []

    def restart_needed(self, config) -> bool:
        return self.current is None or self.current[0] != config.name

    async def apply(self, config, progress) -> Applied:
        self.applied.append(config.name)
        if not self.restart_needed(config):
            return Applied(True, self.current[1].url, False)
        await self.shutdown()
        progress("starting", config.name)
        t0 = time.monotonic()
        args, env = knob_args(config.knobs, config.baseline)
        extra = self.extra + (("--sim-fail-at", "load") if config.name in self.fail else ())
        sim = await asyncio.to_thread(launch, *BASE, *extra, *args, log_dir=self.log_dir, wait=None, env=env)
        self.started.append(sim)
        try:
            await asyncio.to_thread(sim.wait_for, "The server is fired up and ready to roll!", 60.0)
        except AssertionError as exc:
            sim.kill_group()
            return Applied(False, None, True, str(exc).splitlines()[0], time.monotonic() - t0)
        self.current = (config.name, sim)
        return Applied(True, sim.url, True, None, time.monotonic() - t0, {"loading": 0.1}, {"pid": sim.pid})

    async def shutdown(self) -> None:
        if self.current is not None:
            await asyncio.to_thread(self.current[1].kill_group)
            self.current = None

    def kill_all(self) -> None:
        for sim in self.started:
            sim.kill_group()
