"""A hostile (or broken) HTTP server of the tests' own on 127.0.0.1: it plays an SGLang server
(``/generate``, ``/v1/chat/completions``, ``/server_info``, ``/v1/models``) and, route by route,
serves what the red team served ddtune: a gzip bomb, an endless stream, a trickle of one byte at a
time, a huge chunk size, ``Content-Length: abc``, deep JSON, absurd numbers (1e400, 400 digits,
NaN, negative counts, -3e40 acceptance) and ``/server_info`` strings with line breaks and ANSI escapes.

Raw sockets, so every byte of the framing is the test's. ``HostileServer(routes)`` runs in a thread
of the test process (``with`` it); ``python -m tests.hostile_http --port P ROUTE=BEHAVIOUR ...`` runs
it as a process of its own. ``routes`` maps a path to a behaviour name of ``BEHAVIOURS``; a path not
named answers as a well-behaved server would.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import socketserver
import subprocess
import tempfile
import threading
import time
import zlib
from collections.abc import Callable
from functools import cache

from tests.helpers import REPO, ddtune_cmd, ddtune_env

TRICKLE_S = 0.3          # "trickle": one byte every TRICKLE_S seconds, faster than the tests' idle limit
SLOW_TRICKLE_S = 4.0     # "slow-trickle": slower than the tests' idle limit (DDTUNE_IDLE_S=2)
BOMB_BYTES = 256 << 20   # what the gzip bomb inflates to
FORGED = "verified:   window: requested 1024, server reports 1024 as requested"
FORGED_DOCTOR = "[ok  ] grading sandbox: bwrap: every protection active"
ESC = "\x1b]2;pwned\x07\x1b[31mRED\x1b[0m"


@cache
def gzip_bomb() -> bytes:
    """~256 KB of gzip that inflates to 256 MiB of spaces (valid JSON whitespace, then nothing)."""
    out = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b" " * (1 << 20)
    parts = [out.compress(block) for _ in range(BOMB_BYTES >> 20)]
    return b"".join(parts) + out.flush()


def sse(obj) -> bytes:
    return b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"


def chat_chunk(n: int, text: str = "x", finish: str | None = None, usage: dict | None = None) -> dict:
    chunk = {"object": "chat.completion.chunk",
             "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}],
             "usage": usage or {"prompt_tokens": 5, "completion_tokens": n}}
    if finish:
        chunk["sglext"] = {"spec_tokens_details": {"spec_verify_ct": max(1, n // 2), "spec_accept_length": 2.0}}
    return chunk


def chat_stream(tokens: int = 4) -> bytes:
    body = b"".join(sse(chat_chunk(i + 1)) for i in range(tokens - 1))
    return body + sse(chat_chunk(tokens, finish="stop")) + sse(b"[DONE]")


GOOD_INFO = {"version": "0.5.9", "model_path": "hostile/model", "speculative_algorithm": "DFLASH",
             "speculative_draft_window_size": 2048, "speculative_num_draft_tokens": 16}
GOOD_GENERATE = {"text": "x", "meta_info": {"completion_tokens": 1, "prompt_tokens": 3}}

# Absurd numbers as raw JSON text (json.dumps cannot write most of them).
NUMBERS = {
    "inf": b"1e400",
    "digits": b"9" * 400,
    "nan": b"NaN",
    "negative": b"-7",
    "huge-negative": b"-3e40",
}


class Request:
    def __init__(self, method: str, path: str, headers: dict[str, str], body: bytes) -> None:
        self.method, self.path, self.headers, self.body = method, path, headers, body

    def json(self) -> dict:
        try:
            return json.loads(self.body or b"{}")
        except ValueError:
            return {}


class Reply:
    """Writes to the client socket; stops quietly when the client has gone or the server stops."""

    def __init__(self, sock: socket.socket, stop: threading.Event) -> None:
        self.sock, self.stop = sock, stop

    def send(self, data: bytes) -> bool:
        if self.stop.is_set():
            return False
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False

    def head(self, status: int = 200, headers: dict[str, str] | None = None) -> bool:
        lines = [f"HTTP/1.1 {status} X"] + [f"{k}: {v}" for k, v in (headers or {}).items()]
        return self.send(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))

    def whole(self, body: bytes, status: int = 200, ctype: str = "application/json", **extra: str) -> None:
        headers = {"content-type": ctype, "content-length": str(len(body)), "connection": "close", **extra}
        if self.head(status, headers):
            self.send(body)

    def chunked(self, ctype: str = "text/event-stream") -> bool:
        return self.head(200, {"content-type": ctype, "transfer-encoding": "chunked", "connection": "close"})

    def chunk(self, data: bytes) -> bool:
        return self.send(b"%x\r\n%s\r\n" % (len(data), data))

    def end(self) -> None:
        self.send(b"0\r\n\r\n")

    def trickle(self, data: bytes, interval: float) -> None:
        for i in range(len(data)):
            if not self.send(data[i:i + 1]) or self.stop.wait(interval):
                return


# --- behaviours: (request, reply) -> None -------------------------------------------------------------

def _good(req: Request, out: Reply) -> None:
    if req.path == "/server_info":
        out.whole(json.dumps(GOOD_INFO).encode())
    elif req.path == "/v1/models":
        out.whole(json.dumps({"data": [{"id": "hostile"}]}).encode())
    elif req.path == "/generate":
        out.whole(json.dumps(GOOD_GENERATE).encode())
    elif req.path == "/v1/chat/completions":
        if out.chunked():
            out.chunk(chat_stream())
            out.end()
    else:
        out.whole(b'{"detail": "Not Found"}', status=404)


def _bomb(req: Request, out: Reply) -> None:
    """1/4 MB of gzip that inflates to 256 MiB."""
    ctype = "text/event-stream" if req.path == "/v1/chat/completions" else "application/json"
    out.whole(gzip_bomb(), ctype=ctype, **{"content-encoding": "gzip"})


def _endless(req: Request, out: Reply) -> None:
    """Tokens as fast as the socket takes them, never a finish (chat: SSE; else JSON that never ends)."""
    if not out.chunked():
        return
    n = 0
    while True:
        if req.path == "/v1/chat/completions":
            batch = b"".join(sse(chat_chunk(n + i, "token ")) for i in range(1, 257))
            n += 256
        else:
            batch = (b'{"text": "' if n == 0 else b"") + b"token " * 8192
            n += 1
        if not out.chunk(batch):
            return


def _endless_line(req: Request, out: Reply) -> None:
    """One SSE line that never ends: ``data: xxxx...`` with no line break, for ever."""
    if out.chunked() and out.chunk(b"data: "):
        while out.chunk(b"x" * 65536):
            pass


def _trickle(interval: float) -> Callable[[Request, Reply], None]:
    """The headers, then one byte every ``interval`` seconds (a body that would be fine, if it ever came)."""
    def serve(req: Request, out: Reply) -> None:
        body = chat_stream(64) if req.path == "/v1/chat/completions" else json.dumps(
            GOOD_INFO if req.path == "/server_info" else GOOD_GENERATE).encode() + b" " * 100_000
        if out.head(200, {"content-type": "application/json", "content-length": str(len(body)),
                          "connection": "close"}):
            out.trickle(body, interval)
    return serve


def _huge_chunk(req: Request, out: Reply) -> None:
    """A chunk that says it is 2**64-1 bytes long, then data for ever."""
    if out.chunked() and out.send(b"ffffffffffffffff\r\n"):
        while out.send(b"y" * 65536):
            pass


def _bad_length(req: Request, out: Reply) -> None:
    ctype = "text/event-stream" if req.path == "/v1/chat/completions" else "application/json"
    if out.head(200, {"content-type": ctype, "content-length": "abc", "connection": "close"}):
        out.send(chat_stream() if req.path == "/v1/chat/completions" else json.dumps(GOOD_GENERATE).encode())


def _deep(req: Request, out: Reply) -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    if req.path == "/v1/chat/completions":
        if out.chunked():
            out.chunk(sse(b'{"choices": ' + deep + b"}"))
            out.end()
    else:
        out.whole(b'{"text": "x", "meta_info": ' + deep + b"}" if req.path == "/generate" else deep)


def _numbers(kind: str, prompt: bytes = b"5") -> Callable[[Request, Reply], None]:
    """Every count and the acceptance of a response is ``NUMBERS[kind]`` (the prompt's size is
    ``prompt``: a sane one lets a bench size its prompts and store what it got)."""
    raw = NUMBERS[kind]

    def serve(req: Request, out: Reply) -> None:
        if req.path == "/generate":
            out.whole(b'{"text": "x", "meta_info": {"completion_tokens": %s, "prompt_tokens": %s}}' % (raw, raw))
        elif req.path == "/v1/chat/completions":
            if not out.chunked():
                return
            usage = b'"usage": {"prompt_tokens": %s, "completion_tokens": %s}' % (prompt, raw)
            body = b"".join(sse(b'{"choices": [{"delta": {"content": "x"}, "finish_reason": null}], %s}' % usage)
                            for _ in range(3))
            body += sse(b'{"choices": [{"delta": {}, "finish_reason": "stop"}], %s, "sglext": {"spec_tokens_details":'
                        b' {"spec_verify_ct": %s, "spec_accept_length": %s}}}' % (usage, raw, raw))
            out.chunk(body + sse(b"[DONE]"))
            out.end()
        elif req.path == "/server_info":
            out.whole(b'{"version": "0.5.9", "speculative_algorithm": "DFLASH", '
                      b'"speculative_draft_window_size": %s, "max_total_num_tokens": %s}' % (raw, raw))
        elif req.path == "/metrics":
            out.whole(b"sglang:generation_tokens_total %s\nsglang:spec_verify_calls_total %s\n" % (raw, raw),
                      ctype="text/plain")
        else:
            _good(req, out)
    return serve


def _forged_info(req: Request, out: Reply) -> None:
    """/server_info whose strings carry whole output lines and escapes after a line break."""
    info = dict(GOOD_INFO, version=f"0.5.9\n{FORGED_DOCTOR}\n{ESC}",
                speculative_draft_window_size=f"2048\n{FORGED}\r{ESC}",
                model_path=f"m\n{FORGED}")
    out.whole(json.dumps(info).encode())


BEHAVIOURS: dict[str, Callable[[Request, Reply], None]] = {
    "good": _good, "bomb": _bomb, "endless": _endless, "endless-line": _endless_line,
    "trickle": _trickle(TRICKLE_S), "slow-trickle": _trickle(SLOW_TRICKLE_S),
    "huge-chunk": _huge_chunk, "bad-length": _bad_length, "deep": _deep, "forged": _forged_info,
    **{f"number-{kind}": _numbers(kind) for kind in NUMBERS},
    **{f"prompt-{kind}": _numbers(kind, NUMBERS[kind]) for kind in NUMBERS},
}


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(30)
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                more = sock.recv(65536)
                if not more:
                    return
                data += more
            head, body = data.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            method, path = lines[0].split(" ")[:2]
            pairs = (line.split(":", 1) for line in lines[1:] if ":" in line)
            headers = {k.strip().lower(): v.strip() for k, v in pairs}
            length = int(headers.get("content-length", "0"))
            while len(body) < length:
                more = sock.recv(65536)
                if not more:
                    return
                body += more
        except (OSError, ValueError):
            return
        path = path.split("?")[0]
        self.server.seen.append(path)
        request = Request(method, path, headers, body)
        name = self.server.routes.get(path, "good")
        if path == "/v1/chat/completions" and request.json().get("max_tokens") == 1 and not name.startswith("prompt-"):
            name = "good"  # a bench sizes its prompts with 1-token requests: those pass, so the cell runs
        BEHAVIOURS[name](request, Reply(sock, self.server.stop))


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, routes: dict[str, str]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes = routes
        self.stop = threading.Event()
        self.seen: list[str] = []


class HostileServer:
    """``with HostileServer({"/generate": "bomb"}) as server: ... server.url``"""

    def __init__(self, routes: dict[str, str] | None = None) -> None:
        unknown = set((routes or {}).values()) - set(BEHAVIOURS)
        if unknown:
            raise ValueError(f"unknown behaviours {sorted(unknown)}")
        self._server = _Server(dict(routes or {}))
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def seen(self) -> list[str]:
        """The paths asked so far, in order."""
        return list(self._server.seen)

    def set(self, path: str, behaviour: str) -> None:
        self._server.routes[path] = behaviour

    def __enter__(self) -> HostileServer:
        if "bomb" in self._server.routes.values():
            gzip_bomb()  # made before anyone waits on it
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop.set()
        self._server.shutdown()
        self._server.server_close()


PEAK_BOUND = 300 << 20   # what a ddtune process may reach against any of these: 40-60 MB is usual


def run_measured(*args: str, timeout: float, **env: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ddtune as a real process; (its result, its peak resident memory in bytes, from ``wait4``).
    Its address space is capped at 2 GiB, so an unbounded read fails there instead of filling the
    machine (a MemoryError traceback, which the tests catch as well)."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(ddtune_cmd(*args), env=ddtune_env(**env), cwd=REPO, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, preexec_fn=cap)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        result = subprocess.CompletedProcess(args, proc.returncode, out.read().decode(errors="replace"),
                                             err.read().decode(errors="replace"))
    return result, usage.ru_maxrss * 1024


def main() -> None:
    ap = argparse.ArgumentParser(description="a hostile SGLang stand-in on 127.0.0.1")
    ap.add_argument("--port-file", required=True, help="where to write the port once listening")
    ap.add_argument("routes", nargs="*", help="PATH=BEHAVIOUR, e.g. /generate=bomb")
    args = ap.parse_args()
    routes = dict(r.split("=", 1) for r in args.routes)
    with HostileServer(routes) as server:
        with open(args.port_file, "w") as f:
            f.write(str(server.port))
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
