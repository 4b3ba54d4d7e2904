"""Does ``ddtune search`` find the simulator's known best, and with how many restarts against a grid?

For each seed: a fresh state dir and a simulator backend with ``--sim-seed SEED`` (the seed of the
acceptance sampling, so each seed is another draw of measurement noise), nothing running, then
``ddtune search --space SPACE`` at the target cell. A search *finds* the best when its answer is
the first of ``backends.sim.model.space_ranking`` at the target; the grid restarts once per
configuration (27 for the default space). Target: found in >= 9 of 10 seeds with <= 40% of the
grid's restarts.

    python benchmarks/search_restarts.py [--seeds 10] [--jobs 2]          the real simulator (~2 min a seed)
    python benchmarks/search_restarts.py --offline 1000 [--sigma 0.02]    the strategy alone on the model
    python benchmarks/search_restarts.py --lanes 2 [--seeds 3]            serial vs --parallel 2: wall time

``--offline`` drives the same strategy (workloads.search.strategy) with per-wave samples drawn from
the model's wave throughput (prefill included) times 1 + N(0, sigma), from the middle of the space
(as the real runs) and from a random running configuration, in milliseconds a search.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from backends.sim import model  # noqa: E402
from workloads.search.space import SearchSpace, parse_space  # noqa: E402
from workloads.search.strategy import Observation, Search, SearchOptions  # noqa: E402

SPACE = "budget=4,8,16 topk=2,4,6 window=1024,2048,none"


def ranking(space: SearchSpace, context: int, concurrency: int) -> list[tuple[float, dict]]:
    return model.space_ranking(context, concurrency, {name: values for name, values in space.axes})


def one_seed(seed: int, opts, extra: tuple[str, ...] = ()) -> dict:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "ddtune.toml"
        cfg.write_text(f'[server]\nbackend = "sim"\nport = {port}\nready_timeout_s = 120\n'
                       f'extra_args = ["--sim-load-seconds", "{opts.load_seconds}", "--sim-seed", "{seed}"]\n')
        env = dict(os.environ, DDTUNE_STATE_DIR=str(Path(tmp) / "state"), PYTHONPATH=str(REPO))
        cmd = [sys.executable, "-m", "tui.cli", "--config", str(cfg), "search", "--space", opts.space,
               "--target-context", str(opts.target_context), "--target-concurrency", str(opts.target_concurrency),
               "--max-tokens", str(opts.max_tokens), "--out", str(Path(tmp) / "search"), "--json", *opts.extra, *extra]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            return {"seed": seed, "error": r.stderr[-1500:], "wall_s": wall}
        summary = json.loads(r.stdout)
        rounds = [json.loads(line) for line in (Path(tmp) / "search" / "rounds.jsonl").read_text().splitlines()]
    spread = [statistics.stdev(o["samples"]) / statistics.mean(o["samples"])
              for rd in rounds for o in rd["observations"] if len(o["samples"]) >= 2]
    return {"seed": seed, "summary": summary, "wall_s": wall, "wave_spread": statistics.median(spread)}


def real(opts) -> None:
    space = parse_space(opts.space)
    top = ranking(space, opts.target_context, opts.target_concurrency)
    best = top[0][1]
    print(f"space {opts.space}: {space.size} configurations; target context {opts.target_context}, "
          f"concurrency {opts.target_concurrency}, {opts.max_tokens} tokens")
    print("model's ranking: " + "; ".join(f"{' '.join(f'{k}={v}' for k, v in knobs.items())} {speed:.0f}"
                                          for speed, knobs in top[:3]) + " tok/s (steady state)")
    with ThreadPoolExecutor(opts.jobs) as pool:
        results = list(pool.map(lambda seed: one_seed(seed, opts), range(1, opts.seeds + 1)))
    cap = 0.4 * space.size
    print(f"{'seed':>4}  {'found':>5}  {'restarts':>8}  {'measured':>8}  {'rounds':>6}  {'wall s':>6}  best (margin)")
    found = within = both = 0
    used: list[int] = []
    for r in results:
        if "error" in r:
            print(f"{r['seed']:>4}  ERROR {r['error']}")
            continue
        s = r["summary"]
        ok = s["best"] is not None and s["best"]["knobs"] == best
        n = s["restarts"]["used"]
        found, within, both = found + ok, within + (n <= cap), both + (ok and n <= cap)
        used.append(n)
        m = s["margin"] or {}
        margin = f"{(m.get('value', 1) - 1) * 100:+.1f}%" + (" clear" if s["clear"] else "")
        print(f"{r['seed']:>4}  {'yes' if ok else 'NO':>5}  {n:>8}  {len(s['measured']):>8}  {s['rounds']:>6}  "
              f"{r['wall_s']:>6.0f}  {s['best']['label'] if s['best'] else '-'} ({margin})")
    if used:
        print(f"found the model's best in {found}/{len(results)} seeds; restarts mean {statistics.mean(used):.1f}, "
              f"max {max(used)} of the grid's {space.size} ({statistics.mean(used) / space.size:.0%} on average); "
              f"<= 40% of the grid ({cap:.1f}) in {within}/{len(results)}; both in {both}/{len(results)}")
        spread = statistics.median(r["wave_spread"] for r in results if "wave_spread" in r)
        print(f"per-wave tok/s spread (median relative sd): {spread:.1%}; "
              f"wall per search: median {statistics.median(r['wall_s'] for r in results):.0f} s")


def lanes(opts) -> None:
    """Serial vs ``--parallel N`` on the same seeds, one search at a time (they would share the CPU)."""
    space = parse_space(opts.space)
    best = ranking(space, opts.target_context, opts.target_concurrency)[0][1]
    gpus = ",".join(str(i) for i in range(opts.lanes))
    print(f"space {opts.space}: {space.size} configurations; {opts.load_seconds} s simulated load; "
          f"serial vs --parallel {opts.lanes} --gpus {gpus}")
    print(f"{'seed':>4}  {'mode':>8}  {'found':>5}  {'restarts':>8}  {'rounds':>6}  {'wall s':>6}")
    ratios = []
    for seed in range(1, opts.seeds + 1):
        walls = {}
        for mode, extra in (("serial", ()), (f"{opts.lanes} lanes", ("--parallel", str(opts.lanes), "--gpus", gpus))):
            r = one_seed(seed, opts, extra)
            if "error" in r:
                print(f"{seed:>4}  {mode:>8}  ERROR {r['error']}")
                continue
            s = r["summary"]
            walls[mode] = r["wall_s"]
            found = s["best"] is not None and s["best"]["knobs"] == best
            print(f"{seed:>4}  {mode:>8}  {'yes' if found else 'NO':>5}  {s['restarts']['used']:>8}  "
                  f"{s['rounds']:>6}  {r['wall_s']:>6.1f}")
        if len(walls) == 2:
            ratios.append(walls[f"{opts.lanes} lanes"] / walls["serial"])
    if ratios:
        print(f"wall time --parallel {opts.lanes} / serial: median {statistics.median(ratios):.2f} "
              f"(each: {', '.join(f'{x:.2f}' for x in ratios)}); os.cpu_count() = {os.cpu_count()}")


def wave_truth(point, space: SearchSpace, opts) -> float:
    knobs = {k: v for k, v in space.knob_values(point).items() if isinstance(v, int)}  # window none: absent
    decode = model.tokens_per_second(model.ddtree(knobs["budget"], knobs["topk"], knobs.get("window")),
                                     opts.target_context, opts.target_concurrency)
    tokens = opts.target_concurrency * opts.max_tokens
    prefill_s = model.prefill_ms(opts.target_concurrency * opts.target_context) / 1000
    return tokens / (prefill_s + tokens / decode)


def offline(opts) -> None:
    space = parse_space(opts.space)
    truth = {p: wave_truth(p, space, opts) for p in space.grid()}
    best = max(truth, key=truth.__getitem__)
    options = SearchOptions(waves=opts.waves, passes=opts.passes)
    print(f"offline: {opts.offline} searches per start, per-wave noise {opts.sigma:.1%}, waves {opts.waves}, "
          f"passes {opts.passes}; the model's best {space.label(best)}")
    for start_mode in ("middle", "random"):
        rng = random.Random(0)
        found, used = 0, []
        for _ in range(opts.offline):
            start = space.middle() if start_mode == "middle" else rng.choice(space.grid())
            running = None if start_mode == "middle" else start
            search = Search(space, options, start, running)
            while (plan := search.propose()) is not None:
                observations = []
                for ask in plan.asks:
                    samples = tuple(truth[ask.point] * (1 + rng.gauss(0, opts.sigma)) for _ in range(ask.waves))
                    observations.append(Observation(ask.point, samples, ask.point != running))
                    running = ask.point
                search.observe(observations)
            found += search.best == best
            used.append(search.restarts)
        within = sum(n <= 0.4 * space.size for n in used)
        print(f"  start {start_mode:<6}: found {found / opts.offline:.1%}; restarts mean {statistics.mean(used):.1f}, "
              f"max {max(used)} of {space.size}; <= 40% of the grid in {within / opts.offline:.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=2, help="searches at once (each its own simulator)")
    ap.add_argument("--space", default=SPACE)
    ap.add_argument("--target-context", type=int, default=4096)
    ap.add_argument("--target-concurrency", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--load-seconds", default="0.2")
    ap.add_argument("--offline", type=int, default=0, metavar="N", help="N model-only searches per start instead")
    ap.add_argument("--sigma", type=float, default=0.02, help="offline: relative sd of a wave's tok/s")
    ap.add_argument("--waves", type=int, default=4)
    ap.add_argument("--passes", type=int, default=1)
    ap.add_argument("--lanes", type=int, default=0, metavar="N",
                    help="time serial against --parallel N on the simulator, seed by seed")
    opts, extra = ap.parse_known_args()
    opts.extra = extra  # passed on to ddtune search (e.g. --waves 6 --passes 2)
    offline(opts) if opts.offline else lanes(opts) if opts.lanes else real(opts)


if __name__ == "__main__":
    main()
