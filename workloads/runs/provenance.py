"""What a run records about where it ran: server config and version, GPU, ddtune version, host."""

from __future__ import annotations

import platform
import socket

from backends.core import api_key, redact
from backends.core import ServerError
from backends.core import ddtune_version


def gpu_models() -> list[str] | None:
    """GPU names through NVML, or None where there is no driver."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        names = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
            names.append(name.decode() if isinstance(name, bytes) else str(name))
        return names
    except Exception:
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def server_state() -> dict | None:
    """The managed server's record (its owner's, read through its codec: backends.server), as JSON."""
    from backends.server import recorded_server

    state = recorded_server()
    return state.to_json() if state is not None else None


def speculative_from_info(info: dict | None) -> bool | None:
    """Whether /server_info says the server runs speculative decoding (``speculative_algorithm``
    set); None when there is no /server_info to ask."""
    if not isinstance(info, dict):
        return None
    return bool(info.get("speculative_algorithm"))


async def server_info_of(client, dropped: list[str] | None = None) -> dict:
    """What the server says about itself: SGLang's ``/server_info``, else (a llama.cpp server answers it
    404) ``/props`` and ``/slots`` in the same keys (``backends.launch.dialect.llamacpp_info``; its
    build from ddtune's record of the launch when /props does not know it). ServerError when neither.
    ``dropped``: told the numbers out of range the answers held (left out, null)."""
    from backends.server import llamacpp_info

    try:
        return await client.get_json("/server_info", dropped)
    except ServerError as first:
        try:
            props = await client.get_json("/props", dropped)
        except ServerError:
            raise first from None
        try:
            slots = await client.get_json("/slots", dropped, shape=list)
        except ServerError:
            slots = None
        state = server_state() or {}
        engine = state.get("engine") if state.get("url") == client.base_url else None
        build = engine.split()[-1] if isinstance(engine, str) and engine.startswith("llama.cpp b") else None
        info = llamacpp_info(props, slots, build)
        if info is None:
            raise first from None
        return info


async def server_provenance(client) -> dict:
    """The server's own account: /server_info (launch_command, version, args), plus ddtune's record of it.
    ``speculative`` says whether it runs speculative decoding (null: /server_info unreadable).

    Redacted: /server_info repeats the server's ``api_key`` (and a launch command may carry it)."""
    info: dict | None
    error = None
    dropped: list[str] = []
    try:
        info = await server_info_of(client, dropped)
    except ServerError as exc:
        info, error = None, exc.message
    if info is not None and hasattr(client, "speculative"):
        client.speculative = speculative_from_info(info)  # acceptance only from a speculative server
    state = server_state()
    knobs = state["knobs"] if state else None
    return redact({
        "url": client.base_url,
        "version": (info or {}).get("version"),
        "launch_command": (info or {}).get("launch_command"),
        "speculative": speculative_from_info(info),
        "knobs": knobs,
        "server_info": info,
        "server_info_error": error,
        **({"server_info_dropped": dropped} if dropped else {}),  # numbers out of range, left out (null)
        "state": state,
    }, [getattr(client, "api_key", None), api_key()])


def host_provenance() -> dict:
    return {"hostname": socket.gethostname(), "python": platform.python_version(), "platform": platform.platform(),
            "gpus": gpu_models(), "ddtune_version": ddtune_version()}
