# The types of what workloads.report offers (its __init__.py loads each module on first use).

from workloads.report.past import RunRow as RunRow, list_runs as list_runs
from workloads.report.report_case import our_run as our_run, report as report
