# The types of what workloads.report offers (its __init__.py loads each module on first use).

from workloads.report.past import RunComparison as RunComparison, RunRow as RunRow, list_runs as list_runs
from workloads.report.render import (lossless_failed as lossless_failed, margin_text as margin_text,
                                     to_json as to_json, to_markdown as to_markdown)
from workloads.report.report_case import our_run as our_run, report as report
from workloads.report.text import sweep_report as sweep_report
from workloads.runs.store import home_short as home_short
