"""``ddtune inspect`` run through ``tui.cli.main`` in-process (tests.helpers.run_cli): the JSON
contract on the golden logs, the human report, and bad input (missing file, directory, binary garbage)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.helpers import run_cli

LOGS = Path(__file__).resolve().parent.parent / "data" / "logs"
KEYS = ["server_pid", "ready", "weights", "shard_progress", "kv_cache_tokens", "cuda_graph", "draft",
        "decode", "fatal", "notes", "phases", "last_phase", "alarms", "deprecated"]


@pytest.mark.parametrize("name", ["dflash_0523_tp2", "oom_at_capture", "port_in_use",
                                  "real_issue11218_capture_failed_compose"])
def test_json_output_is_exactly_the_golden_document(name):
    out = run_cli("inspect", str(LOGS / f"{name}.log"), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)  # the whole of stdout is one JSON document
    assert list(doc) == KEYS
    assert doc == json.loads((LOGS / f"{name}.inspect.json").read_text())


def test_json_shape_types():
    doc = json.loads(run_cli("inspect", str(LOGS / "dflash_0523_tp2.log"), "--json").stdout)
    assert isinstance(doc["server_pid"], int) and doc["ready"] is True
    assert set(doc["weights"][0]) == {"elapsed_s", "type", "mem_usage_gb"}
    assert set(doc["draft"]) == {"window_size", "compact_cache", "block_size"}
    assert set(doc["decode"]) == {"lines", "accept_len_mean", "accept_len_last", "gen_throughput_last",
                                  "running_req_max"}
    assert doc["fatal"] is None
    failed = json.loads(run_cli("inspect", str(LOGS / "oom_at_capture.log"), "--json").stdout)
    assert failed["fatal"]["kind"] == "oom" and "CUDA out of memory" in failed["fatal"]["message"]
    assert failed["cuda_graph"][-1] == {"name": "draft verify", "elapsed_s": None}


def test_human_report_names_phases_draft_decode_and_fatal():
    ok = run_cli("inspect", str(LOGS / "dflash_0523_tp2.log"))
    assert ok.returncode == 0, ok.stderr
    text = ok.stdout
    for fragment in ("server: ready, pid 41235", "loading-weights", "capturing-graphs", "warmup",
                     "Qwen3ForCausalLM", "target verify", "window 2048 (compact cache), block size 16",
                     "accept len mean 3.47", "max running 8"):
        assert fragment in text, fragment
    assert "shards: 4/4 (target)" in text  # the target's 4-shard bar, not the draft's 1/1 that came last
    bad = run_cli("inspect", str(LOGS / "port_in_use.log"))
    assert bad.returncode == 0
    assert "fatal: port_in_use" in bad.stdout
    assert "[Errno 98]" in bad.stdout
    full = run_cli("inspect", str(LOGS / "dflash_0511.log")).stdout
    assert "full-context draft cache" in full


def test_missing_file_and_directory_exit_2_naming_them(tmp_path):
    missing = tmp_path / "nope.log"
    out = run_cli("inspect", str(missing))
    assert out.returncode == 2
    assert f"no such file: {missing}" in out.stderr
    assert out.stdout == ""
    out = run_cli("inspect", str(tmp_path), "--json")
    assert out.returncode == 2
    assert "is a directory" in out.stderr


def test_binary_garbage_and_empty_files_do_not_crash(tmp_path):
    garbage = tmp_path / "garbage.bin"
    rnd = random.Random(7)
    garbage.write_bytes(bytes(rnd.randrange(256) for _ in range(200_000)) + b"\x00" * 1000)
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    for path in (garbage, empty):
        out = run_cli("inspect", str(path), "--json")
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        assert doc["ready"] is False and doc["decode"]["lines"] == 0
        human = run_cli("inspect", str(path))
        assert human.returncode == 0 and "server: not ready" in human.stdout


def test_one_long_line_without_newline(tmp_path):
    path = tmp_path / "long.log"
    with open(path, "w") as fh:
        fh.write("[2026-11-30 09:00:00] The server is fired up and ready to roll!\n")
        fh.write("x" * 5_000_000)
    out = run_cli("inspect", str(path), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["ready"] is True


def test_help_has_examples():
    out = run_cli("inspect", "--help")
    assert out.returncode == 0
    assert "examples:" in out.stdout and "--json" in out.stdout


REAL = Path(__file__).resolve().parent.parent / "data" / "real" / "0.5.17" / "logs"
YELLOW = "\x1b[33m"


def test_deprecations_the_server_warned_about_are_named(tmp_path):
    """The real 0.5.17 log's entrypoint warning, and its flag warnings (yellow ANSI, as it prints them)."""
    doc = json.loads(run_cli("inspect", str(REAL / "dflash_w512_ddtune_up_load_console.log"), "--json").stdout)
    assert doc["deprecated"] == ["entrypoint 'python -m sglang.launch_server' still works, 'sglang serve' is "
                                 "recommended"]
    assert doc["alarms"] == []  # accept len 16.00 all along
    log = tmp_path / "server.log"
    log.write_text(
        f"{YELLOW}'--speculative-dflash-draft-window-size' is deprecated and will be removed in a future release. "
        "Use '--speculative-draft-window-size' instead.\x1b[0m\n"
        f"{YELLOW}'--disable-cuda-graph' is deprecated and will be removed. "
        "Use '--cuda-graph-backend-{decode,prefill}=disabled' instead.\x1b[0m\n")
    out = run_cli("inspect", str(log))
    assert out.returncode == 0, out.stderr
    assert "deprecated: --speculative-dflash-draft-window-size is deprecated: use --speculative-draft-window-size" \
        in out.stdout
    assert "deprecated: --disable-cuda-graph is deprecated: use --cuda-graph-backend-{decode,prefill}=disabled" \
        in out.stdout


def decode_line(second: int, accept: float, tokens: int = 4000) -> str:
    return (f"[2026-12-01 19:43:{second:02d}] Decode batch, #running-req: 8, #token: {tokens}, token usage: 0.01, "
            f"accept len: {accept:.2f}, accept rate: 0.01, cuda graph: True, gen throughput (token/s): 300.00, "
            f"#queue-req: 0\n")


def test_an_acceptance_collapse_is_flagged_from_the_log_alone(tmp_path):
    log = tmp_path / "collapsed.log"
    log.write_text("".join(decode_line(s, 1.0) for s in range(0, 30, 2)))
    doc = json.loads(run_cli("inspect", str(log), "--json").stdout)
    (alarm,) = doc["alarms"]
    assert alarm["kind"] == "acceptance_collapse" and alarm["value"] == 1.0
    out = run_cli("inspect", str(log))
    assert "ALARM acceptance_collapse: acceptance 1.00 <= 1.10 for 20 s of decode lines" in out.stdout
    short = tmp_path / "brief.log"  # 10 s low, then good: no collapse; idle lines are no samples
    short.write_text("".join(decode_line(s, 1.0) for s in range(0, 10, 2)) + decode_line(12, 5.0)
                     + "".join(decode_line(s, 1.0, tokens=0) for s in range(14, 50, 2)))
    assert json.loads(run_cli("inspect", str(short), "--json").stdout)["alarms"] == []


def test_inspect_reads_the_decode_lines_of_sglang_0523(tmp_path):
    """0.5.23 lines in the shapes of its source (tests/data/real/0.5.23/batch_log_format.toml): with the
    ``[N]`` of SGLANG_LOG_FORWARD_ITERS, cap len, the MFU and occupancy suffixes, a HiSparse pool and a
    decode server fed by a prefill server; the report counts all of them."""
    from tests.batchlines import VALUES, render

    shapes = [frozenset({"iter", "spec"}), frozenset({"iter", "spec", "cap", "mfu", "device_timer"}),
              frozenset({"spec", "hisparse", "disagg_decode", "host_receive"}), frozenset({"iter", "spec", "ssm"})]
    rows = [(2, 3.0, 100.5), (8, 4.0, 900.25), (5, 3.5, 450.0), (3, 5.5, 300.75)]
    log = tmp_path / "sglang-0.5.23.log"
    lines = [f"[2026-11-30 09:01:{10 + i:02d} TP0] " + render("0.5.23", "decode", on, dict(
                 VALUES, batch_iter=1000 + 40 * i, num_running_reqs=running, spec_accept_length=accept,
                 last_gen_throughput=rate, graph_label="cuda graph", can_run_cuda_graph=True))
             for i, (on, (running, accept, rate)) in enumerate(zip(shapes, rows, strict=True))]
    assert sum("Decode batch [" in line for line in lines) == 3
    log.write_text("\n".join(lines) + "\n")
    doc = json.loads(run_cli("inspect", str(log), "--json").stdout)
    assert doc["decode"] == {"lines": 4, "accept_len_mean": 4.0, "accept_len_last": 5.5,
                             "gen_throughput_last": 300.75, "running_req_max": 8}
    text = run_cli("inspect", str(log)).stdout
    assert "accept len mean 4.00" in text and "max running 8" in text, text
