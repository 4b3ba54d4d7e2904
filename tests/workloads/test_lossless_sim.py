"""`ddtune check-lossless` against real simulators (issue 13, item 8): the default simulator is
lossless, --sim-diverge-rate R makes about R of the prompts diverge, bad baselines exit 2."""

from __future__ import annotations

import json

import httpx

from tests.helpers import run_ddtune
from tests.workloads.sim_args import FAST, SPEC
from workloads.grading.lossless import first_difference
from workloads.grading.problems import load_problems


def record(url: str, path, *extra: str):
    out = run_ddtune("check-lossless", "--url", url, "--save-baseline", str(path), "--json", *extra, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def check(url: str, path, *extra: str):
    return run_ddtune("check-lossless", "--url", url, "--baseline", str(path), "--json", *extra, timeout=120)


def test_first_difference():
    assert first_difference((1, 2, 3), (1, 2, 3)) is None
    assert first_difference((1, 2, 3), (1, 9, 3)) == 1
    assert first_difference((1, 2), (1, 2, 3)) == 2  # one side stopped early
    assert first_difference((), ()) is None


def test_default_simulator_is_lossless(start_sim, state_dir, tmp_path):
    plain = start_sim(*FAST)
    dflash = start_sim(*SPEC, *FAST)
    base = tmp_path / "base.json"
    saved = record(plain.url, base, "--prompts", "20", "--max-tokens", "128")
    assert saved["prompts"] == 20 and saved["unit"] == "token_ids"
    # earlier traffic with the same prompt must not change its greedy answer (repeats vary only when sampled)
    first = load_problems()[0].chat_prompt()
    for _ in range(2):
        r = httpx.post(dflash.url + "/generate", json={"text": first, "sampling_params": {"max_new_tokens": 8}},
                       timeout=30)
        assert r.status_code == 200
    out = check(dflash.url, base)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["prompts"] == 20 and report["diverged"] == 0 and report["divergence_rate"] == 0.0
    assert report["unit"] == "token_ids" and report["server"]["algorithm"] == "DFLASH"
    assert all(not r["diverged"] and r["tokens"] == r["baseline_tokens"] > 0 for r in report["results"])
    text = run_ddtune("check-lossless", "--url", dflash.url, "--baseline", str(base), "--prompts", "5", timeout=120)
    assert text.returncode == 0, text.stderr
    assert "diverged: 0/5 prompts (0%)" in text.stdout and "by token id" in text.stdout


def test_diverge_rate_is_found(start_sim, state_dir, tmp_path):
    plain = start_sim(*FAST)
    lossy = start_sim(*SPEC, *FAST, "--sim-diverge-rate", "0.5")
    base = tmp_path / "base.json"
    record(plain.url, base, "--prompts", "20", "--max-tokens", "96")
    out = check(lossy.url, base)
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    assert 4 <= report["diverged"] <= 16, report["diverged"]
    assert report["divergence_rate"] == report["diverged"] / 20
    for r in report["results"]:
        if r["diverged"]:
            assert 0 <= r["first_difference"] < 96 and r["from"] != r["baseline_from"]
        else:
            assert r["first_difference"] is None
    again = json.loads(check(lossy.url, base).stdout)  # deterministic given the seed
    assert [r["first_difference"] for r in again["results"]] == [r["first_difference"] for r in report["results"]]
    text = run_ddtune("check-lossless", "--url", lossy.url, "--baseline", str(base), timeout=120)
    assert text.returncode == 1 and "DIVERGES at position" in text.stdout
    assert f"diverged: {report['diverged']}/20 prompts" in text.stdout


def test_bad_baselines_exit_2_naming_the_fix(start_sim, state_dir, tmp_path):
    plain = start_sim(*FAST)
    other = start_sim(*SPEC, *FAST, "--model-path", "other-model")
    base = tmp_path / "base.json"
    record(plain.url, base, "--prompts", "3", "--max-tokens", "16")
    doc = json.loads(base.read_text())

    def bad(name: str, content: str | None, url: str = plain.url, *extra: str):
        path = tmp_path / name
        if content is not None:
            path.write_text(content)
        out = check(url, path, *extra)
        assert out.returncode == 2, (name, out.returncode, out.stderr)
        assert out.stdout == ""
        assert "--save-baseline" in out.stderr or "record" in out.stderr, out.stderr
        return out.stderr

    assert "no such file" in bad("missing.json", None)
    assert "not JSON" in bad("corrupt.json", '{"kind": "ddtune-lossless-baseline", "prompts": [')
    assert "not a ddtune lossless baseline" in bad("other.json", json.dumps({"hello": 1}))
    assert "malformed" in bad("malformed.json", json.dumps({**doc, "prompts": [{"id": "fib"}]}))
    assert "format 99" in bad("future.json", json.dumps({**doc, "format": 99}))
    err = bad("base-other-model.json", json.dumps(doc), other.url)
    assert "recorded from model 'demo'" in err and "'other-model'" in err
    changed = {**doc, "prompts": [dict(doc["prompts"][0], prompt="something else"), *doc["prompts"][1:]]}
    assert "prompts do not match" in bad("changed.json", json.dumps(changed))
    assert "only 3 in the baseline" in bad("base-more.json", json.dumps(doc), plain.url, "--prompts", "5")
    assert "recorded with 16" in bad("base-tokens.json", json.dumps(doc), plain.url, "--max-tokens", "32")


def test_server_and_flags_must_fit(start_sim, state_dir, tmp_path):
    plain = start_sim(*FAST)
    dflash = start_sim(*SPEC, *FAST)
    out = run_ddtune("check-lossless", "--url", dflash.url)
    assert out.returncode == 2 and "runs speculative decoding (DFLASH)" in out.stderr and "--baseline" in out.stderr
    out = run_ddtune("check-lossless", "--url", dflash.url, "--save-baseline", str(tmp_path / "b.json"))
    assert out.returncode == 2 and "speculation off" in out.stderr
    assert not (tmp_path / "b.json").exists()
    out = run_ddtune("check-lossless", "--url", plain.url)
    assert out.returncode == 2 and "nothing to compare" in out.stderr and "--save-baseline" in out.stderr
    out = run_ddtune("check-lossless", "--url", plain.url, "--baseline", "x", "--save-baseline", "y")
    assert out.returncode == 2 and "give one of them" in out.stderr
    out = run_ddtune("check-lossless", "--url", plain.url, "--prompts", "999", "--save-baseline", str(tmp_path / "b"))
    assert out.returncode == 2 and "only" in out.stderr and "coding problems" in out.stderr


def test_the_readme_baseline_command_runs_a_server_without_draft_flags(state_dir, tmp_path, groups):
    """Issue 22 item 7: the README's one command records greedy.json on a speculation-off server (no
    --speculative-* flag at all, the window's default included) and brings the drafter back."""
    from tests.backends.lifecycle_support import write_config

    config = str(write_config(tmp_path))
    off = run_ddtune("--config", config, "up", "--no-speculation", timeout=120)
    state = groups.track_state()
    assert off.returncode == 0, off.stderr
    assert not [a for a in state["argv"] if a.startswith("--speculative-")], state["argv"]
    saved = run_ddtune("--config", config, "check-lossless", "--save-baseline", str(tmp_path / "greedy.json"),
                       "--prompts", "2", "--max-tokens", "16", timeout=120)
    assert saved.returncode == 0, saved.stderr
    back = run_ddtune("--config", config, "up", "--apply-config", timeout=120)
    state = groups.track_state()
    assert back.returncode == 0, back.stderr
    assert "--speculative-draft-window-size" in state["argv"]
    check = run_ddtune("--config", config, "check-lossless", "--baseline", str(tmp_path / "greedy.json"), timeout=120)
    assert check.returncode == 0, check.stderr
    assert run_ddtune("--config", config, "down", timeout=60).returncode == 0
