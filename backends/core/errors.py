"""The small error hierarchy every layer raises: a user-facing message plus a hint."""

from __future__ import annotations

from backends.core.apikey import mask


class DdtuneError(Exception):
    """An error the user can act on. ``exit_code`` is what the CLI returns for it."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        message, hint = mask(message), (mask(hint) if hint else hint)  # no error shows an API key
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\nhint: {self.hint}"


class UsageError(DdtuneError):
    """Bad input from the command line (exit 2)."""

    exit_code = 2


class ConfigError(DdtuneError):
    """A config or preset file is wrong: names the file, the field and the fix (exit 2)."""

    exit_code = 2


class ServerError(DdtuneError):
    """The server failed to start, stop, answer or verify (exit 1)."""


class ServerUnreachable(ServerError):
    """No answer at all (refused, reset, timed out): the server is gone, not answering badly."""


class PortTaken(ServerError):
    """A start refused because someone else listens on the server's port: not a server ddtune
    stopped for this restart (a parallel sweep's lane moves to another port on it)."""

    def __init__(self, message: str, hint: str | None = None, *, port: int) -> None:
        super().__init__(message, hint)
        self.port = port


class TelemetryUnavailable(DdtuneError):
    """GPU or host telemetry cannot be read here; never fatal to the rest of ddtune."""
