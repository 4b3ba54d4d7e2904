"""SGLang's log line format on stderr (and uvicorn access lines on stdout), plus tqdm-style bars."""

from __future__ import annotations

import sys
import time


def stamp() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())


class LogWriter:
    """Writes ``[YYYY-mm-dd HH:MM:SS] message`` lines; bars redraw with ``\\r`` like tqdm."""

    def __init__(self, err=None, out=None) -> None:
        self.err = err or sys.stderr
        self.out = out or sys.stdout

    def info(self, message: str) -> None:
        self.err.write(f"[{stamp()}] {message}\n")
        self.err.flush()

    def raw(self, text: str) -> None:
        self.err.write(text)
        self.err.flush()

    def access(self, peer: str, method: str, path: str, status: int) -> None:
        reason = REASONS.get(status, "")
        self.out.write(f'[{stamp()}] INFO:     {peer} - "{method} {path} HTTP/1.1" {status} {reason}\n')
        self.out.flush()

    @staticmethod
    def bar(desc: str, n: int, total: int, elapsed: float, style: str = "shards") -> str:
        """One tqdm frame. style 'shards': SGLang's weight-loader bar; 'graphs': the capture bar."""
        pct = 100.0 * n / total if total else 100.0
        rate = n / elapsed if elapsed > 0 and n else 0.0
        remaining = (total - n) / rate if rate else 0.0
        fmt = lambda s: f"{int(s) // 60:02d}:{int(s) % 60:02d}"  # noqa: E731
        if n == 0:
            tail = "[00:00<?, ?it/s]"
        else:
            speed = f"{rate:5.2f}it/s" if rate >= 1 else f"{1 / rate:5.2f}s/it"
            tail = f"[{fmt(elapsed)}<{fmt(remaining)}, {speed}]"
        if style == "shards":
            return f"{desc}: {pct:3.0f}% Completed | {n}/{total} {tail}"
        filled = int(10 * n / total) if total else 10
        bar = "█" * filled + " " * (10 - filled)
        return f"{desc}: {pct:3.0f}%|{bar}| {n}/{total} {tail}"


REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed",
           411: "Length Required", 413: "Payload Too Large", 500: "Internal Server Error", 503: "Service Unavailable"}
