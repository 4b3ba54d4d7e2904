"""What a server's log says: lines split and made plain, each parsed once into a typed event, classified,
summarised, and judged (acceptance, the collapse alarm). Pure functions over text.

The face: ``LineSplitter`` (bytes to lines), the classified ``LogLine`` the console shows (``LogLine.ddtune``;
``LogLine.tones`` says how each stretch of a line is drawn), the decode batches read (``DecodeBatch``), and
acceptance judged from decode lines or the server's /metrics counters. A whole log's report is
backends.server's ``inspect_log``.
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "backends.logs.acceptance": ("SpecCounters", "counter_acceptance", "log_acceptance", "parse_counters"),
    "backends.logs.alarms": ("THRESHOLD",),
    "backends.logs.events": ("DecodeBatch",),
    "backends.logs.kind": ("LogLine",),
    "backends.logs.span": ("decode_since", "log_end", "weighted_accept"),
    "backends.logs.splitter": ("LineSplitter",),
})
