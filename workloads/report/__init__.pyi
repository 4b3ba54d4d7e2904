# The types of what workloads.report offers (its __init__.py loads each module on first use).

from workloads.report.inputs import read_cells as read_cells, read_run_file as read_run_file
from workloads.report.load_runs import (LoadRun as LoadRun, compare_loads as compare_loads,
                                        read_load_run as read_load_run)
from workloads.report.render import (lossless_failed as lossless_failed, margin_text as margin_text,
                                     to_json as to_json, to_markdown as to_markdown)
from workloads.report.text import report_text as report_text, sweep_report as sweep_report
from workloads.runs.attempts import status_of as status_of
from workloads.runs.store import home_short as home_short
from workloads.stats.metrics import cell_acceptance as cell_acceptance
