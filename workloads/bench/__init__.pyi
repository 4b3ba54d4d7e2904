# The types of what workloads.bench offers (its __init__.py loads each module on first use).

from workloads.bench.bench_case import (BenchOutcome as BenchOutcome, BenchSpec as BenchSpec,
                                        SetSkipped as SetSkipped, run_bench as run_bench)
from workloads.bench.lines import BenchLines as BenchLines
from workloads.bench.options import option_value as option_value
from workloads.bench.plan import BenchPlan as BenchPlan
from workloads.bench.session import load_sets as load_sets
