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
    "backends.core.answers": ("BadAnswer", "ERROR_BYTES", "StreamLimits", "TOKENS_MAX", "amount", "count",
                              "dropped_shown", "fetch", "idle_s", "read_body", "sse_lines"),
    "backends.core.apikey": ("ENV_KEY", "api_key", "auth_headers", "mask", "redact", "redact_argv"),
    "backends.core.datafile": ("Lines", "MAX_BYTES", "MAX_LINE", "Note", "TooDeep", "loads", "read_bytes",
                               "read_json", "read_jsonl", "read_text", "read_toml", "warn"),
    "backends.core.errors": ("ConfigError", "DdtuneError", "PortTaken", "ServerError", "ServerUnreachable",
                             "UsageError"),
    "backends.core.exports": ("save_export",),
    "backends.core.fields": ("INT64_MAX", "MAX_NAME", "bounded", "expect", "fail", "key_name", "server_base", "shown"),
    "backends.core.paths": ("package_dirs", "presets_dir", "private_umask", "problems_file", "runs_dir"),
    "backends.core.phase": ("Phase",),
    "backends.core.plaintext": ("escaped", "plain"),
    "backends.core.version": ("ddtune_version",),
    "backends.core.writes": ("append_text", "check_folder", "check_output", "make_folder", "open_append",
                             "write_atomic"),
})
