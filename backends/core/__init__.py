"""What every part of ddtune stands on: errors with a hint, untrusted text made plain, a server's
answers read within bounds, API keys kept secret, the user's files read one way, and a state dir it
can trust.

The face: the error hierarchy every command reports through; a server's answer fetched within bounds;
a value shown on one line; API keys remembered and masked in what is printed; a URL checked; the
config file found; the state dir and its runs/, created private (and proved writable); the one
writer of the user's files (never through a link, never where another user rules); ddtune's own
version.
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "backends.core.answers": ("BadAnswer", "fetch_once"),
    "backends.core.apikey": ("mask", "redact_argv", "remember"),
    "backends.core.datafile": ("loads",),
    "backends.core.errors": ("ConfigError", "DdtuneError", "PortTaken", "ServerError", "TelemetryUnavailable",
                             "UsageError"),
    "backends.core.exports": ("save_export",),
    "backends.core.fields": ("server_base", "url_problem"),
    "backends.core.paths": ("find_config", "private_umask", "runs_dir", "state_dir"),
    "backends.core.statefs": ("probe_room",),
    "backends.core.plaintext": ("escaped",),
    "backends.core.version": ("ddtune_version",),
    "backends.core.writes": ("check_output", "write_atomic"),
})
