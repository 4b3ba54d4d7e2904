"""ddtune status: the managed server's phase, pid, knobs, effective settings and mismatches."""

from __future__ import annotations

HELP = "show the managed server: phase, pid, knobs, what the server reports, mismatches"
EXAMPLES = """\
examples:
  ddtune status
  ddtune status --json | jq .effective

phase: ready | starting | failed | stale (the recorded pid is gone or not the same process) | stopped.
A starting server whose `up`/`restart` was interrupted is alive but followed by nobody: its reason
says so (`ddtune up` re-attaches and waits for it); one that died since reads stale.
--json keys: backend, engine (e.g. "llama.cpp b11549"; null before a start), pid, phase, url, knobs,
effective {window_size, compact_cache, block_size,
budget, and each requested knob the server reports (spec_v2, a knob declared in the config, ...)},
checks [{name, requested, effective, source, status}], mismatches, reason, log_path, port,
started_at, ready_at. A check's status: verified, mismatch, unverified (the server did not say) or
default (not requested; the server picked). mismatches: one sentence per mismatch check.
alarms [{kind, message, since, value}]: guards judged on the server's recent log, e.g.
acceptance_collapse (a speculative server at <= 1.10 tokens per verify step for 20 s: the drafter
is not helping). acceptance {value, source, over}: a ready speculative server's tokens per verify
step from its /metrics counters (source counters, over its lifetime), else its recent Decode batch
lines (source log, weighted by #running-req); null on a plain server. lanes [{lane, pid, port,
gpus, phase, sweep}]: servers a parallel sweep left running (--keep-server, or a killed sweep);
`ddtune down` stops them too.
"""


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")


def run(args) -> int:
    from backends.server import server_status
    from tui.commands._server import ago, load_config, note, print_json

    status = server_status(load_config(args), note)
    doc = status.to_json()
    if args.json:
        print_json(doc)
        return 0
    state = status.state
    print(f"backend:    {doc['backend']}" + (f" ({doc['engine']})" if doc.get("engine") else ""))
    print(f"phase:      {doc['phase']}")
    print(f"pid:        {doc['pid'] or '-'}")
    print(f"url:        {doc['url']}")
    print("knobs:      " + ", ".join(f"{k}={v}" for k, v in status.knob_texts().items()))
    if doc["effective"]:
        print("effective:  " + ", ".join(f"{k}={v}" for k, v in doc["effective"].items()))
    for check in status.checks:
        label = "MISMATCH:" if check.status == "mismatch" else f"{check.status}:"
        print(f"{label:<12}{check.sentence}")
    acc = doc.get("acceptance")
    if acc:
        print(f"acceptance: {acc['value']:.2f} (from {acc['source']}: {acc['over']})")
        drafts = acc.get("drafts")
        if drafts:  # llama.cpp's own draft counters: which draft positions survive
            print(f"drafts:     {drafts['accepted']:.0f}/{drafts['drafted']:.0f} drafted tokens accepted "
                  f"(rate {drafts['rate']}), mean len {drafts['mean_len']} over {drafts['drafts']:.0f} drafts")
            print("per position: " + " ".join(f"{i}:{n:.0f}" for i, n in enumerate(drafts["accepted_per_position"])))
    for alarm in doc.get("alarms", []):
        print(f"ALARM:      {alarm['kind']}: {alarm['message']}")
    if doc.get("reason"):
        print(f"reason:     {doc['reason']}")
    if doc.get("log_path"):
        print(f"log:        {doc['log_path']}")
    if state is not None:
        print(f"started:    {ago(state.started_at)}")
    for lane in doc["lanes"]:  # servers of a parallel sweep (docs/scale.md); `ddtune down` stops them
        print(f"lane {lane['lane']}:     {lane['phase']}, pid {lane['pid']}, port {lane['port']}, "
              f"GPU {','.join(lane['gpus']) or '?'}")
    return 0
