"""Which server a workload command measures, and with which key: the use case behind ``--url``,
``--api-key`` and ``--log`` of bench, eval, load and check-lossless."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class ServerTarget:
    """``url`` (no trailing slash, no /v1), the API key to send (None: none), and the managed server's
    log when ``url`` is that server's (acceptance is read from it as a last resort)."""

    url: str
    api_key: str | None
    log_path: str | None


def server_target(url: str | None = None, api_key: str | None = None, config_path: str | None = None,
                  default: str = "http://127.0.0.1:30000") -> ServerTarget:
    """URL: ``url``, else the config's [server] host/port (a config file found is read and checked
    in full: a broken one is an error, not a silent fall back to another server), else the managed
    server's recorded url, else ``default``. Key: ``api_key``, else the --api-key ddtune launched that
    server with (when the URL is the managed server's), else $DDTUNE_API_KEY. The key is remembered,
    so that whatever the command prints masks it."""
    from backends.core.apikey import remember
    from backends.server.snapshot import launched_api_key, recorded_server

    state = recorded_server()
    recorded = state.url.rstrip("/") if state is not None and state.url else None
    if url is None:
        url = _configured_url(config_path) or (
            recorded if recorded and recorded.startswith(("http://", "https://")) else None) or default
    managed = state if state is not None and recorded == url.rstrip("/") else None
    key = api_key or (launched_api_key(managed) if managed is not None else None) or \
        os.environ.get("DDTUNE_API_KEY") or None
    remember(key)
    return ServerTarget(url, key, (managed.log_path or None) if managed is not None else None)


def _configured_url(explicit: str | None) -> str | None:
    from backends.core.paths import find_config
    from backends.knobs.config import load_config

    path = find_config(explicit)
    return None if path is None else load_config(path).base_url
