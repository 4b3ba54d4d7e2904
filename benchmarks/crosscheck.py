"""ddtune bench side by side with SGLang's own ``sglang.bench_serving``, against the DFLASH simulator.

Optional, never in CI: it needs SGLang's package in a separate virtual environment (the recipe is in
benchmarks/crosscheck.md) and exits with a message saying so when that is missing. It starts
``python -m backends.sim`` (DFLASH, ``--enable-metrics``), builds a local tokenizer that cuts text
exactly as the simulator does, sizes bench_serving's random prompts so the server counts the same
prompt tokens as ddtune's cells, then runs every cell in interleaved rounds (the tools' order rotates
each round): ``ddtune bench`` (``--release staggered`` and ``wave``) and ``sglang.bench_serving
--backend sglang-oai-chat`` with ``stream_options.include_usage``, neither with warmup requests. The
server's /metrics counters are read before and after every run. Prints, per cell, each figure with
its spread over rounds and the ratio ddtune / bench_serving of each round. Nothing is asserted.

    python benchmarks/crosscheck.py [--sglang-python /tmp/sgl-venv/bin/python] [--concurrency 1 8 32]
        [--context 1024] [--max-tokens 256] [--rounds 3] [--release staggered wave] [--out DIR]
    python benchmarks/crosscheck.py --report DIR     the table of a finished run's --out DIR again
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import date
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from backends.sim import answers  # noqa: E402  (the simulator's token rule, one source)

DEFAULT_PYTHON = os.environ.get("DDTUNE_SGLANG_PYTHON", "/tmp/sgl-venv/bin/python")
SGLANG_VERSION = "0.5.23"
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
SETUP = f"""set it up (about 6 GB: sglang's package imports torch at module level):
  python3 -m venv /tmp/sgl-venv
  /tmp/sgl-venv/bin/pip install "sglang=={SGLANG_VERSION}" --no-deps
  /tmp/sgl-venv/bin/pip install numpy orjson psutil pybase64 requests packaging pillow torch torchvision \\
      starlette msgspec pydantic pyzmq tqdm ipython aiohttp transformers tokenizers datasets \\
      apache-tvm-ffi sentencepiece compressed-tensors gguf
then pass --sglang-python /tmp/sgl-venv/bin/python (or set DDTUNE_SGLANG_PYTHON); see benchmarks/crosscheck.md"""

# Run inside SGLang's venv: a WordLevel tokenizer whose pre-tokenizer is the simulator's TOKEN_RE, so
# re-tokenizing any chunk of streamed text gives the simulator's own token count (unknown pieces map
# to [UNK], still one token each); decoding fuses pieces without separators.
MAKE_TOKENIZER = r"""
import json, os, sys
from tokenizers import Tokenizer, Regex, models, pre_tokenizers, decoders
spec, out = json.loads(sys.argv[1]), sys.argv[2]
vocab = {"[UNK]": 0}
for t in spec["vocab"]:
    vocab.setdefault(t, len(vocab))
tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Split(Regex(spec["pattern"]), behavior="isolated")
tok.decoder = decoders.Fuse()
tok.add_special_tokens(["[UNK]"])
os.makedirs(out, exist_ok=True)
tok.save(os.path.join(out, "tokenizer.json"))
json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]",
           "clean_up_tokenization_spaces": False, "model_max_length": 10**7},
          open(os.path.join(out, "tokenizer_config.json"), "w"))
from transformers import AutoTokenizer
t = AutoTokenizer.from_pretrained(out)
pieces = [t.decode([i]) for i in range(t.vocab_size)]
assert t.decode(list(range(t.vocab_size))) == "".join(pieces), "the decoder must fuse pieces"
import sglang, transformers, tokenizers, aiohttp, torch
print(json.dumps({"pieces": pieces, "versions": {"sglang": sglang.__version__, "transformers": transformers.__version__,
      "tokenizers": tokenizers.__version__, "aiohttp": aiohttp.__version__, "torch": torch.__version__}}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_sglang(python: str) -> str:
    """SGLang's version in that interpreter, or exit with the recipe."""
    if not Path(python).exists():
        sys.exit(f"crosscheck: no SGLang venv at {python}.\n{SETUP}")
    done = subprocess.run([python, "-c", "import sglang.benchmark.serving, sglang; print(sglang.__version__)"],
                          capture_output=True, text=True, env={**os.environ, **OFFLINE})
    if done.returncode != 0:
        missing = re.findall(r"No module named '([^']+)'", done.stderr)
        why = f"it lacks the module {missing[-1]!r}" if missing else (done.stderr.strip().splitlines() or ["?"])[-1]
        sys.exit(f"crosscheck: {python} cannot import sglang.benchmark.serving: {why}.\n{SETUP}")
    version = done.stdout.strip().splitlines()[-1]
    if version != SGLANG_VERSION:
        print(f"note: SGLang {version} (the recipe was measured with {SGLANG_VERSION})", file=sys.stderr)
    return version


def sim_vocab() -> list[str]:
    """Every piece the simulator's generic answer (and its ignore_eos filler) is cut into."""
    import random

    answer = answers.compose((), "crosscheck", random.Random(0), 0.0, True)
    return sorted(set(answer.tokens) | set(answers.filler_tokens()))


def http_json(url: str, body: dict | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def counters(url: str) -> dict[str, float]:
    """The server's Prometheus counters (sglang:*_total), summed over label sets."""
    with urllib.request.urlopen(url + "/metrics", timeout=30) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for m in re.finditer(r"^sglang:(\w+_total)\{[^}]*\} ([0-9.eE+-]+)$", text, re.M):
        out[m[1]] = out.get(m[1], 0.0) + float(m[2])
    return out


def server_prompt_tokens(url: str, text: str) -> int:
    body = {"model": "default", "messages": [{"role": "user", "content": text}], "max_tokens": 1}
    return int(http_json(url + "/v1/chat/completions", body)["usage"]["prompt_tokens"])


def random_ids_len(url: str, pieces: list[str], context: int) -> tuple[int, int]:
    """bench_serving's ``--random-input-len`` whose prompts the server counts as ``context`` tokens,
    and what the server counted. A random-ids prompt is the decode of consecutive ids from a random
    offset; the count is linear in the length, so two probes and a check (offset 0) size it."""
    def count(n: int) -> int:
        return server_prompt_tokens(url, "".join(pieces[j % len(pieces)] for j in range(n)))

    lo, hi = max(1, context // 2), context
    c_lo, c_hi = count(lo), count(hi)
    slope = (c_hi - c_lo) / (hi - lo)
    n = max(1, round(hi + (context - c_hi) / slope))
    return n, count(n)


def first_wave(ttfts: list[float], conc: int) -> dict:
    """Mean TTFT of the first ``conc`` requests (they leave together: how the server splits them into
    prefill batches depends on their exact arrival times) and of the later ones."""
    mean = lambda xs: sum(xs) / len(xs) if xs else None
    return {"ttft_first_wave": mean(ttfts[:conc]), "ttft_later": mean(ttfts[conc:])}


def run_ddtune(url: str, state: Path, ctx: int, conc: int, n: int, max_tokens: int, warmup: int,
               release: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), "DDTUNE_STATE_DIR": str(state)}
    done = subprocess.run([sys.executable, "-m", "tui.cli", "bench", "--url", url, "--contexts", str(ctx),
                           "--concurrency", str(conc), "--max-tokens", str(max_tokens), "--requests-per-cell",
                           str(n), "--warmup", str(warmup), "--release", release, "--json"],
                          cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"ddtune bench failed:\n{done.stderr[-2000:]}")
    run = json.loads(done.stdout)
    (cell,) = run["cells"]
    acc = cell["acceptance"] or {}
    answers_ = [json.loads(line) for line in (Path(run["run"]["dir"]) / "responses.jsonl").read_text().splitlines()]
    ttfts = [1000 * r["ttft_s"] for r in sorted(answers_, key=lambda r: r["started_at"]) if r["ttft_s"] is not None]
    return {"output_tok_s": cell["output_tok_s"], "req_s": cell["requests"] / cell["duration_s"],
            "output_tokens": cell["output_tokens"], "ttft_mean": cell["ttft_ms"]["mean"],
            "itl_token_mean": cell["itl_token_ms"]["mean"], "itl_token_p50": cell["itl_token_ms"]["p50"],
            "step_gap_mean": cell["itl_ms"]["mean"], "acceptance": acc.get("total"),
            "acceptance_mean": acc.get("mean"), "prompt_tokens": cell["prompt_tokens"]["mean"],
            **first_wave(ttfts, conc),
            "requests": cell["requests"], "errors": cell["errors"]}


def run_bench_serving(python: str, url: str, tok: Path, out: Path, ids_len: int, conc: int, n: int,
                      max_tokens: int, warmup: int, seed: int) -> dict:
    result = out / f"bs-{conc}-{seed}.jsonl"
    cmd = [python, "-m", "sglang.bench_serving", "--backend", "sglang-oai-chat", "--base-url", url,
           "--dataset-name", "random-ids", "--random-input-len", str(ids_len), "--random-output-len",
           str(max_tokens), "--random-range-ratio", "1", "--num-prompts", str(n), "--max-concurrency", str(conc),
           "--request-rate", "inf", "--tokenizer", str(tok), "--seed", str(seed), "--output-file", str(result),
           "--output-details", "--disable-tqdm", "--warmup-requests", str(warmup),
           "--extra-request-body", json.dumps({"stream_options": {"include_usage": True}})]
    with open(out / "bench_serving.log", "a") as log:
        done = subprocess.run(cmd, env={**os.environ, **OFFLINE}, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode != 0 or not result.exists():
        sys.exit(f"bench_serving failed (exit {done.returncode}); see {out / 'bench_serving.log'}")
    r = json.loads(result.read_text().splitlines()[-1])
    if not r["accept_length"]:
        print("warning: /server_info had no accept length yet, so bench_serving's ITL is per chunk, not per token",
              file=sys.stderr)
    gaps = [g for itl in r["itls"] for g in itl]  # raw chunk gaps: ddtune's step gap
    ttfts = [1000 * t for t, e in zip(r["ttfts"], r["errors"], strict=True) if not e]  # in launch order
    return {"output_tok_s": r["output_throughput"], "req_s": r["request_throughput"],
            "output_tokens": r["total_output_tokens"],
            "output_tokens_retokenized": r["total_output_tokens_retokenized"],
            "ttft_mean": r["mean_ttft_ms"], "itl_token_mean": r["mean_itl_ms"], "itl_token_p50": r["median_itl_ms"],
            "step_gap_mean": 1000 * sum(gaps) / len(gaps) if gaps else None, "accept_length": r["accept_length"],
            "prompt_tokens": sum(r["input_lens"]) / len(r["input_lens"]), "requests": r["completed"],
            **first_wave(ttfts, conc),
            "errors": sum(1 for e in r["errors"] if e)}


PREFILL = re.compile(rb"Prefill batch, #new-seq: (\d+)")


def with_metrics(url: str, fn, log: Path) -> dict:
    """Run ``fn`` and add the server's acceptance over the measured requests: completion tokens /
    verify steps from /metrics. What else the run sent is taken out: with no warmup that is only
    ddtune's prompt-sizing probes, one token each (``max_tokens`` 1), which the simulator produces
    in one verify step; the extra tokens must then equal the extra requests, else None."""
    before, offset = counters(url), log.stat().st_size
    rec = fn()
    after = counters(url)
    with open(log, "rb") as f:  # how the server admitted the run: sizes of its prefill batches, in order
        f.seek(offset)
        rec["prefill_batches"] = [int(n) for n in PREFILL.findall(f.read())]
    d = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    tokens, steps = d.get("generation_tokens_total", 0.0), d.get("spec_verify_calls_total", 0.0)
    extra_requests = int(d.get("num_requests_total", 0)) - rec["requests"]
    extra_tokens = int(tokens) - rec["output_tokens"]
    rec["extra_requests"], rec["extra_tokens"] = extra_requests, extra_tokens
    rec["metrics_acceptance_all"] = tokens / steps if steps else None
    ok = extra_tokens == extra_requests and steps > extra_tokens
    rec["metrics_acceptance"] = (tokens - extra_tokens) / (steps - extra_tokens) if ok else None
    # the run's acceptance is sampled (seeded per prompt): tok/s / acceptance = verify steps per second
    # (summed over requests) takes that draw out and compares the clocks alone
    rec["steps_per_s"] = rec["output_tok_s"] / rec["metrics_acceptance"] if rec["metrics_acceptance"] else None
    return rec


FIGURES = [  # (label, key, key on bench_serving's side)
    ("output tok/s", "output_tok_s", "output_tok_s"),
    ("request throughput (req/s)", "req_s", "req_s"),
    ("verify steps/s (tok/s / acceptance)", "steps_per_s", "steps_per_s"),
    ("total output tokens", "output_tokens", "output_tokens"),
    ("server prompt tokens (mean)", "prompt_tokens", "prompt_tokens"),
    ("TTFT mean (ms)", "ttft_mean", "ttft_mean"),
    ("TTFT mean, first wave (ms)", "ttft_first_wave", "ttft_first_wave"),
    ("TTFT mean, later requests (ms)", "ttft_later", "ttft_later"),
    ("ITL per token mean (ms)", "itl_token_mean", "itl_token_mean"),
    ("ITL per token p50 (ms)", "itl_token_p50", "itl_token_p50"),
    ("step gap mean (ms)", "step_gap_mean", "step_gap_mean"),
    ("total output tokens / bench_serving's retokenized", "output_tokens", "output_tokens_retokenized"),
    ("acceptance: ddtune total / /metrics over its run", "acceptance", "metrics_acceptance"),
    ("acceptance: /metrics over each tool's run", "metrics_acceptance", "metrics_acceptance"),
]


def spread(values: list[float], fmt: str) -> str:
    if not values:
        return "-"
    mean = sum(values) / len(values)
    if len(values) == 1:
        return format(mean, fmt)
    return f"{format(mean, fmt)} [{format(min(values), fmt)}-{format(max(values), fmt)}]"


def _pairs(records: list[dict], conc: int, tool: str, reference: str) -> list[tuple[dict, dict]]:
    """(tool's run, reference's run) of each round of the cell with concurrency ``conc``."""
    runs = {(r["round"], r["tool"]): r for r in records if r["concurrency"] == conc}
    rounds = sorted({rnd for rnd, _ in runs})
    return [(runs[rnd, tool], runs[rnd, reference]) for rnd in rounds
            if (rnd, tool) in runs and (rnd, reference) in runs]


def table(records: list[dict], tools: list[str], reference: str = "bench_serving") -> str:
    """Markdown: per cell and figure, ``reference`` and each tool (mean [min-max] over rounds) and the
    tool / reference ratio of each round (mean [min-max]). In the acceptance row the reference is the
    server's /metrics over the same run of the tool."""
    head = " | ".join(f"{t} | ratio" for t in tools)
    lines = [f"| cell | figure | {reference} | {head} |", "|---|---|---" + "|---|---" * len(tools) + "|"]
    for conc in sorted({r["concurrency"] for r in records}):
        for label, key, ref_key in FIGURES:
            same_run = key == "acceptance"
            fmt = ".0f" if key in ("output_tokens", "prompt_tokens") else ".3f" if "accept" in key else ".2f"
            cols, refs = [], []
            for tool in tools:
                pairs = _pairs(records, conc, tool, reference)
                ok = [(m[key], (m if same_run else r)[ref_key]) for m, r in pairs
                      if m.get(key) is not None and (m if same_run else r).get(ref_key)]
                refs += [y for _, y in ok]
                cols.append(f"{spread([x for x, _ in ok], fmt)} | {spread([x / y for x, y in ok], '.3f')}")
            if not refs:
                continue
            ref = "/metrics, same run" if same_run else spread(
                [r[ref_key] for r in records if r["concurrency"] == conc and r["tool"] == reference and r.get(ref_key)],
                fmt)
            lines.append(f"| c={conc} | {label} | {ref} | {' | '.join(cols)} |")
    return "\n".join(lines)


def report(records: list[dict], meta: dict) -> str:
    v = meta["versions"]
    tools = [t for t in meta["tools"] if t != "bench_serving"]
    out = [f"{meta['date']}: {meta['cpus']} CPUs, Python {meta['python']}, sglang {v['sglang']} (transformers "
           f"{v['transformers']}, tokenizers {v['tokenizers']}, aiohttp {v['aiohttp']}; torch {v['torch']} "
           f"imported by sglang, unused); context {meta['context']} (bench_serving --random-input-len "
           f"{meta['ids_len']}), max tokens {meta['max_tokens']}, {meta['rounds']} rounds; load average "
           f"(1/5/15 min) {meta.get('load', [])[:3]} before, {meta.get('load', [])[3:]} after; mean [min-max] over "
           "rounds, ratio = ddtune / bench_serving per round", "", table(records, tools)]
    bs = [r for r in records if r["tool"] == "bench_serving" and r["metrics_acceptance"]]
    if bs:
        life = [r["accept_length"] or 0.0 for r in bs]
        run = [r["metrics_acceptance"] for r in bs]
        out += ["", f"bench_serving's printed 'Accept length' (/server_info, lifetime): {spread(life, '.3f')}; "
                    f"/metrics over its runs: {spread(run, '.3f')}; per run, lifetime / run: "
                    f"{spread([a / b for a, b in zip(life, run, strict=True)], '.3f')}"]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sglang-python", default=DEFAULT_PYTHON, help="python of a venv with sglang installed")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--context", type=int, default=1024, help="prompt tokens as the server counts them")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--requests", type=int, default=4, help="requests per cell = this x concurrency (at least 16)")
    ap.add_argument("--warmup", type=int, default=0,
                    help="warmup requests of each tool (default 0: the /metrics window then holds only measured "
                         "requests and ddtune's one-token sizing probes)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--release", nargs="+", default=["staggered", "wave"], choices=["wave", "staggered"])
    ap.add_argument("--out", type=Path, help="keep raw records here (default: a temporary dir)")
    ap.add_argument("--report", type=Path, metavar="DIR", help="print the table of a finished run's --out DIR again")
    args = ap.parse_args()
    if args.report:
        recs = [json.loads(line) for line in (args.report / "records.jsonl").read_text().splitlines()]
        print(report(recs, json.loads((args.report / "meta.json").read_text())))
        return
    version = check_sglang(args.sglang_python)
    out = args.out or Path(tempfile.mkdtemp(prefix="ddtune-crosscheck-"))
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([args.sglang_python, "-c", MAKE_TOKENIZER,
                           json.dumps({"pattern": answers.TOKEN_RE.pattern, "vocab": sim_vocab()}), str(out / "tok")],
                          capture_output=True, text=True, env={**os.environ, **OFFLINE})
    if done.returncode != 0:
        sys.exit(f"crosscheck: building the tokenizer failed:\n{done.stderr[-2000:]}")
    made = json.loads(done.stdout.strip().splitlines()[-1])
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = out / "sim.log"
    with open(log, "wb") as sink:
        sim = subprocess.Popen([sys.executable, "-m", "backends.sim", "--model-path", "Qwen/Qwen3-8B", "--port",
                                str(port), "--sim-load-seconds", "0", "--speculative-algorithm", "DFLASH",
                                "--speculative-draft-model-path", "z-lab/Qwen3-8B-DFlash-b16", "--enable-metrics"],
                               cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=sink,
                               stderr=subprocess.STDOUT, start_new_session=True)
    records: list[dict] = []
    load_before = os.getloadavg()
    try:
        while b"ready to roll" not in log.read_bytes():
            if sim.poll() is not None:
                sys.exit(f"the simulator exited:\n{log.read_text()[-2000:]}")
            time.sleep(0.1)
        ids_len, counted = random_ids_len(url, made["pieces"], args.context)
        print(f"SGLang {version}; bench_serving --random-input-len {ids_len} (server counts {counted} "
              f"for ddtune's {args.context}); records in {out}", file=sys.stderr)
        tools = [f"ddtune-{r}" for r in args.release] + ["bench_serving"]
        for rnd in range(1, args.rounds + 1):
            for conc in args.concurrency:
                n = max(16, args.requests * conc)
                k = (rnd - 1) % len(tools)
                for tool in tools[k:] + tools[:k]:  # rotate the order each round
                    if tool == "bench_serving":
                        fn = partial(run_bench_serving, args.sglang_python, url, out / "tok", out, ids_len, conc, n,
                                     args.max_tokens, args.warmup, rnd)
                    else:
                        fn = partial(run_ddtune, url, out / "state", args.context, conc, n, args.max_tokens,
                                     args.warmup, tool.split("-", 1)[1])
                    rec = {"round": rnd, "concurrency": conc, "tool": tool, **with_metrics(url, fn, log)}
                    records.append(rec)
                    with open(out / "records.jsonl", "a") as f:
                        f.write(json.dumps(rec) + "\n")
                    print(f"round {rnd} c={conc} {tool}: {rec['output_tok_s']:.1f} tok/s, TTFT "
                          f"{rec['ttft_mean']:.1f} ms, ITL/token {rec['itl_token_mean']:.2f} ms, acceptance "
                          f"(/metrics) {rec['metrics_acceptance'] or 0:.3f}", file=sys.stderr)
    finally:
        os.killpg(sim.pid, signal.SIGTERM)
        try:
            sim.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(sim.pid, signal.SIGKILL)
            sim.wait()
    meta = {"date": str(date.today()), "cpus": os.cpu_count(), "python": platform.python_version(),
            "versions": made["versions"], "context": args.context, "ids_len": ids_len, "max_tokens": args.max_tokens,
            "rounds": args.rounds, "tools": tools, "load": [round(x, 2) for x in load_before + os.getloadavg()]}
    (out / "meta.json").write_text(json.dumps(meta))
    print(report(records, meta))


if __name__ == "__main__":
    main()
