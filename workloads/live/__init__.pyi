# The types of what workloads.live offers (its __init__.py loads each module on first use).

from workloads.live.ab import Comparison as Comparison, ConfigFigures as ConfigFigures, LiveAB as LiveAB
from workloads.live.baseline import find_no_spec_baseline as find_no_spec_baseline
from workloads.live.foreground import LoadOutcome as LoadOutcome, LoadSpec as LoadSpec, run_load as run_load
from workloads.live.events import (LoadPaused as LoadPaused, LoadProcEvent as LoadProcEvent,
                                   LoadResumed as LoadResumed, LoadStarted as LoadStarted, LoadStopped as LoadStopped,
                                   RequestDone as RequestDone, StatsUpdated as StatsUpdated)
from workloads.live.proc import LoadProcess as LoadProcess
from workloads.live.sources import LoadSources as LoadSources, load_sources as load_sources
from workloads.live.work import load_work as load_work
from workloads.prompts.sources import BUILTIN_HELP as BUILTIN_HELP
