"""The search's pure parts: space parsing with errors that name the field, the strategy's rounds
(lines, successive halving, order, restarts, budget, failures, final check, replay), per-wave
samples and the summary."""

from __future__ import annotations

import json
import random

import pytest

from backends.core.errors import DdtuneError
from workloads.search.engine import Target
from workloads.report.search_summary import summary_lines
from workloads.search.report import summarize
from workloads.search.space import parse_space
from workloads.search.store import wave_samples
from workloads.search.strategy import Observation, Search, SearchOptions

SPACE = "budget=4,8,16 topk=2,4,6 window=1024,2048,none"


# --- the space -------------------------------------------------------------------------------
def test_space_parses_in_order_with_none_and_labels():
    space = parse_space(SPACE)
    assert space.knobs == ("budget", "topk", "window") and space.size == 27
    assert space.axes[2][1] == (1024, 2048, None)
    assert space.middle() == (8, 4, 2048)
    assert space.label((8, 4, None)) == "budget=8 topk=4 window=none"
    assert space.line((8, 4, 2048), 0) == ((4, 4, 2048), (8, 4, 2048), (16, 4, 2048))
    assert parse_space(space.text()) == space
    assert space.find({"budget": 16, "topk": 2, "window": None, "other": 1}) == (16, 2, None)
    assert space.find({"budget": 5, "topk": 2, "window": None}) is None


@pytest.mark.parametrize("text,message,hint", [
    ("", "--space: no knobs given", "knob=value"),
    ("budget", "--space: 'budget' is not knob=values", "budget=4,8,16"),
    ("bugdet=4,8", "--space: unknown knob 'bugdet'", "known knobs: budget, topk, window"),
    ("budget=4,,8", "--space: knob 'budget': empty value", "budget=4,8,16"),
    ("budget=4 budget=8", "--space: knob 'budget' is given twice", "budget=a,b,c"),
    ("budget=4,x", "--space: knob 'budget': expected a positive integer", "--space budget=8"),
    ("budget=8,8", "--space: knob 'budget': value 8 is given twice", "list each value once"),
    ("window=8,2048", "--space: knob 'window' = 8 is smaller than the block size 16", "windows >= 16"),
])
def test_bad_space_names_the_field_and_the_fix(text, message, hint):
    with pytest.raises(DdtuneError) as info:
        parse_space(text)
    assert info.value.message.startswith(message), info.value.message
    assert hint in (info.value.hint or ""), info.value.hint
    assert info.value.exit_code == 2


def test_a_mapped_knob_of_the_config_is_searchable():
    space = parse_space("spec_steps=2,3 window=none", knob_map={"spec_steps": object()})
    assert space.axes == (("spec_steps", (2, 3)), ("window", (None,)))


# --- the strategy on a known landscape -------------------------------------------------------
def landscape(point) -> float:
    """Separable: budget 8, topk 2, window 2048 best, each a clear step ahead of its neighbours."""
    budget, topk, window = point
    return 1000.0 * {4: 0.85, 8: 1.0, 16: 0.7}[budget] * {2: 1.0, 4: 0.93, 6: 0.8}[topk] * \
        {1024: 0.8, 2048: 1.0, None: 0.9}[window]


def drive(search: Search, truth=landscape, noise: float = 0.01, seed: int = 0):
    """Measure every round like a server would: restart unless the config already runs."""
    rng = random.Random(seed)
    running = search.running
    log = []
    while (plan := search.propose()) is not None:
        observations = []
        for ask in plan.asks:
            observations.append(Observation(ask.point, tuple(truth(ask.point) * (1 + rng.gauss(0, noise))
                                                             for _ in range(ask.waves)), ask.point != running, 1.0))
            running = ask.point
        log.append((plan, observations))
        search.observe(observations)
    return log


def test_one_pass_finds_the_best_of_a_separable_space_with_a_third_of_the_grids_restarts():
    space = parse_space(SPACE)
    search = Search(space, SearchOptions(), space.middle())
    log = drive(search)
    assert search.done and search.best == (8, 2, 2048)
    assert search.restarts <= 10 < space.size
    assert len(search.measured()) == 7  # one pass: 1 + 2 + 2 + 2 configurations
    assert [d.stage for d in search.decisions] == ["budget", "topk", "window"]
    assert all(d.clear for d in search.decisions)
    assert log[0][0].stage == "budget" and log[0][0].through == (8, 4, 2048)


def test_a_round_measures_the_running_config_first_and_ends_on_the_best_measured():
    space = parse_space(SPACE)
    search = Search(space, SearchOptions(waves=2), space.middle(), running=(8, 4, 2048))
    first = search.propose()
    assert first.asks[0].point == (8, 4, 2048) and search.restarts_needed(first) == 2
    # waves=2 leaves one degree of freedom: no lead is clear at rung 1, so rung 2 follows
    search.observe([Observation((8, 4, 2048), (900.0, 960.0), False),
                    Observation((4, 4, 2048), (780.0, 800.0), True),
                    Observation((16, 4, 2048), (640.0, 660.0), True)])
    second = search.propose()
    assert second.rung == 2 and second.need == 4
    # the survivors: the leader and its closest rival, the better one measured last
    assert [a.point for a in second.asks] == [(4, 4, 2048), (8, 4, 2048)]
    # a race of two: the one measured first gets the last rung's waves (8 in all) now, as rung 3
    # would otherwise restart it again; the other tops up to the rung's 4
    assert [a.waves for a in second.asks] == [6, 2]


def test_a_line_of_two_values_costs_the_two_restarts_of_its_grid():
    """Issue 32: a search over window=1024,2048 announced "about 2" restarts (its grid's) and used 4:
    each rung of the race of two restarted the configuration measured first."""
    space = parse_space("window=1024,2048")
    rounds = []
    for seed in range(6):
        for running in (None, (1024,)):
            search = Search(space, SearchOptions(), (1024,), running=running)
            rounds.append(len(drive(search, truth=lambda p: 1000.0, noise=0.05, seed=seed)))
            assert search.restarts == (2 if running is None else 1), (seed, running)
    assert max(rounds) == 3  # a close race: every rung was run, and still no restart beyond the grid's


def test_data_carries_over_and_a_raced_line_is_not_raced_again():
    space = parse_space(SPACE)
    search = Search(space, SearchOptions(passes=3), space.middle())
    log = drive(search)
    assert search.best == (8, 2, 2048)
    # pass 1 moves topk to 2, so pass 2 re-races the budget line through (8, 2, 2048) only (topk
    # and window lines through it were raced in pass 1) and, moving nothing, ends the search
    assert [(d.stage, d.winner) for d in search.decisions] == [
        ("budget", (8, 4, 2048)), ("topk", (8, 2, 2048)), ("window", (8, 2, 2048)), ("budget", (8, 2, 2048))]
    measured = [a.point for plan, _ in log for a in plan.asks]
    assert len(set(measured)) == 9 and len(measured) == 9  # every configuration measured once: no rung 2


def test_a_second_pass_follows_knobs_that_interact():
    # a ridge: (4, 2) is best, but the budget line is raced at topk 4, where budget 8 wins
    def ridge(point):
        return {(4, 2): 1200.0, (8, 2): 1050.0, (8, 4): 1000.0}.get(point[:2], 700.0) * \
            {1024: 0.9, 2048: 1.0, None: 0.95}[point[2]]

    space = parse_space(SPACE)
    one = Search(space, SearchOptions(), space.middle())
    drive(one, ridge)
    assert one.best == (8, 2, 2048)
    two = Search(space, SearchOptions(passes=2), space.middle())
    drive(two, ridge)
    assert two.best == (4, 2, 2048) and two.restarts > one.restarts


def test_final_check_races_a_config_whose_mean_beats_the_incumbent():
    # (4, 4) looks best for its first 4 waves and falls back later: topped up in pass 2's close race
    # with (8, 4) it keeps the lead there, but its mean drops below (4, 2)'s, which the final check
    # then brings to as many waves and crowns
    space = parse_space("budget=4,8 topk=2,4")
    drift = {(4, 2): lambda i: 1000.0, (8, 2): lambda i: 900.0, (8, 4): lambda i: 1040.0 if i < 4 else 800.0,
             (4, 4): lambda i: 1050.0 if i < 4 else 850.0}
    counts: dict = {}

    def measure(point):
        i = counts.get(point, 0)
        counts[point] = i + 1
        return drift[point](i) * (1.01 if i % 2 else 0.99)

    search = Search(space, SearchOptions(passes=2), space.middle())
    running = None
    while (plan := search.propose()) is not None:
        search.observe([Observation(a.point, tuple(measure(a.point) for _ in range(a.waves)), a.point != running)
                        for a in plan.asks])
        running = plan.asks[-1].point
    stages = [d.stage for d in search.decisions]
    assert stages == ["budget", "topk", "budget", "final"], stages
    assert search.best == (4, 2) and search.decisions[-1].winner == (4, 2)


def test_the_same_observations_replay_to_the_same_plans():
    space = parse_space(SPACE)
    first = Search(space, SearchOptions(), space.middle())
    log = drive(first, noise=0.03, seed=5)
    replay = Search(space, SearchOptions(), space.middle())
    for plan, observations in log:
        assert replay.propose() == plan
        replay.observe([Observation.from_json(json.loads(json.dumps(o.to_json())), space) for o in observations])
    assert replay.done and replay.best == first.best and replay.restarts == first.restarts


def test_summary_has_best_rival_margin_and_restarts_against_the_grid():
    space = parse_space(SPACE)
    search = Search(space, SearchOptions(), space.middle())
    drive(search)
    summary = summarize(search, Target(4096, 8, 256), "/tmp/s", "done")
    assert summary["best"]["knobs"] == {"budget": 8, "topk": 2, "window": 2048}
    assert summary["best"]["tok_s"]["lo"] < summary["best"]["tok_s"]["mean"] < summary["best"]["tok_s"]["hi"]
    assert summary["rival"]["knobs"] == {"budget": 8, "topk": 4, "window": 2048}
    assert summary["margin"]["lo"] > 1.0 and summary["clear"] is True
    restarts = summary["restarts"]
    assert restarts["grid"] == 27 and restarts["used"] == search.restarts and restarts["grid_estimate_s"] == 27.0
    text = "\n".join(summary_lines(summary))
    assert "best: budget=8 topk=2 window=2048" in text and f"restarts: {search.restarts} of a full grid's 27" in text
    assert "run it: ddtune up --set budget=8 --set topk=2 --set window=2048" in text


@pytest.mark.parametrize("field,value", [("waves", 0), ("eta", 1), ("rungs", 0), ("passes", 0), ("lanes", 0)])
def test_bad_options_name_the_option(field, value):
    with pytest.raises(DdtuneError) as info:
        SearchOptions(**{field: value})
    assert field in info.value.message and info.value.hint


# --- per-wave samples ------------------------------------------------------------------------
def test_wave_samples_cut_responses_into_waves_by_start(tmp_path):
    lines = []
    for wave, (start, took) in enumerate([(100.0, 2.0), (102.5, 4.0)]):
        for i in range(4):
            lines.append({"kind": "bench", "ok": True, "started_at": start, "e2e_s": took - 0.1 * i,
                          "output_tokens": 100, "wave": wave})
    lines.append({"kind": "bench", "ok": True, "started_at": 107.0, "e2e_s": 1.0, "output_tokens": 100})  # partial
    random.Random(1).shuffle(lines)
    (tmp_path / "responses.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert wave_samples(tmp_path, 4) == [200.0, 100.0]


# --- the simulator's known best ----------------------------------------------------------------
def test_the_simulators_model_has_one_known_best_that_a_search_from_the_middle_reaches():
    from backends.sim import model

    ranking = model.space_ranking(4096, 8)
    (best_speed, best), (second_speed, _) = ranking[0], ranking[1]
    assert best == {"budget": 8, "topk": 2, "window": 2048} and best_speed / second_speed > 1.03
    assert len(ranking) == 27
    space = parse_space(SPACE)
    speeds = {tuple(knobs.values()): speed for speed, knobs in ranking}
    search = Search(space, SearchOptions(), space.middle())
    drive(search, truth=speeds.__getitem__, noise=0.02, seed=3)
    assert search.best == (8, 2, 2048) and search.restarts <= 0.4 * space.size


def test_on_lanes_the_summary_names_each_configurations_gpus_and_warns_when_disjoint():
    space = parse_space("budget=4,8")
    search = Search(space, SearchOptions(waves=2, rungs=1, lanes=2), (4,))
    plan = search.propose()
    assert plan is not None and search.restarts_needed(plan) == len(plan.asks)  # any may move on lanes
    fast, slow = (8,), (4,)
    search.observe([Observation(fast, (110.0, 112.0), True, 1.0, lane=1, gpus=("5",)),
                    Observation(slow, (100.0, 101.0), True, 1.0, lane=0, gpus=("3",))])
    summary = summarize(search, Target(), "/tmp/s", "done", wall_s=12.5)
    assert summary["best"]["lanes"] == [{"lane": 1, "gpus": ["5"], "waves": 2}]
    assert summary["lanes"] == 2 and summary["wall_s"] == 12.5
    assert "budget=8 ran only on lane(s) 1 and budget=4 only on lane(s) 0" in summary["fairness"]
    text = "\n".join(summary_lines(summary))
    assert "waves on lane 1 (GPU 5) 2" in text and "warning: budget=8 ran only on lane(s) 1" in text
    assert "in 12.5 s on 2 lanes (restarts summed over them)" in text
    # one lane shared by both: no warning; the options round-trip with their lane count
    search.placements[slow].append((1, ("5",), 2))
    assert summarize(search, Target(), "/tmp/s", "done")["fairness"] is None
    assert SearchOptions.from_json(search.options.to_json()).lanes == 2
    assert "lanes" not in SearchOptions().to_json()  # a serial search's search.json is unchanged
