"""llama.cpp as data and text: its knob table and launch plan, the removed-flag refusal, its log lines
as typed events (the memory-fitting E line no failure), n_max verified from the startup lines with
the clamp's reason, and acceptance from its answers' timings and its /metrics counters."""

from __future__ import annotations

from pathlib import Path

import pytest

from backends.core.errors import ConfigError
from backends.knobs.config import config_from_dict
from backends.knobs.plan import plan_launch
from backends.knobs.verify import verify
from backends.launch.dialect import LLAMACPP, llamacpp_info
from backends.logs.acceptance import counter_acceptance, draft_counters, parse_counters
from backends.logs.events import Fatal
from backends.logs.llama_events import LlamaDraftClamp, LlamaFitNotice, LlamaListening
from backends.logs.kind import classify, read_lines
from backends.logs.parse import parse_line
from backends.core.phase import Phase
from backends.server.startup import StartupTracker

LOGS = Path(__file__).resolve().parent.parent / "data" / "logs"
# what the launcher's --help lists (a real llama-server lists these flags too, and many more)
HELP = ("-m, --model FNAME  --host HOST  --port PORT  -md, --spec-draft-model FNAME  --spec-type T  "
        "--spec-draft-n-max N  --spec-draft-n-min N  --spec-draft-p-min P  -c, --ctx-size N  -np, --parallel N  "
        "-t, --threads N  --metrics")


def llama_config(knobs=None, **server):
    return config_from_dict({"server": {"backend": "llamacpp", "model": "/m/t.gguf", "draft_model": "/m/d.gguf",
                                        **server}, "knobs": knobs or {}}, "ddtune.toml")


def test_a_llamacpp_config_reads_llamacpps_knob_table_and_nothing_else_needs_setting():
    bare = config_from_dict({"server": {"backend": "llamacpp"}}, "ddtune.toml")
    assert bare.engine == "llamacpp" and bare.model == "" and bare.draft_model is None
    assert set(bare.knob_table.specs) == {"n_max", "n_min", "p_min", "spec_type", "ctx", "parallel", "threads"}
    assert bare.knobs == {"n_max": None}  # pinned: always shown, the server's default until set
    with pytest.raises(ConfigError, match="unknown knob"):
        config_from_dict({"server": {"backend": "llamacpp"}, "knobs": {"window": 1024}}, "ddtune.toml")
    with pytest.raises(ConfigError, match="no model is set"):
        plan_launch(bare, HELP, ("llama-server",))


def test_the_plan_passes_each_knob_by_llama_servers_flag_and_turns_dflash_on():
    plan = plan_launch(llama_config({"n_max": 8, "ctx": 4096, "parallel": 2, "threads": 1, "p_min": 0.1}),
                       HELP, ("llama-server",), "b11549")
    argv = list(plan.argv)
    assert argv[:7] == ["llama-server", "--model", "/m/t.gguf", "--host", "127.0.0.1", "--port", "30000"]
    pairs = {argv[i]: argv[i + 1] for i in range(1, len(argv) - 1) if argv[i].startswith("--")}
    assert pairs["--spec-type"] == "draft-dflash" and pairs["--spec-draft-model"] == "/m/d.gguf"
    assert (pairs["--spec-draft-n-max"], pairs["--ctx-size"], pairs["--parallel"], pairs["--threads"],
            pairs["--spec-draft-p-min"]) == ("8", "4096", "2", "1", "0.1")
    assert "--metrics" in argv  # the counters: acceptance where answers carry none
    chosen = plan_launch(llama_config({"spec_type": "draft-simple"}), HELP, ("llama-server",))
    assert chosen.argv.count("--spec-type") == 1 and "draft-simple" in chosen.argv
    older = plan_launch(llama_config(), HELP.replace("--spec-draft-model", "--model-draft"), ("llama-server",))
    assert "--model-draft" in older.argv  # the draft flag this build lists


def test_a_removed_flag_is_refused_before_a_launch_naming_its_replacement():
    with pytest.raises(ConfigError, match=r"--draft-max was removed from llama.cpp") as caught:
        plan_launch(llama_config(extra_args=["--draft-max", "8"]), HELP, ("llama-server",), "b11549")
    assert "--spec-draft-n-max" in caught.value.hint
    with pytest.raises(ConfigError, match=r"does not take --no-such-flag"):  # llama-server exits on any unknown flag
        plan_launch(llama_config(extra_args=["--no-such-flag"]), HELP, ("llama-server",))


GOOD = (LOGS / "llamacpp_b11549_dflash.log").read_text().splitlines()


def test_the_log_lines_become_typed_events_and_the_fitting_e_line_is_no_failure():
    lines = read_lines(GOOD)
    fit = next(line for line in lines if "ctx_other" in line.text)
    assert isinstance(fit.event, LlamaFitNotice) and fit.kind == "info"
    assert not any(isinstance(line.event, Fatal) for line in lines)
    clamp = next(line.event for line in lines if isinstance(line.event, LlamaDraftClamp))
    assert (clamp.requested, clamp.block_size, clamp.effective) == (16, 16, 15)
    listening = next(line.event for line in lines if isinstance(line.event, LlamaListening))
    assert (listening.host, listening.port) == ("127.0.0.1", 18124)
    assert next(line.kind for line in lines if "- n_max=16, n_min=0" in line.text) == "draft"
    assert any(line.kind == "decode" and "draft acceptance" in line.text for line in lines)
    for text, kind in (("0.00.002.587 W srv  init: security: no API key", "warning"),
                       ("0.00.009.216 E srv  init: something else broke", "error")):
        assert classify(text, parse_line(text)) == kind and not isinstance(parse_line(text), Fatal)


def test_the_startup_tracker_moves_through_llama_servers_phases_and_fails_on_a_missing_model():
    tracker = StartupTracker()
    tracker.begin_start(0.0)
    seen = []
    for i, text in enumerate(GOOD):
        event = parse_line(text)
        if event is not None and tracker.feed(event, float(i)):
            seen.append(tracker.phase)
    assert seen[0] == Phase.LOADING and Phase.WARMUP in seen and Phase.FAILED not in seen
    bad = StartupTracker()
    bad.begin_start(0.0)
    for text in (LOGS / "llamacpp_b11549_no_model.log").read_text().splitlines():
        event = parse_line(text)
        if event is not None:
            bad.feed(event, 1.0)
    assert bad.phase == Phase.FAILED and "failed to open GGUF file" in (bad.error or "")


def marked(config, lines):
    out = {}
    for text in lines:
        for marker in config.knob_table.log_markers():
            if marker in text:
                out[marker] = text
    return out


def test_n_max_16_on_a_block_16_draft_is_shown_as_15_with_the_clamps_reason():
    config = llama_config({"n_max": 16})
    plan = plan_launch(config, HELP, ("llama-server",))
    checked = verify(plan.expected, marked(config, GOOD), None, knobs=config.knobs, table=config.knob_table)
    (check,) = [c for c in checked.checks if c.name == "n_max"]
    assert (check.status, check.requested, check.effective) == ("mismatch", 16, 15)
    assert check.sentence == ("n_max: requested 16, server says 15 "
                              "(clamped: above the draft's trained block size - 1)")
    assert checked.effective == {"n_max": 15}  # llama.cpp's checked settings only, no SGLang window
    unclamped = [t for t in GOOD if "clamping" not in t]
    again = verify(plan.expected, marked(config, unclamped), None, knobs=config.knobs, table=config.knob_table)
    assert [c.status for c in again.checks if c.name == "n_max"] == ["verified"]


METRICS = """# HELP llamacpp:tokens_predicted_total Number of generation tokens processed
llamacpp:tokens_predicted_total 64
llamacpp:spec_decode_num_draft_tokens_total 59
llamacpp:spec_decode_num_accepted_tokens_total 59
llamacpp:spec_decode_num_drafts_total 4
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 4
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 4
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="2"} 3
"""


def test_acceptance_from_llamas_counters_and_timings_is_tokens_per_target_step():
    counters = parse_counters(METRICS)
    assert counters is not None and (counters.tokens, counters.verify_calls) == (64.0, 5.0)
    assert counter_acceptance(parse_counters(METRICS.replace(" 64", " 0").replace(" 59", " 0")), counters) == 12.8
    drafts = draft_counters(METRICS)
    assert drafts is not None and drafts.per_position == (4.0, 4.0, 3.0)
    assert (drafts.rate, drafts.mean_len) == (1.0, 15.75)  # llama.cpp's own "mean len" of this log's request
    body = {"tokens_predicted": 64, "timings": {"predicted_n": 64, "draft_n": 59, "draft_n_accepted": 59}}
    assert LLAMACPP.acceptance(body) == 12.8 and LLAMACPP.tokens(body) == 64
    assert LLAMACPP.acceptance({"timings": {"predicted_n": 8}}) is None  # no draft: nothing to say
    assert parse_counters("llamacpp:tokens_predicted_total 5\n") is None  # a server that does not draft


def test_props_and_slots_read_as_server_info():
    props = {"build_info": "b0-unknown", "model_path": "/m/t.gguf", "total_slots": 2,
             "default_generation_settings": {"n_ctx": 2048}}
    info = llamacpp_info(props, [{"id": 0, "speculative": True}], build="b11549")
    assert info is not None
    assert (info["engine"], info["version"], info["speculative_algorithm"], info["n_ctx_slot"]) == (
        "llama.cpp", "b11549", "speculative", 2048)
    assert llamacpp_info({**props, "build_info": "b11669-abc"}, [{"speculative": False}])["version"] == "b11669-abc"
    assert llamacpp_info(props, [{"speculative": False}])["speculative_algorithm"] is None
    assert "speculative_algorithm" not in llamacpp_info(props, None)  # /slots off: unknown, not "no"
