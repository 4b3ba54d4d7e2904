"""The real-server tier: ddtune's whole loop, through its own commands, on a real SGLang + DFlash server.

Given an interpreter with SGLang and two tiny model pairs (a draft that agrees with its target and one
that does not; see docs/real-sglang.md for how they are built on the lent H200), it runs, each step a
PASS/FAIL line:

  up with a window -> the draft runner's window verified -> restart to another window, verified, with
  its phases -> bench (acceptance not null, within 3% of the server's own counters over the same run)
  -> load windows with acceptance and its source -> the console, headless, with a screenshot -> down,
  with nothing of the server left -> (--lanes) -> a random draft, whose acceptance must raise the
  collapse alarm -> down again.

``--lanes`` then runs two lanes on GPU 0 (``--share-gpu``; benchmarks/real_lanes.py). ``--compare``
puts SGLang's own ``bench_serving`` beside ``ddtune bench --release staggered`` on the same server and
cells (each cell long enough: --cell-seconds, several rounds, interleaved) and prints the ratios of
output tok/s and mean TTFT. ``--record DIR`` keeps the first server's HTTP answers for the simulator's
conformance suite (benchmarks/record_sglang.py); ``--expect-source`` names where acceptance must come from.

  python3 benchmarks/real_sglang.py --python PY --agree DIR --random DIR [--lanes] [--compare] [--out DIR]
      DIR holds target/ and draft/; PY must import sglang. Extra SGLang flags after --.

Figures are printed, never asserted by the test suite (this is a benchmark, run by hand on a GPU).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.realtier import (  # noqa: E402
    PORT, REPO, check, counters, ddtune, failures, gpu_used_mib, server_pids, status, window_check, write_config,
)

CONSOLE = """
import asyncio, json, sys
from backends.knobs.config import load_config
from tui.app import DdtuneApp
from tui.controller import ConsoleController

async def main():
    app = DdtuneApp(ConsoleController(load_config(sys.argv[1]), simulated=False))
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause(3.0)
        await pilot.press("l")  # the coding load, so the plots have something to draw
        for _ in range(int(float(sys.argv[3]) / 0.5)):
            await pilot.pause(0.5)
        app.save_screenshot(sys.argv[2])
        main = app.main
        print(json.dumps({"gpu": main.gpu.view.server_summary if main.gpu.view else None}))
        await app.controller.detach(stop_server=False)

asyncio.run(main())
"""


def loop(args, work: Path, out: Path) -> None:
    agree = write_config(work / "agree.toml", args, "agree", 512)
    up = ddtune(agree, "up")
    if not check(up.returncode == 0, "up: the real server became ready by ddtune's readiness"):
        shutil_copy(Path(os.environ["DDTUNE_STATE_DIR"]) / "logs", out)
        raise SystemExit("the first start failed: nothing after it can pass (its log is in --out)")
    doc = status(agree)
    w = window_check(doc)
    check(w.get("status") == "verified" and w.get("effective") == 512, f"window 512 verified: {w}")
    if args.record and up.returncode == 0:
        record(Path(args.record))
    restart = ddtune(agree, "restart", "--set", "window=1024")
    phases = re.findall(r"^(?:\[[^]]*\] )?([a-z-]+)\b", restart.stderr, re.M)
    check(restart.returncode == 0 and {"stopping-old", "loading-weights"} <= set(phases),
          f"restart to window 1024 with its phases ({sorted(set(phases))})")
    w = window_check(status(agree))
    check(w.get("status") == "verified" and w.get("effective") == 1024, f"window 1024 verified: {w}")
    before = counters()
    bench = ddtune(agree, "bench", "--contexts", "60", "--concurrency", "1", "8", "--max-tokens", "256",
                   "--requests-per-cell", "16", "--warmup", "0", "--json")
    after = counters()
    run = json.loads(bench.stdout) if bench.returncode == 0 else {}
    (out / "bench_agree.json").write_text(bench.stdout)
    cells = run.get("cells", [])
    accs = [c.get("acceptance") or {} for c in cells]
    seen = [(c["concurrency"], a.get("total"), a.get("source")) for c, a in zip(cells, accs, strict=True)]
    check(bool(cells) and all(a.get("total") for a in accs), f"bench acceptance not null: {seen}")
    if args.expect_source:
        check(bool(cells) and all(a.get("source") == args.expect_source for a in accs),
              f"bench acceptance from source {args.expect_source!r}: {seen}")
    if after[1] > before[1]:
        truth = (after[0] - before[0]) / (after[1] - before[1])
        tok = sum(a.get("tokens") or 0 for a in accs)
        calls = sum(a.get("verify_calls") or 0 for a in accs)
        ours = tok / calls if calls else (statistics.fmean(a["total"] for a in accs) if accs else 0)
        check(abs(ours - truth) <= 0.03 * truth, f"bench acceptance {ours:.3f} within 3% of the counters' {truth:.3f}")
    for c in cells:
        print(f"  cell c={c['concurrency']}: {c.get('output_tok_s', 0):.0f} tok/s, ttft p50 "
              f"{(c.get('ttft_ms') or {}).get('p50')} ms", flush=True)
    load = ddtune(agree, "load", "--concurrency", "8", "--duration", "10", "--window", "5", "--json", timeout=120)
    (out / "load_agree.json").write_text(load.stdout)
    summary = json.loads(load.stdout) if load.returncode == 0 and load.stdout.strip() else {}
    windows = summary.get("windows", [])
    check(bool(windows) and any(w.get("acceptance") for w in windows),
          f"load windows with acceptance: {[(w.get('acceptance'), w.get('acceptance_source')) for w in windows][:4]}")
    if args.expect_source:
        sources = {w.get("acceptance_source") for w in windows if w.get("acceptance")}
        check(sources == {args.expect_source},
              f"load acceptance from source {args.expect_source!r}: {sorted(map(str, sources))}")
    console_check(agree, out)
    shutil_copy(Path(os.environ["DDTUNE_STATE_DIR"]) / "logs", out)
    down_check(agree)


def collapse(args, work: Path, out: Path) -> None:
    """A random draft: its acceptance must raise the collapse alarm (run last: --lanes goes before it)."""
    rand = write_config(work / "random.toml", args, "random", 1024)
    ddtune(rand, "up", "--apply-config")
    ddtune(rand, "load", "--concurrency", "8", "--duration", "25", "--json", timeout=120)
    alarms = status(rand).get("alarms", [])
    check(any("collapse" in json.dumps(a) for a in alarms), f"a random draft raised the collapse alarm: {alarms}")
    shutil_copy(Path(os.environ["DDTUNE_STATE_DIR"]) / "logs", out)
    down_check(rand)


def record(folder: Path) -> None:
    """The server's HTTP answers, raw, for the simulator's conformance suite (benchmarks/record_sglang.py)."""
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("record_sglang.py")),
                           f"http://127.0.0.1:{PORT}", str(folder)], capture_output=True, text=True, timeout=240)
    check(done.returncode == 0, f"recorded the server's answers in {folder}: {(done.stdout or done.stderr)[-300:]}")


def console_check(config: Path, out: Path) -> None:
    """The console, headless at 200x50, on the running server for 10 s of its coding load."""
    shot = out / "console_real.svg"
    done = subprocess.run([sys.executable, "-c", CONSOLE, str(config), str(shot), "10"], cwd=REPO,
                          capture_output=True, text=True, timeout=180)
    check(done.returncode == 0 and shot.exists(), f"the console ran headless, screenshot {shot.name}: "
          f"{done.stdout.strip()[-300:] or done.stderr.strip()[-300:]}")


def down_check(config: Path) -> None:
    down = ddtune(config, "down")
    time.sleep(2)
    check(down.returncode == 0 and not server_pids() and not gpu_used_mib(),
          f"down left nothing: pids {server_pids()}, GPU apps {gpu_used_mib()}")


def selftest(args, work: Path, out: Path) -> None:
    """``ddtune selftest`` on this SGLang with the tier's flags: every check must pass; with the window
    routed to an env var the server ignores, the draft_runner check must fail."""
    config = write_config(work / "selftest.toml", args, "agree", 512)
    for name, extra in (("selftest", ""), ("selftest_ignored_window",
                                           '[knobs.map]\nwindow = { env = "DDTUNE_IGNORED_WINDOW" }\n')):
        if extra:
            config.write_text(config.read_text() + extra)
        t0 = time.monotonic()
        done = ddtune(config, "selftest", "--json", timeout=590)
        took = time.monotonic() - t0
        (out / f"{name}.json").write_text(done.stdout)
        try:
            doc = json.loads(done.stdout)
        except ValueError:
            check(False, f"{name}: one JSON document ({done.stderr[-500:]})")
            continue
        for c in doc.get("checks", []):
            print(f"  {c.get('status', '?').upper():4} {c.get('name')}: {c.get('detail', '')}"[:300], flush=True)
        status = {c.get("name"): c.get("status") for c in doc.get("checks", [])}
        if extra:
            check(done.returncode == 1 and status.get("draft_runner") == "fail",
                  f"{name}: the ignored window fails draft_runner (exit {done.returncode}, {took:.0f} s)")
        else:
            check(done.returncode == 0 and all(v in ("pass", "skip") for v in status.values()),
                  f"{name}: every check passed in {took:.0f} s (exit {done.returncode}): {status}")


def shutil_copy(logs: Path, out: Path) -> None:
    for path in sorted(logs.glob("server-*.log"))[-3:]:
        (out / path.name).write_bytes(path.read_bytes()[-4_000_000:])


def bench_serving(args, concurrency: int, prompts: int) -> dict:
    """SGLang's own bench_serving on the same server and cell; its JSONL line."""
    result = Path(f"/tmp/bs-{concurrency}-{time.monotonic_ns()}.jsonl")
    model = str(Path(args.agree) / "target")
    for module in ("sglang.bench_serving", "sglang.benchmark.serving"):
        argv = [args.python, "-m", module, "--backend", "sglang", "--host", "127.0.0.1", "--port", str(PORT),
                "--model", model, "--tokenizer", model, "--dataset-name", "random-ids", "--random-input-len", "60",
                "--random-output-len", "256", "--random-range-ratio", "1", "--num-prompts", str(prompts),
                "--max-concurrency", str(concurrency), "--output-file", str(result), "--warmup-requests", "1"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=dict(os.environ))
        if result.exists():
            return json.loads(result.read_text().strip().splitlines()[-1])
        if "No module named" not in done.stderr:
            print(done.stderr[-1500:], flush=True)
            break
    return {}


def ddtune_cell(config: Path, concurrency: int, requests: int) -> dict:
    done = ddtune(config, "bench", "--contexts", "60", "--concurrency", str(concurrency), "--max-tokens", "256",
                  "--requests-per-cell", str(requests), "--release", "staggered", "--json")
    cells = json.loads(done.stdout).get("cells", []) if done.returncode == 0 else []
    return cells[0] if cells else {}


def compare(args, work: Path, out: Path) -> None:
    agree = write_config(work / "agree.toml", args, "agree", 1024)
    check(ddtune(agree, "up", "--apply-config").returncode == 0, "up for the comparison")
    if args.skip_loop:
        console_check(agree, out)
    rows = []
    for concurrency in args.compare_concurrency:
        probe = ddtune_cell(agree, concurrency, 2 * concurrency)
        seconds = probe.get("duration_s") or 1.0
        requests = max(2 * concurrency, math.ceil(args.cell_seconds / seconds * 2 * concurrency))
        print(f"  c={concurrency}: {requests} requests per cell (~{args.cell_seconds:.0f} s)", flush=True)
        for rnd in range(args.rounds):
            order = ("ddtune", "bench_serving") if rnd % 2 == 0 else ("bench_serving", "ddtune")
            got = {}
            for who in order:
                if who == "ddtune":
                    cell = ddtune_cell(agree, concurrency, requests)
                    ttft_ms = (cell.get("ttft_ms") or {}).get("mean")
                    got[who] = (cell.get("output_tok_s"), ttft_ms / 1000 if ttft_ms is not None else None)
                else:
                    line = bench_serving(args, concurrency, requests)
                    ttft = line.get("mean_ttft_ms")
                    got[who] = (line.get("output_throughput"), ttft / 1000 if ttft is not None else None)
            rows.append({"concurrency": concurrency, "round": rnd, "requests": requests, **{
                f"{who}_{k}": v for who, (a, b) in got.items() for k, v in (("tok_s", a), ("ttft_s", b))}})
            print(f"  {json.dumps(rows[-1])}", flush=True)
    (out / "compare.json").write_text(json.dumps(rows, indent=1))
    for concurrency in args.compare_concurrency:
        mine = [r for r in rows if r["concurrency"] == concurrency
                and r.get("ddtune_tok_s") and r.get("bench_serving_tok_s")]
        if not mine:
            check(False, f"c={concurrency}: both tools measured")
            continue
        tok = [r["ddtune_tok_s"] / r["bench_serving_tok_s"] for r in mine]
        ttft = [r["ddtune_ttft_s"] / r["bench_serving_ttft_s"] for r in mine
                if r.get("ddtune_ttft_s") and r.get("bench_serving_ttft_s")]
        print(f"RATIO c={concurrency}: ddtune/bench_serving tok/s {statistics.median(tok):.3f} "
              f"(rounds {', '.join(f'{x:.3f}' for x in tok)}); TTFT "
              + (f"{statistics.median(ttft):.3f} (rounds {', '.join(f'{x:.3f}' for x in ttft)})" if ttft else "n/a"),
              flush=True)
    down_check(agree)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", required=True, help="interpreter that imports sglang")
    parser.add_argument("--agree", required=True, help="folder with target/ and an agreeing draft/")
    parser.add_argument("--random", required=True, help="folder with target/ and a random draft/")
    parser.add_argument("--env", action="append", default=[], metavar="K=V", help="[server.env] entries")
    parser.add_argument("--out", default=os.environ.get("OUT", "/tmp/real_sglang"))
    parser.add_argument("--skip-loop", action="store_true")
    parser.add_argument("--record", metavar="DIR", default=None,
                        help="once the first server is up, record its HTTP answers in DIR (record_sglang.py)")
    parser.add_argument("--expect-source", choices=("request", "counters", "log"), default=None,
                        help="where bench and load must read acceptance (request: sglang 0.5.19+ sends it per "
                             "request on chat; counters: 0.5.17)")
    parser.add_argument("--compare", action="store_true", help="bench_serving beside ddtune bench")
    parser.add_argument("--selftest", action="store_true", help="ddtune selftest on this SGLang, twice")
    parser.add_argument("--lanes", action="store_true", help="two lanes sharing GPU 0 (benchmarks/real_lanes.py), "
                        "after the loop and before its random draft")
    parser.add_argument("--compare-concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--cell-seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("sglang_args", nargs=argparse.REMAINDER, help="-- then extra SGLang flags")
    args = parser.parse_args()
    args.sglang_args = [a for a in args.sglang_args if a != "--"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path("/tmp/real_sglang_work")
    work.mkdir(exist_ok=True)
    os.environ.setdefault("DDTUNE_STATE_DIR", str(work / "state"))
    t0 = time.monotonic()
    try:
        if not args.skip_loop:
            loop(args, work, out)
        if args.compare:
            compare(args, work, out)
        if args.selftest:
            selftest(args, work, out)
        if args.lanes:
            from benchmarks.real_lanes import shared_lanes

            shared_lanes(args, work, out)
        if not args.skip_loop:
            collapse(args, work, out)
    finally:
        if server_pids():
            ddtune(next((c for c in (work / "agree.toml", work / "lanes.toml") if c.exists()), work / "agree.toml"),
                   "down")
    print(f"{len(failures)} failure(s) in {time.monotonic() - t0:.0f} s", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
