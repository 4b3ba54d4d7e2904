"""What every part of ddtune stands on: errors with a hint, untrusted text made plain, a server's
answers read within bounds, API keys kept secret, the user's files read one way, and a state dir it
can trust.

The face: the error hierarchy every command reports through; a value shown on one line; API keys
masked in what is printed; a --url checked and made a base; the runs/ dir and the private umask of
the process; the one writer of the user's files (never through a link, never where another user
rules) and a file saved for the user (``save_export``); ddtune's own version. The server's use cases
(status, doctor, inspect, ...) are backends.server's.
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "backends.core.answers": ("BadAnswer",),
    "backends.core.apikey": ("mask", "redact_argv"),
    "backends.core.datafile": ("loads",),
    "backends.core.errors": ("ConfigError", "DdtuneError", "PortTaken", "ServerError", "UsageError"),
    "backends.core.exports": ("save_export",),
    "backends.core.fields": ("server_base",),
    "backends.core.phase": ("Phase",),
    "backends.core.paths": ("private_umask", "runs_dir"),
    "backends.core.plaintext": ("escaped",),
    "backends.core.version": ("ddtune_version",),
    "backends.core.writes": ("check_output", "write_atomic"),
})
