"""logkind: the one classifier of log lines, over the real and reconstructed SGLang logs in tests/data/logs,
the text fallback for lines logparse does not know, and every event type having a kind."""

from __future__ import annotations

import dataclasses
import inspect
from collections import Counter
from pathlib import Path

import pytest

from backends.logs import events as logevents
from backends.logs import llama_events
from backends.logs.events import DecodeBatch, DraftRunner, Fatal, LogEvent, ServerArgs
from backends.logs.kind import KINDS, LogLine, classify, read_lines
from backends.logs.parse import parse_line

LOGS = Path(__file__).resolve().parent.parent / "data" / "logs"
T = "2026-11-30 09:00:08"


def fixture_lines(name: str) -> list[str]:
    return [line for line in (LOGS / name).read_text().splitlines() if line and not line.startswith("#")]


# Kinds per fixture, counted: a change in how any line of these logs is classified shows here.
GOLDEN = {
    "dflash_0511.log": {"phase": 31, "info": 2, "decode": 2, "draft": 1, "http": 1},
    "dflash_0523_tp2.log": {"phase": 49, "http": 6, "decode": 5, "info": 2, "draft": 2},
    "oom_at_capture.log": {"phase": 28, "info": 6, "fatal": 4, "error": 3, "draft": 1},
    "port_in_use.log": {"phase": 15, "info": 4, "fatal": 1},
    "real_issue11218_capture_failed_compose.log": {"info": 12, "error": 3, "fatal": 2},
    "real_kernelnpu608_spec_decode.log": {"http": 6, "decode": 4},
    "real_pr22166_decode.log": {"http": 6, "decode": 4},
    "real_pr4826_gemma3_startup.log": {"phase": 6, "info": 2},
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_fixture_kinds(name):
    assert Counter(line.kind for line in read_lines(fixture_lines(name))) == GOLDEN[name]


@pytest.mark.parametrize("path", sorted(LOGS.glob("*.log")), ids=lambda p: p.name)
def test_kind_follows_the_parsed_event(path):
    for line in read_lines(fixture_lines(path.name)):
        assert line.kind in KINDS
        assert line.event == parse_line(line.text)  # the event is logparse's, parsed once per line
        if isinstance(line.event, Fatal):
            assert line.kind == ("error" if line.event.generic else "fatal")
        if isinstance(line.event, DecodeBatch):
            assert line.kind == "decode"
        if isinstance(line.event, DraftRunner):
            assert line.kind == "draft"


def test_the_oom_log_marks_the_ending_fatal_and_the_traceback_as_errors():
    lines = read_lines(fixture_lines("oom_at_capture.log"))
    fatal = [line.text for line in lines if line.kind == "fatal"]
    assert any(text.startswith("torch.OutOfMemoryError: CUDA out of memory") for text in fatal)
    assert any("Received sigquit from a child process" in text for text in fatal)
    errors = [line.text for line in lines if line.kind == "error"]
    assert "Traceback (most recent call last):" in errors
    assert all('File "' in text or text.startswith("Traceback") for text in errors)
    assert not any(line.kind in ("fatal", "error") for line in lines if "Load weight" in line.text)


def test_every_event_type_has_a_kind_of_its_own():
    """A new event (SGLang's or llama.cpp's) must be given a kind here, not fall through to the text fallback."""
    events = [cls for module in (logevents, llama_events) for _, cls in inspect.getmembers(module, inspect.isclass)
              if issubclass(cls, LogEvent) and cls not in (LogEvent, llama_events.LlamaEvent)]
    assert len(events) >= 25
    for cls in events:
        fields = {f.name: _dummy(f.type) for f in dataclasses.fields(cls) if f.init and f.name not in ("ts", "ranks")
                  and f.default is dataclasses.MISSING}
        event = cls(**fields)
        kind = classify("no level words here", event)
        assert kind in KINDS
        # the llama.cpp memory-fitting E line is info by design: "this warning is normal"
        assert kind != "info" or cls in (ServerArgs, llama_events.LlamaFitNotice), f"{cls.__name__}: 'info' fallback"


def _dummy(annotation: str):
    if "int" in annotation:
        return 1
    if "float" in annotation:
        return 1.0
    if "bool" in annotation:
        return False
    if "tuple" in annotation:
        return ()
    return "x"


@pytest.mark.parametrize("text,kind", [
    (f"[{T}] WARNING: the draft model's vocab differs from the target's", "warning"),
    (f"[{T} TP0] WARN something odd", "warning"),
    (f"[{T}] ERROR: could not reach the tokenizer", "error"),
    ("2025-12-04 20:35:53 WARNING 151972 [scheduler.py:287] slow step", "warning"),
    ("2025-12-04 20:35:53 ERROR 151972 [scheduler.py:287] step failed", "error"),
    ("CRITICAL: out of disk", "error"),
    ("Traceback (most recent call last):", "error"),
    ('  File "/opt/sglang/srt/managers/scheduler.py", line 3011, in run_scheduler_process', "error"),
    ("svc  |   File \"/x.py\", line 3, in f", "error"),
    (f"[{T}] WARNINGS are counted in the summary", "info"),
    (f"[{T}] Possible solutions:", "info"),
    ("plain words " + "x" * 300 + " ERROR: past the head", "info"),
])
def test_text_fallback(text, kind):
    assert parse_line(text) is None  # lines logparse does not know: the text decides
    assert classify(text, parse_line(text)) == kind


@pytest.mark.parametrize("text,kind", [
    (f"[{T}] INFO:     127.0.0.1:43514 - \"POST /generate HTTP/1.1\" 200 OK", "http"),
    (f"[{T}] INFO:     127.0.0.1:43514 - \"POST /generate HTTP/1.1\" 500 Internal Server Error", "error"),
    ("ValueError: prompt too long", "error"),  # a bare exception: SGLang logs handled errors this way too
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "fatal"),
    (f"[{T}] Scheduler hit an exception: Traceback (most recent call last):", "fatal"),
    (f"[{T}] Initialized DFLASH draft runner. attention_backend=fa3, model=DFlashDraftModel, "
     "block_size=16, draft_window_size=None, compact_cache=False", "draft"),
    (f"[{T}] Initialized DDTree worker. block_size=16, tree_budget=15, max_tree_nodes=64", "draft"),
    (f"[{T}] DFLASH block size mismatch: using speculative_num_draft_tokens=8 but draft config block_size=11.",
     "draft"),
    (f"[{T} TP0] Decode batch, #running-req: 8, #token: 9000, token usage: 0.01, accept len: 6.12, "
     "accept rate: 0.38, cuda graph: True, gen throughput (token/s): 2100.55, #queue-req: 0", "decode"),
    (f"[{T} TP0] Prefill batch, #new-seq: 1, #new-token: 12, #cached-token: 0, token usage: 0.00, "
     "#running-req: 0, #queue-req: 0", "decode"),
    (f"[{T}] The server is fired up and ready to roll!", "phase"),
    (f"[{T}] Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=16, avail mem=11.50 GB",
     "phase"),
])
def test_kind_from_event(text, kind):
    event = parse_line(text)
    assert event is not None
    assert classify(text, event) == kind
    assert read_lines([text]) == [LogLine(text, kind, event)]


def test_event_wins_over_the_text():
    """A Decode batch line that happens to carry ERROR in its text is still a decode line."""
    text = (f"[{T} TP0] Decode batch, #running-req: 1, #token: 9, token usage: 0.01, "
            "gen throughput (token/s): 1.0, ERROR")
    assert isinstance(parse_line(text), DecodeBatch)
    assert classify(text, parse_line(text)) == "decode"
    assert classify(text, None) == "error"  # without the event, the text would decide


def test_note_and_line_values():
    line = LogLine.ddtune("--- ddtune: restarting sim server on port 30000 ---")
    assert (line.kind, line.event) == ("ddtune", None)
    assert "ddtune" in KINDS and len(set(KINDS)) == len(KINDS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        line.kind = "error"  # type: ignore[misc]
    assert read_lines([]) == []
    assert classify("", None) == "info"


def _drawn(text: str) -> dict[str, str]:
    """Each tone of ``text``'s line and the stretch it covers."""
    line = read_lines([text])[0]
    return {tone.name: text[tone.start:tone.end] for tone in line.tones(text)}


def test_tones_say_how_each_stretch_of_a_line_is_drawn():
    """The stamp, the message in its kind's tone, and the spans that matter: the ready line, the draft
    window off or on, the acceptance; every tone is one the console can draw (LogLine.TONES)."""
    off = f"[{T}] Initialized DFLASH draft runner. block_size=16, draft_window_size=None, compact_cache=False"
    assert _drawn(off) == {"stamp": f"[{T}]", "draft-off": off[len(T) + 3:],
                           "window-off": "draft_window_size=None, compact_cache=False"}
    on = f"[{T}] Initialized DFLASH draft runner. block_size=16, draft_window_size=1024, compact_cache=True"
    assert _drawn(on)["window-on"] == "draft_window_size=1024, compact_cache=True"
    assert "draft" in _drawn(on)
    decode = (f"[{T} TP0] Decode batch, #running-req: 8, #token: 9000, token usage: 0.01, accept len: 6.12, "
              "accept rate: 0.38, cuda graph: True, gen throughput (token/s): 1462.20, #queue-req: 0")
    assert _drawn(decode)["accept"] == "accept len: 6.12"
    assert _drawn(decode)["decode"].startswith("Decode batch")
    ready = "The server is fired up and ready to roll!"
    assert _drawn(f"[{T}] {ready}")["ready"] == ready
    assert _drawn("no stamp here") == {"info": "no stamp here"}
    for text in (off, on, decode, "plain"):
        assert {tone.name for tone in read_lines([text])[0].tones(text)} <= set(LogLine.TONES)
    assert set(KINDS) <= set(LogLine.TONES)
