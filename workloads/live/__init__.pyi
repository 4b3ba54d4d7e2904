# The types of what workloads.live offers (its __init__.py loads each module on first use).

from workloads.live.ab import Comparison as Comparison, ConfigFigures as ConfigFigures
from workloads.live.baseline import NoSpecBaseline as NoSpecBaseline
from workloads.live.console_load import ConsoleLoad as ConsoleLoad, LoadState as LoadState
from workloads.live.foreground import LoadOutcome as LoadOutcome, LoadSpec as LoadSpec, run_load as run_load
from workloads.live.events import RequestDone as RequestDone, StatsUpdated as StatsUpdated
from workloads.live.sources import LoadSources as LoadSources, load_sources as load_sources
