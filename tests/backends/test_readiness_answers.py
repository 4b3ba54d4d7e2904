"""Issue 32: ready means a real token. A server that answers ``/generate`` with HTTP 200 and no token
is never declared ready (the mutation "at least one token" -> "at least zero" failed no test), and
every other shape of answer a probe can meet is judged as it should be.

A tiny HTTP server of the test's own on 127.0.0.1 answers ``/generate`` with a fixed body: it listens
in this process, so the owner check (the pid we started owns the socket) passes for our own pid."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from backends.knobs.config import config_from_dict
from backends.launch.readiness import ReadinessProbe
from tests.backends.lifecycle_support import headless


class Answers(BaseHTTPRequestHandler):
    status = 200
    body: bytes = b"{}"
    asked = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).asked += 1
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def answering():
    """``answering(body, status=200) -> (url, port, handler)``: a server that answers every POST so."""
    servers = []

    def start(body, status: int = 200):
        handler = type("Fixed", (Answers,), {"status": status, "asked": 0,
                                             "body": body if isinstance(body, bytes) else json.dumps(body).encode()})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        port = server.server_address[1]
        return f"http://127.0.0.1:{port}", port, handler

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


NO_TOKEN = "1-token /generate returned no tokens"


@pytest.mark.parametrize("body, status, ready, reason", [
    ({"text": "", "meta_info": {"completion_tokens": 0}}, 200, False, NO_TOKEN),
    ({"text": "", "meta_info": {}}, 200, False, NO_TOKEN),
    ({"text": "Hi", "meta_info": {"completion_tokens": 0}}, 200, False, NO_TOKEN),  # the count is what counts
    ([], 200, False, NO_TOKEN),
    ([{"text": "", "meta_info": {"completion_tokens": 0}}], 200, False, NO_TOKEN),
    ({"text": "", "meta_info": {"completion_tokens": "1"}}, 200, False, NO_TOKEN),  # not a count: the text decides
    ({"text": "Hi"}, 200, True, "generated 1 token(s)"),  # no count: a text is a token
    ({"text": "", "meta_info": {"completion_tokens": 1}}, 200, True, "generated 1 token(s)"),
    ([{"text": "Hi", "meta_info": {"completion_tokens": 1}}], 200, True, "generated 1 token(s)"),
    ({"text": "Hi", "meta_info": {"completion_tokens": 1}}, 503, False, "/generate returned HTTP 503"),
    (b"<html>starting</html>", 200, False, "1-token /generate failed"),
], ids=["zero-count", "no-count-no-text", "text-but-zero-count", "empty-list", "list-zero", "count-not-int",
        "text-no-count", "one-token", "list-one", "http-503", "not-json"])
async def test_a_probe_is_ready_only_on_a_real_token(answering, body, status, ready, reason):
    url, port, handler = answering(body, status)
    async with ReadinessProbe(url, port, os.getpid()) as probe:  # the socket is ours: only the answer decides
        result = await probe.probe()
    assert (result.ready, handler.asked) == (ready, 1), result
    assert reason in result.reason, result.reason
    assert result.generated == (1 if ready else 0)


async def test_a_server_that_answers_with_no_token_is_never_declared_ready(answering, tmp_path, state_dir):
    """The whole wait, as the lifecycle runs it: probing until the timeout, then failed, saying why."""
    url, _, handler = answering({"text": "", "meta_info": {"completion_tokens": 0}})
    cfg = config_from_dict({"server": {"backend": "endpoint", "url": url, "ready_timeout_s": 2.5}}, "zero.toml")
    session = headless(cfg)
    try:
        state = await session.up()
    finally:
        await session.close()
    assert state.phase == "failed" and handler.asked >= 2
    assert state.reason.startswith("not ready after 2 s (ready_timeout_s)"), state.reason
    assert state.reason.endswith(f"; last probe: {NO_TOKEN}"), state.reason
