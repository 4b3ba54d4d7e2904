# The types of what workloads.grading offers (its __init__.py loads each module on first use).

from workloads.grading.eval_runner import run_eval as run_eval
from workloads.grading.evaluate import read_responses as read_responses, regrade as regrade, summarize as summarize
from workloads.grading.lossless import (baseline_doc as baseline_doc, baseline_prompts as baseline_prompts,
                                        check_matches as check_matches, compare_outputs as compare_outputs,
                                        read_baseline as read_baseline, record_outputs as record_outputs,
                                        write_baseline as write_baseline)
from workloads.grading.problems import load_problems as load_problems, select_problems as select_problems
from workloads.grading.sandbox_isolation import isolation as isolation, protections as protections
