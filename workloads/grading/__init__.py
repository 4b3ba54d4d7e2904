"""Judging model answers: extract the answer's code, run it in a sandbox behind an OS boundary, compare
on the trusted side; the coding problems, ``ddtune eval`` and the lossless check.

The face: two use cases, each one call with a spec, typed events and a typed outcome: ``run_eval``
(ask a server every problem, or grade saved answers again) and ``check_lossless`` (record a baseline,
or check a speculative server against one); and the doctor's lines about the sandbox here
(``sandbox_checks``).
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "workloads.grading.eval_case": ("EvalOutcome", "EvalSpec", "ProblemGraded", "run_eval"),
    "workloads.grading.evaluate": ("Grade",),
    "workloads.grading.lossless_check": ("LosslessOutcome", "LosslessSpec", "PromptAnswered", "check_lossless"),
    "workloads.grading.sandbox_doctor": ("sandbox_checks",),
})
