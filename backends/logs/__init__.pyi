# The types of what backends.logs offers (its __init__.py loads each module on first use).

from backends.logs.acceptance import (SpecCounters as SpecCounters, counter_acceptance as counter_acceptance,
                                      log_acceptance as log_acceptance, parse_counters as parse_counters)
from backends.logs.alarms import THRESHOLD as THRESHOLD
from backends.logs.events import DecodeBatch as DecodeBatch
from backends.logs.kind import LogLine as LogLine
from backends.logs.span import decode_since as decode_since, log_end as log_end, weighted_accept as weighted_accept
from backends.logs.splitter import LineSplitter as LineSplitter
