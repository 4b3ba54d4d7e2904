"""`ddtune bench` against the simulator: the matrix, provenance, regrading, a killed server, --resume."""

import json
import os
import re
import signal
import subprocess
import time

from tests.helpers import REPO, ddtune_cmd, ddtune_env, run_ddtune
from tests.workloads.sim_args import SEPARATED, SPEC


def test_coding_matrix_prints_table_and_records_config(start_sim, state_dir, tmp_path):
    sim = start_sim(*SEPARATED)
    out_file = tmp_path / "bench.json"
    out = run_ddtune("bench", "--url", sim.url, "--contexts", "60", "1024", "--concurrency", "1", "8", "--coding",
                     "--max-tokens", "512", "--out", str(out_file), timeout=240)
    assert out.returncode == 0, out.stderr
    assert "TTFT p50/p95/p99 ms" in out.stdout and "coding: pass" in out.stdout
    done = [line for line in out.stderr.splitlines() if line.startswith("cell ")]
    assert [line.split(" done:")[0] for line in done] == ["cell 1/4", "cell 2/4", "cell 3/4", "cell 4/4"]
    assert all(re.search(r"; ETA \d+ s$|; ETA \d+\.\d min$", line) for line in done[:3]), done  # measured, per cell
    assert "ETA" not in done[3]  # the last cell: nothing left
    doc = json.loads(out_file.read_text())
    run, cells = doc["run"], doc["cells"]
    assert run["status"] == "done" and run["schema"] == "ddtune.run/1"
    assert "--speculative-algorithm" in run["server"]["launch_command"]
    assert run["server"]["version"] == "0.5.23"
    assert run["host"]["ddtune_version"] and "gpus" in run["host"]
    assert [(c["context"], c["concurrency"]) for c in cells] == [(60, 1), (60, 8), (1024, 1), (1024, 8)]
    for c in cells:
        assert c["errors"] == 0 and c["requests"] == max(2 * c["concurrency"], 8)
        assert sum(c["verdicts"].values()) == c["requests"]
        assert c["output_tok_s"] > 0 and c["ttft_ms"]["p50"] is not None and c["itl_ms"]["p99"] is not None
        assert c["acceptance"]["mean"] > 1.0 and c["acceptance"]["count"] == c["requests"]
    big = [c for c in cells if c["context"] == 1024]
    # as the server counts them, within the rounding of the chat template's cost (counted with /tokenize)
    sizes = [(c["prompt_tokens"]["min"], c["prompt_tokens"]["max"]) for c in big]
    assert all(1023 <= lo <= hi <= 1025 for lo, hi in sizes), sizes
    small = cells[0]["prompt_tokens"]
    assert small["min"] >= 60 and small["target"] == 60
    # Regrading the saved raw responses reproduces the verdicts.
    rundir = run["dir"]
    regraded = run_ddtune("eval", "--regrade", os.path.join(rundir, "responses.jsonl"), "--json", timeout=240)
    assert regraded.returncode == 0, regraded.stderr
    total = {}
    for c in cells:
        for k, v in c["verdicts"].items():
            total[k] = total.get(k, 0) + v
    assert json.loads(regraded.stdout)["summary"] == total
    assert total["pass"] > 0


def test_killed_server_keeps_finished_cells_and_resume_finishes(start_sim, state_dir):
    sim = start_sim(*SPEC, "--sim-step-ms", "20")
    argv = ("bench", "--url", sim.url, "--contexts", "60", "200", "400", "--concurrency", "1",
            "--max-tokens", "100", "--requests-per-cell", "2", "--warmup", "0")
    proc = subprocess.Popen(ddtune_cmd(*argv), env=ddtune_env(), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        cells_file = None
        while time.monotonic() < deadline:
            found = list((state_dir / "runs").glob("*-bench/cells.jsonl")) if (state_dir / "runs").exists() else []
            if found and found[0].read_text().strip():
                cells_file = found[0]
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        assert cells_file is not None
        os.killpg(sim.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 1, stderr
    assert "stopped answering" in stderr and "--resume" in stderr
    kept = [json.loads(line) for line in cells_file.read_text().splitlines()]
    assert 1 <= len(kept) < 3
    run = json.loads((cells_file.parent / "run.json").read_text())
    assert run["status"] == "failed"

    again = start_sim(*SPEC, "--sim-step-ms", "0")
    out = run_ddtune("bench", "--resume", str(cells_file.parent), "--url", again.url, timeout=180)
    assert out.returncode == 0, out.stderr
    cells = [json.loads(line) for line in cells_file.read_text().splitlines()]
    assert [c["context"] for c in cells][:len(kept)] == [c["context"] for c in kept]
    assert sorted(c["context"] for c in cells) == [60, 200, 400]
    assert json.loads((cells_file.parent / "run.json").read_text())["status"] == "done"


def test_unreachable_server_is_a_clear_error(state_dir):
    from tests.helpers import free_port

    out = run_ddtune("bench", "--url", f"http://127.0.0.1:{free_port()}", "--contexts", "60", "--concurrency", "1")
    assert out.returncode == 1
    assert "cannot reach" in out.stderr and "hint:" in out.stderr


def test_bad_cli_values_exit_2_naming_the_option(state_dir):
    cases = [
        (("bench", "--contexts", "-1"), "--contexts"),  # 0 is allowed: each prompt as it is
        (("bench", "--prompts", "no-such-source"), "--prompts no-such-source"),
        (("bench", "--request-rate", "0"), "--request-rate"),
        (("bench", "--slo", "ttft=5"), "--slo"),
        (("bench", "--concurrency", "8", "x"), "--concurrency"),
        (("bench", "--max-tokens", "-5"), "--max-tokens"),
        (("bench", "--warmup", "-1"), "--warmup"),
        (("bench", "--url", "localhost:30000"), "--url"),
        (("bench", "--resume", "/nonexistent/run"), "--resume"),
        (("load",), "--concurrency"),
        (("load", "--concurrency", "2", "--duration", "0"), "--duration"),
        (("eval", "--problems", "no_such_problem", "--url", "http://127.0.0.1:9"), "--problems"),
    ]
    for argv, option in cases:
        out = run_ddtune(*argv)
        assert out.returncode == 2, (argv, out.stderr)
        assert option in out.stderr, (argv, out.stderr)
