# The types of what workloads.bench offers (its __init__.py loads each module on first use).

from workloads.bench.plan import RATES as RATES, BenchPlan as BenchPlan, CellKey as CellKey
from workloads.bench.session import load_sets as load_sets, run_bench as run_bench
from workloads.runs.checks import PLAUSIBLE as PLAUSIBLE
