# The types of what workloads.search offers (its __init__.py loads each module on first use).

from workloads.search.engine import SearchEngine as SearchEngine, SweepRoundRunner as SweepRoundRunner, Target as Target
from workloads.search.events import (RoundFinished as RoundFinished, RoundProgress as RoundProgress,
                                     RoundStarted as RoundStarted, SearchEvent as SearchEvent,
                                     SearchFinished as SearchFinished, SearchStarted as SearchStarted)
from workloads.search.lanes import LaneRoundRunner as LaneRoundRunner
from workloads.search.report import (decision_line as decision_line, round_title as round_title,
                                     summary_lines as summary_lines, tok_text as tok_text)
from workloads.search.request import SearchRequest as SearchRequest
from workloads.search.space import SearchSpace as SearchSpace, parse_search_space as parse_search_space
from workloads.search.start import (example_space as example_space, plan_search as plan_search,
                                    start_search as start_search)
from workloads.search.store import SearchStore as SearchStore
