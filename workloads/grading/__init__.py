"""Judging model answers: extract the answer's code, run it in a sandbox behind an OS boundary, compare
on the trusted side; the coding problems, ``ddtune eval`` and the lossless check.

The face: the coding problems; ``run_eval`` (ask a server, grade, record) and ``regrade`` (grade saved
answers again); the lossless check's steps (record greedy outputs, save or read a baseline, compare);
and what the sandbox can isolate here (``isolation``, ``protections``), for ``ddtune doctor``.
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "workloads.grading.eval_runner": ("run_eval",),
    "workloads.grading.evaluate": ("read_responses", "regrade", "summarize"),
    "workloads.grading.lossless": ("baseline_doc", "baseline_prompts", "check_matches", "compare_outputs",
                                   "read_baseline", "record_outputs", "write_baseline"),
    "workloads.grading.problems": ("load_problems", "select_problems"),
    "workloads.grading.sandbox_isolation": ("isolation", "protections"),
})
