# The types of what backends.logs offers (its __init__.py loads each module on first use).

from backends.logs.acceptance import (DraftCounters as DraftCounters, SpecCounters as SpecCounters,
                                      counter_acceptance as counter_acceptance, draft_counters as draft_counters,
                                      log_acceptance as log_acceptance, parse_counters as parse_counters)
from backends.logs.alarms import AcceptanceWatch as AcceptanceWatch, alarms_from_log as alarms_from_log
from backends.logs.deprecations import deprecation as deprecation
from backends.logs.events import DecodeBatch as DecodeBatch, DraftRunner as DraftRunner, ServerReady as ServerReady
from backends.logs.kind import KINDS as KINDS, LogLine as LogLine, note as note
from backends.logs.parse import parse_line as parse_line
from backends.logs.span import recent_log_lines as recent_log_lines
from backends.logs.splitter import LineSplitter as LineSplitter
from backends.logs.summary import SummaryBuilder as SummaryBuilder, read_log_lines as read_log_lines
