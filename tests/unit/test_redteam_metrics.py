"""Red team, round 3: a server's ``/metrics`` text is untrusted (issue 28, item 5). It is read by
``status`` (llama.cpp's draft counters per position), selftest, the bench's and the load's counters
and the bench's contention watch, on the event loop that times the streams.

Held here: a sample never spans two lines (a text of unclosed ``{`` was read once per line, 8 MiB of
them ~35 minutes); a draft position is a small number (``position="100000000000"`` built a tuple that
long); a value that is not a number is skipped (``float('abc')`` was a traceback of ``bench``)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from backends.logs.acceptance import POSITIONS, draft_counters, parse_counters
from tests.helpers import REPO, ddtune_env
from workloads.bench.watch import requests_total

LLAMA = ("llamacpp:tokens_predicted_total 10\nllamacpp:spec_decode_num_accepted_tokens_total 5\n"
         "llamacpp:spec_decode_num_drafts_total 3\nllamacpp:spec_decode_num_draft_tokens_total 9\n")


def test_a_sample_never_spans_two_lines():
    """Labels opened on one line and closed on the next are no sample (nor its value the next line's)."""
    assert parse_counters("sglang:spec_verify_calls_total{\n} 5\nsglang:generation_tokens_total 3\n") is None
    assert parse_counters("sglang:spec_verify_calls_total\n7\nsglang:generation_tokens_total 3\n") is None
    assert requests_total('sglang:num_requests_total{a="b"\n} 5\n') is None
    assert requests_total('sglang:num_requests_total{a="b"} 5\nsglang:num_requests_total{} 2.0 \n') == 7.0


def test_a_value_that_is_not_a_number_is_skipped():
    text = 'sglang:num_requests_total{a="b"} abc\nsglang:num_requests_total{a="c"} 4\n'
    assert requests_total(text) == 4.0 and requests_total('sglang:num_requests_total{} nan\n') is None


def test_draft_positions_are_bounded():
    huge = LLAMA + 'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="100000000000"} 1\n'
    edge = LLAMA + "".join(f'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{{position="{p}"}} {v}\n'
                           for p, v in ((0, "3"), (1, "-2"), (2, "nan"), (POSITIONS, "1"), (9999, "1")))
    # in a child with 1 GiB of address space: the tuple of 10**11 positions fails there, not on the machine
    code = textwrap.dedent(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        from backends.logs.acceptance import draft_counters
        print(len(draft_counters({huge!r}).per_position))
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=ddtune_env(), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "0", done.stderr[-2000:]
    assert draft_counters(edge).per_position == (3.0,)  # negative, NaN and past POSITIONS: left out


def test_eight_mib_of_unclosed_labels_is_read_in_one_pass():
    """What a hostile server sends as /metrics (the 8 MiB an answer may hold), parsed in a child: the
    unfixed patterns took ~35 minutes over it; one pass takes well under a second."""
    code = textwrap.dedent("""
        from backends.logs.acceptance import parse_counters
        from workloads.bench.watch import requests_total
        for name in ("sglang:num_requests_total", "sglang:spec_verify_calls_total"):
            text = (name + "{\\n") * ((8 << 20) // (len(name) + 2))
            assert parse_counters(text) is None and requests_total(text) is None
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=ddtune_env(), capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]
