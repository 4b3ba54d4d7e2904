# The types of what workloads.bench offers (its __init__.py loads each module on first use).

from workloads.bench.matrix import BenchPlan as BenchPlan
from workloads.bench.session import run_bench as run_bench
