"""ddtune inspect: summarise a server log: phases, timings, draft settings, decode stats, fatal error"""

from __future__ import annotations

HELP = "summarise a server log: phases, timings, draft settings, decode stats, fatal error"
EXAMPLES = """\
examples:
  ddtune inspect server.log                 phases with timings, weights, KV cache, CUDA graphs,
                                            effective draft window, decode stats, the fatal line
  ddtune inspect server.log --json          one JSON document (the shape other tools read)
  ddtune inspect server.log --json | jq .draft.window_size

the log is SGLang's stderr+stdout (any version 0.5.10+, TP/DP prefixes, tqdm bars, ANSI codes), as
saved or as collected: docker logs -t, docker compose logs [-t], kubectl logs [--timestamps] [--prefix],
journalctl (short, short-iso, short-precise). A fact whose rank-0 line is missing from the excerpt
comes from the lowest rank present, and a note says so. It also names what the server said is deprecated
in how it was started (old flags, the launch_server entrypoint), and flags acceptance_collapse when a
speculative server's decode lines stayed at <= 1.10 accept len for 20 s of log time (the console's rule;
--json: "alarms", "deprecated"). A log of any size is streamed in bounded memory (a line is cut at
64 KB); only a regular file is read: a pipe, a device or a /proc file is refused. Exit 0 when read,
2 when the file cannot be read.
"""


def add_arguments(parser) -> None:
    parser.add_argument("logfile", metavar="LOGFILE", help="an SGLang server log file")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON document")


def run(args) -> int:
    import json

    from backends.server import inspect_log

    report = inspect_log(args.logfile)
    if args.json:
        print(json.dumps(report.to_json()))
    else:
        print(render(report))
        for note in report.deprecated:
            print(f"deprecated: {note}")
        if report.alarm is not None:
            print(f"ALARM {report.alarm.kind}: {report.alarm.message}")
    return 0


def _llama_lines(doc: dict) -> list[str]:
    """A llama-server log's own facts: where it listened, its models, its draft, its requests."""
    out = ["llama.cpp: " + (f"listening on {doc['listening']}" if doc["listening"] else "never listened")]
    out.extend(f"  model: {m}" for m in doc["models"])
    d = doc["draft"]
    if d["spec_type"] or d["n_max"] is not None:
        out.append(f"  draft: {d['spec_type'] or '?'}, n_max {d['n_max_effective']}"
                   + (f" ({d['clamp']})" if d["clamp"] else "") + f", block size {d['block_size'] or '?'}")
    r = doc["requests"]
    if r["count"]:
        rate = f"{r['acceptance_rate']:.3f}" if r["acceptance_rate"] is not None else "?"
        out.append(f"  requests: {r['count']}, draft tokens accepted {r['draft_accepted']}/{r['draft_generated']} "
                   f"(rate {rate}), mean len last {r['mean_len_last']}, eval tok/s last {r['eval_tok_s_last']}")
    return out


def render(report) -> str:
    """The human-readable report."""
    summary = report.summary
    out = [f"log: {report.path} ({summary.lines} lines, {summary.events} recognised)"]
    state = "ready" if summary.ready else ("FAILED" if summary.fatal else "not ready")
    pid = f"pid {summary.server_pid}" if summary.server_pid is not None else "no pid logged"
    out.append(f"server: {state}, {pid}")
    if report.phases:
        out.append("phases (from log timestamps):")
        for phase, seconds in report.phases.items():
            out.append(f"  {phase:<24} {seconds:8.1f} s")
        out.append(f"  {'last phase':<24} {report.last_phase}"
                   + (f" ({report.last_detail})" if report.last_detail else ""))
    if summary.weights:
        out.append("weights:")
        for i, w in enumerate(summary.weights):
            role = "target" if i == 0 else ("draft" if i == 1 else f"model {i + 1}")
            elapsed = f"{w.elapsed_s:.2f} s" if w.elapsed_s is not None else "? s"
            mem = f"{w.mem_usage_gb:.2f} GB" if w.mem_usage_gb is not None else "? GB"
            out.append(f"  {role:<7} {w.type or '?':<32} {elapsed:>10}  {mem:>10}")
    if summary.shard_progress:
        out.append(f"shards: {summary.shard_progress[0]}/{summary.shard_progress[1]} (target)")
    if summary.kv_cache_tokens:
        out.append("KV cache tokens: " + ", ".join(f"{t:,}" for t in summary.kv_cache_tokens))
    if summary.cuda_graph:
        out.append("CUDA graphs:")
        for g in summary.cuda_graph:
            out.append(f"  {g.name:<16} " + (f"{g.elapsed_s:.2f} s" if g.elapsed_s is not None else "not finished"))
    d = summary.draft
    if d is not None:
        window = (f"window {d.window_size} (compact cache)" if d.compact_cache and d.window_size
                  else "full-context draft cache (no window took effect)")
        out.append(f"draft: {window}, block size {d.block_size if d.block_size is not None else '?'}")
    s = summary.decode
    if s.lines:
        parts = [f"{s.lines} lines"]
        if s.accept_len_mean is not None:
            parts.append(f"accept len mean {s.accept_len_mean:.2f} (last {s.accept_len_last:.2f})")
        if s.gen_throughput_last is not None:
            parts.append(f"gen throughput last {s.gen_throughput_last:.1f} tok/s")
        if s.running_req_max is not None:
            parts.append(f"max running {s.running_req_max}")
        out.append("decode: " + ", ".join(parts))
    if summary.llamacpp is not None:
        out.extend(_llama_lines(summary.llamacpp))
    for text in summary.notes:
        out.append(f"note: {text}")
    if summary.fatal is not None:
        f = summary.fatal
        where = f" at {f.ts}" if f.ts else ""
        out.append(f"fatal: {f.kind}{where}")
        out.append(f"  {f.message[:500]}")
    return "\n".join(out)
