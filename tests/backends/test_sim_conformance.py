"""The simulator against what real SGLang DFLASH servers said (tests/data/real/<version>: http/*,
logs/*, launch_server_help.txt), one simulator per recorded release imitating it (``--sim-version``):
0.5.17 (a whole run, copied from shared/real-sglang) and 0.5.23 (its --help, and a startup on the H200
up to the HTTP server, whose warmup request then panicked in the radix cache: docs/real-sglang.md).

Shapes, not values: per recorded answer, the status, the JSON key tree and value types, the SSE
framing, metric names and label keys; per recorded log line kind, the event type parse_line gives;
the startup order; the speculative flags of ``--help``. Every recorded file present is checked (a
new recording is picked up by its ``# METHOD /path -> status`` header); one simulator per release.
"""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import httpx
import pytest

from backends.logs.parse import parse_line, strip_ansi
from tests.simproc import launch

DATA = Path(__file__).resolve().parents[1] / "data" / "real"
RELEASES = ("0.5.17", "0.5.23")  # the releases a real server was recorded on
HTTP = [(v, p) for v in RELEASES for p in sorted((DATA / v / "http").glob("*"))]
LOGS = [(v, p) for v in RELEASES for p in sorted((DATA / v / "logs").glob("*.log"))]
ARGS = ("--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "draft",
        "--speculative-draft-window-size", "512", "--enable-metrics", "--context-length", "8192",
        "--sim-step-ms", "0", "--decode-log-interval", "10")
MSGS = [{"role": "user", "content": "Write a Python function fib(n)."}]
# requests of the recordings that carry no "# body:" line (capture order, shared/real-sglang/tools)
BODIES = {
    "chat_nostream.json": {"model": "default", "messages": MSGS, "max_tokens": 64, "temperature": 0},
    "chat_nostream_specdetails.json": {"model": "default", "messages": MSGS, "max_tokens": 64, "temperature": 0,
                                       "return_spec_tokens_details": True},
    "generate_nostream.json": {"text": "def add(a, b):", "sampling_params": {"max_new_tokens": 64, "temperature": 0}},
    "err_chat_badjson.txt": b"{not json",
    "err_chat_toolong.txt": {"model": "default", "messages": MSGS, "max_tokens": 10**7},
    "err_chat_nomessages.txt": {"model": "default", "max_tokens": 8},
    "err_generate_neg.txt": {"text": "x", "sampling_params": {"max_new_tokens": -5}},
    "err_chat_model.txt": {"model": "no-such-model", "messages": MSGS, "max_tokens": 8},
}
# whole objects whose real key set is SGLang's ~500 ServerArgs fields: the simulator's keys must be
# among them (it sends the fields ddtune reads), not all of them
SUBSET_KEYS = ("server_info", "internal_states")
# keys SGLang sends only in some states: avg_spec_accept_length once a verify step ran (get_internal_state,
# scheduler.py of the 0.5.19 wheel); the recording was taken before one
OPTIONAL = {"avg_spec_accept_length"}
HEAD = re.compile(r"# (GET|POST) (\S+) -> (\d+)")


@pytest.fixture(scope="module")
def sims(tmp_path_factory):
    """One simulator per release, started when a test first asks for it: ``sims(version)``."""
    running: dict[str, object] = {}

    def get(version: str):
        if version not in running:
            running[version] = launch("--sim-version", version, *ARGS,
                                      log_dir=tmp_path_factory.mktemp(f"conformance-{version}"))
        return running[version]

    yield get
    for proc in running.values():
        proc.kill_group()  # type: ignore[attr-defined]


def recorded(path: Path) -> tuple[str | None, str | None, int | None, object, str]:
    """(method, path, status, request body, answer text) of one recording."""
    lines = path.read_text().split("\n")
    method = route = status = None
    body: object = BODIES.get(path.name)
    rest = []
    for i, line in enumerate(lines):
        m = HEAD.match(line)
        if i < 3 and m:
            method, route, status = m[1], m[2], int(m[3])
        elif i < 3 and line.startswith("# body: "):
            body = json.loads(line[8:])
        elif i < 3 and line.startswith("# headers: "):
            continue
        else:
            rest.append(line)
    if path.name.startswith("get_") and route is not None:  # the query string is in the file name
        q = re.search(r"_q_(.+)\.txt$", path.name)
        route += "?" + q[1].replace("-", "=", 1) if q else ""
    return method, route, status, body, "\n".join(rest)


def shape(v):
    if isinstance(v, dict):
        return {k: shape(x) for k, x in v.items()}
    if isinstance(v, list):
        return [shape(v[0])] if v else []
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return None if v is None else type(v).__name__


def differences(real, mine, where="", subset=False) -> list[str]:
    """Where ``mine`` is not shaped like ``real``; null matches anything, an empty list any list."""
    if real is None or mine is None:
        return []
    if isinstance(real, dict) and isinstance(mine, dict):
        out = [f"{where}.{k}: not sent" for k in real.keys() - mine.keys() if not subset]
        out += [f"{where}.{k}: not in the recording" for k in mine.keys() - real.keys()
                if not k.startswith("sim_") and k not in OPTIONAL]
        for k in real.keys() & mine.keys():
            out += differences(real[k], mine[k], f"{where}.{k}", k in SUBSET_KEYS)
        return out
    if isinstance(real, list) and isinstance(mine, list):
        return differences(real[0], mine[0], where + "[]", subset) if real and mine else []
    return [] if real == mine else [f"{where}: {real} recorded, {mine} sent"]


def sse_chunks(text: str, timed: bool) -> tuple[list[str], list]:
    lines = [line.split("\t", 1)[1] if timed and "\t" in line else line for line in text.split("\n")]
    data = [line for line in lines if line.startswith("data: ")]
    return data, [json.loads(d[6:]) for d in data if d != "data: [DONE]"]


def ask(sim, method: str, route: str, body) -> httpx.Response:
    if method == "GET":
        return httpx.get(sim.url + route, timeout=30)
    if isinstance(body, bytes):
        return httpx.post(sim.url + route, content=body, headers={"content-type": "application/json"}, timeout=30)
    return httpx.post(sim.url + route, json=body, timeout=30)


def metric_labels(text: str) -> dict[str, set[tuple[str, ...]]]:
    out: dict[str, set[tuple[str, ...]]] = {}
    for m in re.finditer(r"^(sglang:\w+)(?:\{([^}]*)\})? \S+$", text, re.M):
        keys = tuple(sorted(kv.split("=", 1)[0] for kv in m[2].split(","))) if m[2] else ()
        out.setdefault(m[1], set()).add(keys)
    return out


@pytest.mark.parametrize("version, path", [(v, p) for v, p in HTTP if p.suffix in (".json", ".txt", ".sse")],
                         ids=[f"{v}-{p.name}" for v, p in HTTP if p.suffix in (".json", ".txt", ".sse")])
def test_answer_is_shaped_like_the_recording(sims, version, path):
    sim = sims(version)
    method, route, status, body, text = recorded(path)
    if path.name.startswith("metrics_") or path.name == "get_metrics.txt":
        mine = metric_labels(httpx.get(sim.url + "/metrics", timeout=30).text)
        real = metric_labels(text)
        assert mine.keys() <= real.keys(), sorted(mine.keys() - real.keys())
        for name in ("sglang:spec_verify_calls_total", "sglang:generation_tokens_total", "sglang:spec_accept_length",
                     "sglang:spec_accept_rate", "sglang:gen_throughput", "sglang:num_running_reqs"):
            assert name in mine, name
        for name, keys in mine.items():
            assert keys <= real[name], (name, keys, real[name])
        return
    if path.name == "generate_8x256.json":  # a list of /generate answers under a fixed load
        answers = json.loads(text)
        r = ask(sim, "POST", "/generate", {"text": "def f0(x):", "sampling_params": {
            "max_new_tokens": 256, "temperature": 0, "ignore_eos": True}})
        assert differences(shape(answers[0]), shape(r.json())) == []
        return
    if path.name == "server_info_dflash.json":  # the bare body of a GET /server_info, no request line
        method, route, status = "GET", "/server_info", 200
    assert method is not None and route is not None, f"{path.name}: no request line to replay"
    if method == "POST" and body is None:
        pytest.skip(f"{path.name}: the request body is not recorded")
    if path.suffix == ".sse":
        with httpx.stream("POST", sim.url + route, json=body, timeout=30) as r:
            got = r.read().decode()
        assert r.status_code == status
        assert r.headers["content-type"].startswith("text/event-stream")
        real_data, real_chunks = sse_chunks(text, timed=True)
        my_data, my_chunks = sse_chunks(got, timed=False)
        assert my_data[-1] == real_data[-1] == "data: [DONE]"
        assert got.endswith("\n\n") and all(part.startswith("data: ") for part in got.strip().split("\n\n"))
        real_shapes = [shape(c) for c in real_chunks]
        for i, chunk in enumerate(my_chunks):  # each sent chunk is shaped like some recorded chunk
            assert any(not differences(s, shape(chunk)) for s in real_shapes), \
                (i, chunk, [differences(s, shape(chunk)) for s in real_shapes])
        for s in real_shapes:                 # and each recorded kind of chunk is sent
            assert any(not differences(s, shape(c)) for c in my_chunks), s
        return
    r = ask(sim, method, route, body)
    assert r.status_code == status, r.text
    if not text.strip() or not text.lstrip().startswith(("{", "[")):
        assert bool(r.text.strip()) == bool(text.strip()) and not r.text.lstrip().startswith("{"), r.text
        return
    root = "server_info" if "server_info" in path.name else ""
    diffs = differences(shape(json.loads(text)), shape(r.json()), root, subset=bool(root))
    assert not diffs, "\n".join(diffs)


def kind(line: str) -> str | None:
    """A log line's kind: the first words of its message, without the time prefix and numbers."""
    text = strip_ansi(line).strip()
    text = re.sub(r"^\[[^\]]*\] ", "", text)
    if not text or text[0] in "0123456789 ":
        return None
    return " ".join(re.sub(r"[\d.=:,\[\]()'\"]+", " ", text).split()[:3]) or None


def log_events(text: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for line in re.split(r"[\r\n]", text):
        k = kind(line)
        if k is not None:
            ev = parse_line(line)
            out.setdefault(k, set()).add(type(ev).__name__ if ev is not None else "None")
    return out


# the milestones of a real startup, in their recorded order (0.5.23's recording ends at its warmup request)
ORDER = {
    "0.5.17": ("UserWarning: 'python -m sglang.launch_server'", "server_args=ServerArgs(",
               "Init torch distributed begin", "Load weight begin", "Initialized DFLASH draft runner",
               "KV Cache is allocated", "Capture target verify", "Capture draft verify", "max_total_num_tokens=",
               "Engine startup timings", "Started server process", "Uvicorn running on", "The server is fired up"),
    "0.5.23": ("UserWarning: 'python -m sglang.launch_server'", "server_args={", "Init parallel begin",
               "Memory baseline taken", "Load weight begin", "Initialized DFLASH draft runner",
               "DFLASH draft runner ready", "KV Cache is allocated", "Memory pool end", "Capture target verify",
               "Capture draft verify", "max_total_num_tokens=", "Tree cache initialized", "Engine startup timings",
               "Started server process", "Uvicorn running on"),
}


@pytest.mark.parametrize("version, path", LOGS, ids=[f"{v}-{p.name}" for v, p in LOGS])
def test_log_lines_parse_to_the_recorded_events_in_the_recorded_order(sims, version, path):
    sim = sims(version)
    real_text = path.read_text(errors="replace")
    httpx.post(sim.url + "/v1/chat/completions", json=BODIES["chat_nostream.json"], timeout=30)
    mine_text = sim.text()
    real, mine = log_events(real_text), log_events(mine_text)
    shared = real.keys() & mine.keys()
    assert len(shared) >= 20, sorted(shared)
    for k in shared:
        assert mine[k] <= real[k], (k, real[k], mine[k])
    order = ORDER[version]
    positions = [(needle, real_text.find(needle), mine_text.find(needle)) for needle in order]
    assert all(r >= 0 and m >= 0 for _, r, m in positions), positions
    assert [n for n, _, _ in sorted(positions, key=lambda p: p[1])] == list(order)  # the list is the recording's
    assert [n for n, _, _ in sorted(positions, key=lambda p: p[2])] == list(order)
    if "Decode batch" in real_text:  # a burst ends on an idle decode line (#token: 0), as every recorded burst does
        assert re.search(r"Decode batch, #running-req: \d+, #token: 0, ", mine_text)


@pytest.mark.parametrize("version, path", LOGS, ids=[f"{v}-{p.name}" for v, p in LOGS])
def test_startup_lines_are_the_recorded_ones(sims, version, path):
    """Every kind of line the simulator prints before its HTTP server, the recording has too."""
    def kinds(text: str) -> set[str | None]:  # the install's path in the entrypoint warning is no kind of line
        return {kind(re.sub(r"^/\S+\.py:\d+: ", "", line)) for line in re.split(r"[\r\n]", text)}

    lines = sims(version).text().splitlines()
    startup = lines[:next(i for i, line in enumerate(lines) if "Started server process" in line)]
    mine = kinds("\n".join(startup)) - {None}
    assert mine <= kinds(path.read_text(errors="replace")), sorted(mine - kinds(path.read_text(errors="replace")))


def sim_help(version: str) -> str:
    import subprocess
    import sys

    from tests.helpers import REPO
    out = subprocess.run([sys.executable, "-m", "backends.sim", "--sim-version", version, "--help"], cwd=REPO,
                         capture_output=True, text=True, timeout=30).stdout
    return out.split("simulator (ddtune sim only")[0]


def flags(text: str) -> set[str]:
    """The flags a --help names, the simulator's own --sim-* left out."""
    return {f for f in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]", text) if not f.startswith("--sim-")}


@pytest.mark.parametrize("version", RELEASES)
def test_help_flags_are_the_recorded_ones(version):
    from backends.sim.flags import OPEN_PR_FLAGS

    real = flags((DATA / version / "launch_server_help.txt").read_text())
    mine = flags(sim_help(version))
    assert mine - set(OPEN_PR_FLAGS) <= real, sorted(mine - real)
    assert not set(OPEN_PR_FLAGS) & real  # still no release of them: the allowance stays honest
    assert {"--speculative-algorithm", "--speculative-draft-model-path", "--speculative-num-draft-tokens",
            "--speculative-dflash-block-size", "--speculative-draft-window-size", "--mem-fraction-static",
            "--decode-log-interval", "--enable-metrics", "--nccl-port"} <= mine
    assert "--speculative-dflash-draft-window-size" not in real | mine  # a hidden deprecated alias, then gone


def test_deprecations_and_sigterm_as_recorded(tmp_path):
    argv = [a if a != "--speculative-draft-window-size" else "--speculative-dflash-draft-window-size" for a in ARGS]
    sim = launch("--sim-version", "0.5.17", *argv, "--disable-cuda-graph", log_dir=tmp_path)
    try:
        text = sim.text()
        assert "\x1b[1;33m'--speculative-dflash-draft-window-size' is deprecated" in text
        assert "\x1b[1;33m'--disable-cuda-graph' is deprecated" in text
        assert text.index("is deprecated") < text.index("server_args=ServerArgs(")
        sim.signal(signal.SIGTERM)
        assert sim.wait_exit(timeout=20) == -signal.SIGKILL  # recorded: -9 even on a clean stop
        assert "SIGTERM received. signum=None frame=None. Draining requests and shutting down..." in sim.text()
    finally:
        sim.kill_group()
