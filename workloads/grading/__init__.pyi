# The types of what workloads.grading offers (its __init__.py loads each module on first use).

from workloads.grading.eval_case import (EvalOutcome as EvalOutcome, EvalSpec as EvalSpec,
                                         ProblemGraded as ProblemGraded, run_eval as run_eval)
from workloads.grading.evaluate import Grade as Grade
from workloads.grading.lossless_check import (LosslessOutcome as LosslessOutcome, LosslessSpec as LosslessSpec,
                                              PromptAnswered as PromptAnswered, check_lossless as check_lossless)
from workloads.grading.sandbox_doctor import sandbox_checks as sandbox_checks
