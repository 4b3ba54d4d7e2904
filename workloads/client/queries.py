"""What ddtune asks a server besides its streams: JSON documents (``/server_info``, ``/v1/models``,
``/v1/loads``, ``/tokenize``), plain texts (``/metrics``), ``/flush_cache``. Every answer is read
through the one door for a server's answers (``backends.core.answers``): bounded in bytes, time and
depth, its strings plain, numbers out of range dropped. A mixin of ``StreamingClient``, which owns the
connection pool (``_http``) these share with the streams.
"""

from __future__ import annotations

from typing import Any

import httpx

from backends.core import ERROR_BYTES, BadAnswer, fetch
from backends.core import ServerError, ServerUnreachable
from backends.core import plain
from backends.logs import SpecCounters, parse_counters

JSON_IDLE_S = 30.0  # a JSON answer comes whole at once: this long without a byte is a server that hangs
NOT_SGLANG = "is this an SGLang server? give its base URL, e.g. --url http://127.0.0.1:30000"
KEY_HINT = ("the server wants an API key: pass --api-key, or set DDTUNE_API_KEY (ddtune uses the --api-key "
            "of a server it launched by itself)")


class ServerQueries:
    base_url: str
    metrics: bool | None
    _http: httpx.AsyncClient
    _model: str | None

    async def get_json(self, path: str, dropped: list[str] | None = None, shape: type = dict) -> Any:
        """A JSON object (``shape``: or a list, as llama.cpp's ``/slots``) the server answers at ``path``,
        read within bounds (``backends.core.answers``): its strings plain and on one line, numbers out
        of range dropped (noted in ``dropped``)."""
        try:
            answer = await fetch(self._http, "GET", path, idle=JSON_IDLE_S)
        except BadAnswer as exc:
            raise ServerError(f"{self.base_url}{path}: {describe(exc)}",
                              hint="is it an SGLang server? check --url") from exc
        except httpx.HTTPError as exc:
            raise ServerUnreachable(f"cannot reach {self.base_url}{path}: {describe(exc)}",
                              hint="is the server up? check --url or 'ddtune status'") from exc
        if answer.status != 200:
            hint = KEY_HINT if answer.status in (401, 403) else (NOT_SGLANG if answer.status == 404 else None)
            raise ServerError(f"{self.base_url}{path} answered HTTP {answer.status}: {body_line(answer.text)}",
                              hint=hint)
        try:
            doc = answer.json(one_line=True)
        except BadAnswer as exc:
            raise ServerError(f"{self.base_url}{path}: {describe(exc)}") from exc
        if not isinstance(doc, shape):
            raise ServerError(f"{self.base_url}{path} did not answer a JSON {'object' if shape is dict else 'array'}")
        if dropped is not None:
            dropped.extend(answer.dropped)
        return doc

    async def post_json(self, path: str, body: dict) -> dict | None:
        """POST ``body`` to ``path``: the JSON object answered (strings plain), or None when the server
        has no such route or refuses it (any status but 200) or answers something unusable."""
        try:
            answer = await fetch(self._http, "POST", path, json=body, idle=JSON_IDLE_S)
        except BadAnswer:
            return None
        except httpx.HTTPError as exc:
            raise ServerUnreachable(f"cannot reach {self.base_url}{path}: {describe(exc)}",
                              hint="is the server up? check --url or 'ddtune status'") from exc
        try:
            data = answer.json() if answer.status == 200 else None
        except BadAnswer:
            return None
        return data if isinstance(data, dict) else None

    async def flush_cache(self) -> bool:
        """Ask the server to drop its prefix cache (``/flush_cache``); whether it did. SGLang refuses
        (HTTP 400) while it runs or queues requests."""
        try:
            answer = await fetch(self._http, "POST", "/flush_cache", idle=JSON_IDLE_S, limit=ERROR_BYTES)
        except httpx.HTTPError:
            return False
        return answer.status == 200

    async def get_text(self, path: str) -> str | None:
        """The text ``path`` answers (plain), None on any status but 200 or no usable answer."""
        try:
            answer = await fetch(self._http, "GET", path, idle=JSON_IDLE_S)
        except httpx.HTTPError:
            return None
        return answer.text if answer.status == 200 else None

    async def spec_counters(self) -> SpecCounters | None:
        """The server's generation and verify-call counters from ``/metrics`` (``--enable-metrics``);
        None when it has none (asked once: a 404 or a text without them is not asked again)."""
        if self.metrics is False:
            return None
        try:
            answer = await fetch(self._http, "GET", "/metrics", idle=JSON_IDLE_S)
        except httpx.HTTPError:
            return None
        counters = parse_counters(answer.text) if answer.status == 200 else None
        if counters is None and answer.status in (200, 404):
            self.metrics = False
        elif counters is not None:
            self.metrics = True
        return counters

    async def model_id(self) -> str:
        """The served model's id from /v1/models (SGLang accepts any name; this keeps logs honest)."""
        if self._model is None:
            try:
                data = (await self.get_json("/v1/models")).get("data") or []
                model = data[0]["id"] if data else "default"
                self._model = model if isinstance(model, str) else "default"
            except (ServerError, KeyError, TypeError, IndexError):
                self._model = "default"
        return self._model


def body_line(text: str, limit: int = 300) -> str:
    """An error answer's body as one short line: an HTML page (another web server, a proxy's error
    page) is named with its size, never dumped."""
    if text.lstrip()[:15].lower().startswith(("<!doctype", "<html")):
        return f"an HTML page ({len(text):,} characters), not an API answer"
    return short(text, limit)


def short(text: str, limit: int = 300) -> str:
    """An error body on one line, plain (it is the server's text)."""
    text = " ".join(plain(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


def describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
