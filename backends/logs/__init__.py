"""What a server's log says: lines split and made plain, each parsed once into a typed event, classified,
summarised, and judged (acceptance, the collapse alarm). Pure functions over text.

The face: ``LineSplitter`` and ``parse_line`` (bytes to lines to typed events), the classified
``LogLine`` the console shows, a whole log summarised (``SummaryBuilder``), and acceptance and its
alarms judged from decode lines or the server's /metrics counters.
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "backends.logs.acceptance": ("DraftCounters", "SpecCounters", "counter_acceptance", "draft_counters",
                                  "log_acceptance", "parse_counters"),
    "backends.logs.alarms": ("AcceptanceWatch", "alarms_from_log"),
    "backends.logs.deprecations": ("deprecation",),
    "backends.logs.events": ("DecodeBatch", "DraftRunner", "ServerReady"),
    "backends.logs.kind": ("KINDS", "LogLine", "note"),
    "backends.logs.parse": ("parse_line",),
    "backends.logs.span": ("recent_log_lines",),
    "backends.logs.splitter": ("LineSplitter",),
    "backends.logs.summary": ("SummaryBuilder", "read_log_lines"),
})
