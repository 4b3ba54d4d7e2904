"""Learn which flags the configured server takes: run its ``--help`` once per SGLang version.

Real SGLang needs seconds to print ``--help`` (it imports torch), so the text is cached in the
state dir under the installed ``sglang`` distribution's version. Without a version (the simulator,
a source checkout) it is read fresh every time.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from backends.core.errors import DdtuneError, ServerError
from backends.core.paths import state_dir
from backends.core.statefs import StateWriteError, read_state_file, trusted_dir, write_atomic
from backends.core.plaintext import plain

_VERSION_CODE = "import importlib.metadata as m\ntry:\n print(m.version('sglang'))\nexcept Exception:\n print('')"


@dataclass(frozen=True)
class ServerHelp:
    text: str
    version: str | None
    cached: bool


def installed_version(python: str, env: dict[str, str]) -> str | None:
    """The sglang version installed for ``python`` (from its metadata; sglang is not imported)."""
    try:
        out = subprocess.run([python, "-c", _VERSION_CODE], env=env, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = plain(out.stdout, one_line=True).strip()  # the installed package's text: shown, so plain
    return version if out.returncode == 0 and version else None


def _cache_file(version: str, engine: str = "sglang"):
    safe = re.sub(r"[^A-Za-z0-9._+-]", "_", version)
    return trusted_dir(state_dir() / "help") / f"{engine}-{safe}.txt"


def cached_helps() -> dict[str, bytes]:
    """Every ``--help`` cached in this state dir, by file name (read as the cache is: never through a
    link); nothing is made where there is no state dir or cache yet."""
    try:
        folder = trusted_dir(state_dir(create=False) / "help", create=False)
    except (FileNotFoundError, DdtuneError):  # none yet, or not one ddtune may read: ask --help then
        return {}
    found = {}
    for path in sorted(folder.glob("sglang-*.txt")):
        try:
            data = read_state_file(path)
        except OSError:
            continue  # over the size a help text has, or unreadable: that one is asked afresh
        if data is not None:
            found[path.name] = data
    return found


def seed_helps(found: dict[str, bytes]) -> None:
    """Put ``cached_helps()`` of another state dir into this one's cache (a selftest's temporary state
    dir: the user's SGLang printed its --help for ddtune before; no need to import it again)."""
    for name, data in found.items():
        try:
            write_atomic(trusted_dir(state_dir() / "help") / name, data)
        except StateWriteError:
            return  # the selftest asks --help itself then


_SGLANG_FIX = "set [server] python to the interpreter that has sglang installed"


def fetch_help(prefix: tuple[str, ...], env: dict[str, str], version: str | None, timeout: float = 300,
               lists: str = "--model-path", engine: str = "sglang", fix: str = _SGLANG_FIX) -> ServerHelp:
    """``prefix --help`` as text, from the cache when ``version`` is known and cached; a text that
    does not list ``lists`` (a flag every real --help of ``engine`` has) is no server's help."""
    if version:
        try:
            cached = read_state_file(_cache_file(version, engine))  # never through a symlink (backends.core.statefs)
        except OSError:
            cached = None  # over the size a help text has, or unreadable: asked afresh and cached again
        if cached is not None:
            return ServerHelp(cached.decode("utf-8", errors="replace"), version, True)
    argv = [*prefix, "--help"]
    try:
        out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL, start_new_session=True)
    except FileNotFoundError as exc:
        raise ServerError(f"cannot run the server: {argv[0]!r} not found", hint=fix) from exc
    except OSError as exc:  # a directory, not executable, ...
        raise ServerError(f"cannot run the server: {argv[0]!r}: {exc.strerror or exc}", hint=fix) from exc
    except subprocess.TimeoutExpired as exc:
        raise ServerError(f"'{' '.join(argv)}' did not finish in {timeout:.0f} s",
                          hint="check that the server's program starts cleanly") from exc
    if out.returncode != 0 or lists not in out.stdout:
        tail = " | ".join(plain(out.stderr or out.stdout).strip().splitlines()[-5:])  # the error is one line
        raise ServerError(f"'{' '.join(argv)}' failed (exit {out.returncode}): {tail}",
                          hint=fix if engine != "sglang" else "set [server] python to an interpreter where "
                          "'python -m sglang.launch_server --help' works")
    if version:
        try:
            write_atomic(_cache_file(version, engine), out.stdout.encode("utf-8"))
        except StateWriteError:
            pass  # a full disk costs the cache only: the next start asks --help again
    return ServerHelp(out.stdout, version, False)


@dataclass(frozen=True)
class SGLangVersion:
    """Which SGLang this config runs, and where that was read (or why it could not be)."""

    version: str | None
    source: str


def sglang_version(config, backend, state=None) -> SGLangVersion:
    """The version the console shows, found the way it finds it: ``/server_info`` of the running
    server (the recorded one, or the endpoint's URL), else the installed ``sglang`` package of the
    configured interpreter; the simulator says which release it imitates (``--sim-version``).
    ``backend``: the config's driver (its flags say whether it attaches or simulates)."""
    import asyncio

    from backends.launch.readiness import fetch_server_info

    url = state.url if state is not None and state.phase.live else None
    if url is None and backend.ATTACHES:
        url = config.base_url
    if url:
        info = asyncio.run(fetch_server_info(url, backend.api_key(state)))
        if info and info.get("version"):
            return SGLangVersion(str(info["version"]), f"/server_info of the running server at {url}")
    if backend.SIMULATED:
        from backends.sim.flags import imitated_version

        return SGLangVersion(imitated_version(config.extra_args),
                             "imitated by the simulator, --sim-version; none runs now")
    if backend.ATTACHES:
        return SGLangVersion(None, f"{url} did not answer /server_info")
    env = backend.server_env()
    version = installed_version(config.python, env)
    if version:
        return SGLangVersion(version, f"the sglang package installed for {config.python}")
    why = "no running server answered /server_info" if url else "no server is running"
    return SGLangVersion(None, f"{why}, and {config.python} has no sglang package installed")
