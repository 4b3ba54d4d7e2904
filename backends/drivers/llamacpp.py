"""The llama.cpp driver: ``llama-server`` with DFlash, spawned by ddtune like SGLang.

``[server] binary`` names the user's ``llama-server``; without one ddtune runs its own launcher of
the ``llamacpp`` extra's server (``backends.drivers.llamacpp_launcher``, PyPI xllamacpp) with its own
interpreter. Either way the process is ddtune's: its own process group, a launch token, its output
in a log ddtune follows, stopped by that group. Its flags are read from its ``--help`` (cached per
build, read from ``--version``); its log names no pid, so the port's owner alone proves it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import replace

from backends.drivers.spawn import ProcessDriver
from backends.knobs.engine import engine
from backends.knobs.serverhelp import ServerHelp, fetch_help
from backends.core.plaintext import plain
from backends.launch.dialect import LLAMACPP

LAUNCHER = "backends.drivers.llamacpp_launcher"
_BUILD = re.compile(r"version:\s*(\d+)")
_FIX_BINARY = 'set [server] binary to your llama-server, or leave it out to use the llamacpp extra ' \
              "(pip install 'ddtune[llamacpp]')"


class LlamaCppDriver(ProcessDriver):
    NAME = "llamacpp"
    LOG_NAMES_PID = False
    DIALECT = LLAMACPP

    def __init__(self, config) -> None:
        super().__init__(config)
        self._version: tuple[tuple[str, ...], str | None] | None = None

    def command_prefix(self) -> tuple[str, ...]:
        if self.config.binary:
            return (os.path.expanduser(self.config.binary),)
        # ddtune's own interpreter runs its launcher as it runs the simulator (``-P``: never a
        # ./backends of the working directory)
        return (sys.executable, "-P", "-m", LAUNCHER)

    def runs_ddtune(self) -> bool:
        return not self.config.binary  # the launcher is ddtune: found as ddtune was

    def version(self, env: dict[str, str]) -> str | None:
        """``b11549``: the build ``--version`` prints (``version: 11549 (...)``), read once per driver."""
        prefix = self.command_prefix()
        if self._version is not None and self._version[0] == prefix:
            return self._version[1]
        try:
            out = subprocess.run([*prefix, "--version"], env=env, capture_output=True, text=True, timeout=60,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
            found = _BUILD.search(plain(out.stdout + out.stderr))
            build = f"b{found.group(1)}" if found and found.group(1) != "0" else None
        except (OSError, subprocess.TimeoutExpired):
            build = None
        self._version = (prefix, build)
        return build

    def installed_version(self) -> str | None:
        return self.version(self.server_env())

    def learn_help(self) -> ServerHelp:
        env = self.server_env()
        eng = engine(self.config.engine)
        version = self.version(env)
        # a binary's --help is cached per build; the launcher's is ddtune's own (it changes with ddtune,
        # not with the wheel's build) and costs an interpreter start: read fresh
        helped = fetch_help(self.command_prefix(), env, version if self.config.binary else None,
                            lists=eng.help_lists, engine=eng.name, fix=_FIX_BINARY)
        return replace(helped, version=version)
