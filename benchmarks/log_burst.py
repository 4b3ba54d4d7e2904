"""A server log burst through the console's log pane: is a key press still answered quickly, and does
memory stay bounded? Prints figures; nothing here is asserted anywhere.

    python benchmarks/log_burst.py                         # 1000 lines/s for 10 s, 200x50
    python benchmarks/log_burst.py --rate 5000 --seconds 20

The real app (DdtuneApp, headless under Textual's Pilot, rendering every frame) with no controller:
this script plays the controller's part exactly as tui/controller.py does it, buffering lines and
every --flush seconds turning the buffer into LogLines with ``logkind.read_lines`` and posting one
``LogLinesRead`` to the main screen. The lines are a busy server's mix (access, prefill/decode,
chatter, tracebacks). A search is kept active (on "scheduler.py"), so every drawn row is also searched.

While the burst runs, a key is pressed every --key-every seconds, cycling pageup, end, n (search jump)
and f (filter: rebuilds the view from the history); a key that could not change anything in the
state it finds (pageup at the top, n with fewer than two matches) is skipped. A press is posted as a
real key event (what the terminal driver does); it counts as answered when its effect is in the
pane's state ("handled") and when the next frame after that has been drawn ("on screen"). The
event-loop lag (how late a 10 ms sleep wakes) is sampled beside it. Memory: the process RSS before,
halfway and at the end of the burst, and the pane's line count against its bound.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

import psutil
from textual import events

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from backends.logs.kind import read_lines  # noqa: E402
from tui import messages as m  # noqa: E402
from tui.app import DdtuneApp  # noqa: E402
from tui.widgets.log_pane import LogPane  # noqa: E402

from benchmarks.logparse_speed import MIX  # noqa: E402  (the same busy-server mix as the parser benchmark)

KEYS = ("pageup", "end", "n", "f")
QUERY = "scheduler.py"  # on the traceback lines: matches under the "all" and "errors" filters


def mix(n: int) -> list[str]:
    """n lines cycling through MIX by weight, each made unique so nothing is cached by accident."""
    pool = [text for weight, text in MIX for _ in range(weight)]
    return [f"{pool[i % len(pool)]} #{i}" for i in range(n)]


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


async def run(rate: int, seconds: float, flush_s: float, key_every: float, size: tuple[int, int]) -> None:
    proc = psutil.Process(os.getpid())
    app = DdtuneApp()
    lines = mix(int(rate * seconds) + rate)
    latencies: list[tuple[float, float]] = []
    pressed: list[str] = []
    lags: list[float] = []
    flush_costs: list[float] = []
    rss: list[tuple[str, float]] = []
    async with app.run_test(size=size) as pilot:
        pane = app.main.query_one("#log", LogPane)
        pane.highlight(QUERY)
        await pilot.pause()
        rss.append(("before", proc.memory_info().rss / 2**20))
        start = time.perf_counter()
        cpu0 = time.process_time()
        sent = 0
        done = False

        async def producer() -> None:
            nonlocal sent, done
            while (now := time.perf_counter() - start) < seconds:
                due = min(len(lines), int(now * rate))
                if due > sent:
                    t0 = time.perf_counter()
                    batch = read_lines(lines[sent:due])  # what the controller's flush does
                    app.main.post_message(m.LogLinesRead(tuple(batch)))
                    flush_costs.append(time.perf_counter() - t0)
                    sent = due
                if not rss or rss[-1][0] == "before" and now >= seconds / 2:
                    rss.append(("halfway", proc.memory_info().rss / 2**20))
                await asyncio.sleep(flush_s)
            done = True

        async def lag() -> None:
            while not done:
                t0 = time.perf_counter()
                await asyncio.sleep(0.01)
                lags.append(time.perf_counter() - t0 - 0.01)

        def key_and_effect(key: str):
            """The key's effect as a predicate on the pane, or None where it could change nothing."""
            y, row, name = round(pane.scroll_y), pane.current_match, pane.filter
            if key == "pageup":
                return (lambda: round(pane.scroll_y) < y) if y > 0 else None
            if key == "end":
                return (lambda: pane.follow and pane.scroll_y == pane.max_scroll_y) if not pane.follow else None
            if key == "n":
                hits = sum(QUERY in text for text in pane.lines)
                return (lambda: pane.current_match is not None and pane.current_match != row) if hits > 1 else None
            return lambda: pane.filter != name

        async def press(key: str) -> None:
            effect = key_and_effect(key)
            if effect is None:
                return
            t0 = time.perf_counter()
            app.post_message(events.Key(key, key if len(key) == 1 else None))
            while not effect():
                if time.perf_counter() - t0 > 5:
                    raise RuntimeError(f"key {key!r} had no effect in 5 s")
                await asyncio.sleep(0.001)
            handled = time.perf_counter()
            drawn = asyncio.get_running_loop().create_future()
            pane.call_after_refresh(lambda: drawn.set_result(time.perf_counter()))
            latencies.append((handled - t0, await drawn - t0))
            pressed.append(key)

        tasks = [asyncio.create_task(producer()), asyncio.create_task(lag())]
        pane.focus()
        i = 0
        while not done:
            await asyncio.sleep(key_every)
            if not done:
                await press(KEYS[i % len(KEYS)])
                i += 1
        await asyncio.gather(*tasks)
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu0
        await pilot.pause()
        rss.append(("end", proc.memory_info().rss / 2**20))
        shown, bound, filt = pane.line_count, pane.max_lines, pane.filter

    print(f"log burst: {sent} lines in {wall:.1f} s ({sent / wall:.0f} lines/s), flushed every {flush_s} s, "
          f"terminal {size[0]}x{size[1]}, search active")
    for label, ms in (("handled", [h * 1000 for h, _ in latencies]), ("on screen", [d * 1000 for _, d in latencies])):
        print(f"key press {label:9} (n={len(ms)}, keys {'/'.join(KEYS)}): median {statistics.median(ms):.1f} ms, "
              f"p95 {pct(ms, 0.95):.1f} ms, max {max(ms):.1f} ms  (target < 100 ms)")
    drawn = list(zip(pressed, (d for _, d in latencies), strict=True))
    by_key = {key: max((d for k, d in drawn if k == key), default=None) for key in KEYS}
    print("  slowest on screen per key: " + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in by_key.items() if v))
    lag_ms = [x * 1000 for x in lags]
    print(f"event-loop lag (10 ms sleeps, n={len(lag_ms)}): median {statistics.median(lag_ms):.1f} ms, "
          f"p95 {pct(lag_ms, 0.95):.1f} ms, max {max(lag_ms):.1f} ms")
    fc = [x * 1000 for x in flush_costs]
    print(f"flush (read_lines + post) per batch: median {statistics.median(fc):.1f} ms, max {max(fc):.1f} ms; "
          f"process CPU over the burst: {100 * cpu / wall:.0f}% of one core (parse + render, headless)")
    print("memory (RSS): " + ", ".join(f"{name} {mib:.1f} MiB" for name, mib in rss)
          + f"; pane holds {shown} lines under filter {filt!r} (bound {bound})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=int, default=1000, help="log lines per second (default 1000)")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--flush", type=float, default=0.25, help="batch period, as the controller's LOG_FLUSH_S")
    ap.add_argument("--key-every", type=float, default=0.2, help="seconds between key presses")
    ap.add_argument("--size", default="200x50", help="terminal COLSxROWS")
    args = ap.parse_args()
    cols, rows = (int(v) for v in args.size.split("x"))
    asyncio.run(run(args.rate, args.seconds, args.flush, args.key_every, (cols, rows)))


if __name__ == "__main__":
    main()
