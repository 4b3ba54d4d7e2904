"""Issue 32: ``--url http://host/v1`` (the OpenAI-style base people paste) is the server at
http://host (it asked ``/v1/v1/models``), and a server that is not SGLang, answering 404 with an
HTML page, gives one short line naming the URL and what it answered, not the page.

A tiny HTTP server of the test's own on 127.0.0.1 stands for nginx; ddtune runs in-process (the
process itself is not the subject)."""

from __future__ import annotations

import contextlib
import io
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tui import cli

PAGE = "<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body>" + "<p>nginx</p>" * 200 + \
    "</body></html>\n"


class Nginx(BaseHTTPRequestHandler):
    asked: list[str] = []

    def _404(self) -> None:
        Nginx.asked.append(self.path)
        body = PAGE.encode()
        self.send_response(404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _404

    def log_message(self, *args) -> None:
        pass


def test_a_v1_url_is_the_server_and_an_html_404_is_one_short_line(state_dir):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Nginx)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = cli.main(["bench", "--url", base + "/v1/", "--contexts", "60", "--concurrency", "1"])
    finally:
        server.shutdown()
        server.server_close()
    lines = err.getvalue().splitlines()
    assert code == 1, lines
    assert "/v1/models" in Nginx.asked and not any(p.startswith("/v1/v1") for p in Nginx.asked), Nginx.asked
    assert lines[0] == (f"ddtune: error: {base}/v1/models answered HTTP 404: an HTML page "
                        f"({len(PAGE):,} characters), not an API answer"), lines
    assert lines[1].startswith("hint: is this an SGLang server?") and len(lines) == 2, lines
