"""Turn what the user asked for (presets, a --plan TOML file, command-line options) into a SweepPlan.

A plan file (every table and key optional; command-line options win over it)::

    presets = ["b8-t4-w2048", "b16-t4-w2048"]   # shipped preset names or .toml preset files
    repeats = 2
    baseline = true
    eval = false                                 # or a table: [eval] max_tokens = 2048, problems = [...]

    [bench]
    prompts = ["humaneval", "my-traffic.jsonl"]  # sources (docs/workloads.md); default story, or coding
    contexts = [1024, 4096]                      # 0: each prompt as it is (the default when prompts are named)
    concurrency = [1, 8]
    max_tokens = 256
    requests_per_cell = 16
    release = "wave"                             # or "staggered" (docs/results-schema.md)
    request_rates = [2.0, 4.0]                   # Poisson arrivals (req/s), burstiness = 1.0, seed = 0
    slo = { ttft_ms = 500, tpot_ms = 50 }        # goodput
    ignore_eos = false                           # multi_turn = "live", include_degenerate = false

    [[config]]                                   # configurations that are not presets
    name = "b8-t8-w4096"
    knobs = { budget = 8, topk = 8, window = 4096 }

Knob names and values are read by the config's knob table (``build_plan(knob_table=config.knob_table)``),
so a knob declared in the config sweeps like a shipped one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

from backends.core import read_toml
from backends.core import ConfigError, UsageError
from backends.core import expect, key_name
from backends.knobs import SHIPPED, KnobTable
from workloads.bench.plan import RELEASES, BenchPlan
from workloads.sweep.plan import BASELINE, EvalSettings, SweepConfig, SweepPlan

_TOP = {"presets", "repeats", "baseline", "eval", "bench", "config", "warmup_requests"}
_BENCH = {"contexts", "concurrency", "max_tokens", "requests_per_cell", "warmup", "coding", "release", "prompts",
          "ignore_eos", "request_rates", "burstiness", "seed", "slo", "multi_turn", "include_degenerate"}


def _sent(bench: dict, given: dict) -> dict:
    """BenchPlan's fields of what is sent: the options given, else the plan file's [bench] keys."""
    out = {}
    for key in ("ignore_eos", "include_degenerate", "burstiness", "seed", "multi_turn"):
        if key in bench:
            out[key] = bench[key]
    if bench.get("prompts"):
        out["prompts"] = tuple(dict.fromkeys(bench["prompts"]))
    if bench.get("request_rates"):
        out["request_rates"] = tuple(float(r) for r in dict.fromkeys(bench["request_rates"]))
    if bench.get("slo"):
        out["slo"] = {k: float(v) for k, v in bench["slo"].items()}
    out.update(given)
    return out


def preset_config(name: str, table: KnobTable | None = None) -> SweepConfig:
    from backends.knobs import load_preset

    if name == BASELINE:
        return SweepConfig(BASELINE, {}, True)
    knobs = load_preset(name, table)
    return SweepConfig(Path(name).stem if name.endswith(".toml") else name, knobs)


def read_plan_file(path: str) -> dict[str, Any]:
    """The plan file's tables, every field checked for its type (so build_plan can trust them)."""
    where = f"--plan {path}"
    data = read_toml(Path(path).expanduser(), ConfigError, name=where)
    unknown = set(data) - _TOP
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {key_name(sorted(unknown)[0])!r}", hint=f"known keys: {', '.join(sorted(_TOP))}"
        )
    bench = expect(where, "bench", data.get("bench", {}), dict, "[bench] then contexts = [1024, 4096]")
    if set(bench) - _BENCH:
        raise ConfigError(
            f"{where}: [bench] {key_name(sorted(set(bench) - _BENCH)[0])}: unknown",
            hint=f"[bench] takes {', '.join(sorted(_BENCH))}",
        )
    names = expect(where, "presets", data.get("presets", []), list, 'presets = ["b8-t4-w2048"]')
    for i, name in enumerate(names):
        expect(where, f"presets[{i}]", name, str, 'presets = ["b8-t4-w2048"]')
    for key in ("contexts", "concurrency"):
        for value in expect(where, f"[bench] {key}", bench.get(key, []), list, f"{key} = [1, 8]"):
            (_non_negative if key == "contexts" else _positive)(value, f"{where} [bench] {key}")
    _traffic_table(where, bench)
    for key in ("max_tokens", "requests_per_cell"):
        if key in bench:
            _positive(bench[key], f"{where} [bench] {key}")
    if "warmup" in bench:
        _non_negative(bench["warmup"], f"{where} [bench] warmup")
    if bench.get("release", "wave") not in RELEASES:
        raise ConfigError(f"{where}: [bench] release must be one of {', '.join(RELEASES)}, "
                          f"got {bench['release']!r}",
                          hint='release = "wave" sends each wave of requests at once; "staggered" keeps '
                               'every slot busy')
    for key in ("baseline", "coding"):
        table = bench if key == "coding" else data
        if key in table:
            expect(where, key, table[key], bool, f"{key} = true")
    if "repeats" in data:
        _positive(data["repeats"], f"{where} repeats")
    if "warmup_requests" in data:
        _non_negative(data["warmup_requests"], f"{where} warmup_requests")
    plan_eval = expect(where, "eval", data.get("eval", True), (bool, dict), "eval = false, or [eval] max_tokens = 2048")
    if isinstance(plan_eval, dict):
        for key in ("max_tokens", "concurrency"):
            if key in plan_eval:
                _positive(plan_eval[key], f"{where} [eval] {key}")
        for i, pid in enumerate(
            expect(where, "[eval] problems", plan_eval.get("problems", []), list, 'problems = ["fib"]')
        ):
            expect(where, f"[eval] problems[{i}]", pid, str, 'problems = ["fib"]')
    return data


def _traffic_table(where: str, bench: dict) -> None:
    """The [bench] keys of what is sent (prompts, stops, rates, SLOs), each checked for its type."""
    for i, name in enumerate(expect(where, "[bench] prompts", bench.get("prompts", []), list, 'prompts = ["coding"]')):
        expect(where, f"[bench] prompts[{i}]", name, str, 'prompts = ["coding"]')
    for key in ("ignore_eos", "include_degenerate"):
        if key in bench:
            expect(where, f"[bench] {key}", bench[key], bool, f"{key} = true")
    for i, rate in enumerate(expect(where, "[bench] request_rates", bench.get("request_rates", []), list,
                                    "request_rates = [2.0]")):
        if expect(where, f"[bench] request_rates[{i}]", rate, float, "request_rates = [2.0]") <= 0:
            raise ConfigError(f"{where}: [bench] request_rates[{i}] must be above 0", hint="request_rates = [2.0]")
    if "burstiness" in bench and expect(where, "[bench] burstiness", bench["burstiness"], float,
                                        "burstiness = 1.0") <= 0:
        raise ConfigError(f"{where}: [bench] burstiness must be above 0", hint="burstiness = 1.0")
    if "seed" in bench:
        _non_negative(bench["seed"], f"{where} [bench] seed")
    slo = expect(where, "[bench] slo", bench.get("slo", {}), dict, "slo = { ttft_ms = 500, tpot_ms = 50 }")
    for key, value in slo.items():
        if key not in ("ttft_ms", "tpot_ms") or expect(where, f"[bench] slo.{key}", value, float, "ttft_ms = 500") <= 0:
            raise ConfigError(f"{where}: [bench] slo.{key_name(key)}: expected ttft_ms or tpot_ms above 0",
                              hint="slo = { ttft_ms = 500, tpot_ms = 50 }")
    if bench.get("multi_turn", "live") not in ("live", "first"):
        raise ConfigError(f"{where}: [bench] multi_turn must be \"live\" or \"first\"", hint='multi_turn = "live"')


def _custom_configs(path: str, entries: Any, table: KnobTable = SHIPPED) -> list[SweepConfig]:
    if not isinstance(entries, list):
        raise ConfigError(
            f"--plan {path}: config: expected [[config]] tables", hint='[[config]] name = "x" knobs = {...}'
        )
    out = []
    for i, entry in enumerate(entries):
        name, knobs = (entry.get("name"), entry.get("knobs")) if isinstance(entry, dict) else (None, None)
        if not isinstance(name, str) or not name or not isinstance(knobs, dict):
            raise ConfigError(
                f'--plan {path}: config #{i + 1}: needs name = "..." and knobs = {{...}}',
                hint='e.g. name = "b8-t8" and knobs = { budget = 8, topk = 8, window = 2048 }',
            )
        where = f"--plan {path} config {name!r}"
        out.append(SweepConfig(name, {k: table.spec(k).parse(v, where) for k, v in knobs.items()}))
    return out


def _positive(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: expected a positive integer, got {value!r}", hint=f"e.g. {where.split()[-1]} = 4")
    return value


def _non_negative(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{where}: expected an integer >= 0, got {value!r}", hint=f"e.g. {where.split()[-1]} = 1")
    return value


class PlanOptions(TypedDict, total=False):
    """build_plan's options but the knob table, as a SweepSpec takes them (``plan_options``): the
    spec builds the plan with its config's knob table."""

    plan_file: str | None
    repeats: int | None
    baseline: bool
    contexts: list[int] | None
    concurrency: list[int] | None
    max_tokens: int | None
    requests_per_cell: int | None
    warmup: int | None
    coding: bool
    run_eval: bool | None
    eval_max_tokens: int | None
    eval_problems: list[str] | None
    warmup_requests: int
    traffic: dict | None


def build_plan(
    presets: list[str],
    *,
    plan_file: str | None = None,
    repeats: int | None = None,
    baseline: bool = False,
    contexts: list[int] | None = None,
    concurrency: list[int] | None = None,
    max_tokens: int | None = None,
    requests_per_cell: int | None = None,
    warmup: int | None = None,
    coding: bool = False,
    run_eval: bool | None = None,
    eval_max_tokens: int | None = None,
    eval_problems: list[str] | None = None,
    warmup_requests: int = 2,
    knob_table: KnobTable | None = None,
    traffic: dict | None = None,
) -> SweepPlan:
    """The sweep plan: the --plan file's tables under the options given. ``traffic``: BenchPlan's
    fields of what is sent (tui/commands/_traffic.py), over the file's [bench] keys of the same names."""
    data = read_plan_file(plan_file) if plan_file else {}
    where = f"--plan {plan_file}"
    names = list(data.get("presets", [])) + list(presets)
    configs = [preset_config(n, knob_table) for n in dict.fromkeys(names)]
    configs += _custom_configs(plan_file or "", data["config"], knob_table or SHIPPED) if "config" in data else []
    if baseline or data.get("baseline") is True:
        if not any(c.baseline for c in configs):
            configs.insert(0, SweepConfig(BASELINE, {}, True))
    if not [c for c in configs if not c.baseline]:
        raise UsageError(
            "no configuration to sweep",
            hint="name presets: ddtune sweep b8-t4-w2048 b16-t4-w2048 (or list them in a --plan file)",
        )
    bench = data.get("bench", {})
    pick = lambda cli, key, default: cli if cli is not None else bench.get(key, default)
    sent = _sent(bench, traffic or {})
    default_contexts = [0] if "prompts" in sent else [1024, 4096]  # named prompts: each as it is
    bench_plan = BenchPlan(
        tuple(
            dict.fromkeys(_non_negative(c, f"{where} [bench] contexts")
                          for c in pick(contexts, "contexts", default_contexts))
        ),
        tuple(
            dict.fromkeys(
                _positive(c, f"{where} [bench] concurrency") for c in pick(concurrency, "concurrency", [1, 8])
            )
        ),
        _positive(pick(max_tokens, "max_tokens", 512), f"{where} [bench] max_tokens"),
        bool(coding or bench.get("coding", False)),
        pick(requests_per_cell, "requests_per_cell", None),
        pick(warmup, "warmup", 1), bench.get("release", "wave"), **sent)
    eval_data = data.get("eval", True)
    enabled = run_eval if run_eval is not None else eval_data is not False
    eval_settings = None
    if enabled:
        table = eval_data if isinstance(eval_data, dict) else {}
        problems = eval_problems or table.get("problems")
        eval_settings = EvalSettings(
            eval_max_tokens or int(table.get("max_tokens", 4096)),
            int(table.get("concurrency", 4)),
            tuple(problems) if problems else None,
        )
    reps = repeats if repeats is not None else _positive(data.get("repeats", 1), f"{where} repeats")
    return SweepPlan(tuple(configs), bench_plan, reps, eval_settings, int(data.get("warmup_requests", warmup_requests)))
