"""Sweep order, restart counting, plan round trip, and the resumable store (pure or tmp files)."""

import pytest

from backends.core.errors import UsageError
from workloads.bench.plan import BenchPlan
from workloads.sweep.plan import EvalSettings, Slot, SlotRecord, SweepConfig, SweepPlan, SweepStore

BENCH = BenchPlan((60,), (1, 2), 64, False, 2, 0)
A, B, C = (SweepConfig(n, {"budget": i}) for i, n in enumerate("ABC", 4))


def test_one_round_runs_each_config_once_in_given_order():
    plan = SweepPlan((A, B, C), BENCH)
    assert [(s.config, s.repeat) for s in plan.schedule()] == [("A", 1), ("B", 1), ("C", 1)]
    assert plan.restarts() == 3


def test_repeats_alternate_direction_so_drift_cancels_and_round_edges_skip_a_restart():
    plan = SweepPlan((A, B), BENCH, repeats=4)
    assert [s.config for s in plan.schedule()] == list("ABBAABBA")
    assert [s.repeat for s in plan.schedule()] == [1, 1, 2, 2, 3, 3, 4, 4]
    # every config holds each position (first/second within a round) equally often
    firsts = [plan.schedule()[i].config for i in range(0, 8, 2)]
    assert firsts.count("A") == firsts.count("B") == 2
    assert plan.restarts() == 5  # R * (n - 1) + 1


def test_three_configs_three_repeats():
    plan = SweepPlan((A, B, C), BENCH, repeats=3)
    assert "".join(s.config for s in plan.schedule()) == "ABCCBAABC"
    assert plan.restarts() == 7
    assert [s.index for s in plan.schedule()] == list(range(9))


def test_duplicate_or_missing_configs_are_usage_errors():
    with pytest.raises(UsageError, match="named twice"):
        SweepPlan((A, A), BENCH)
    with pytest.raises(UsageError, match="at least one"):
        SweepPlan((), BENCH)


def test_plan_json_round_trip():
    plan = SweepPlan((SweepConfig("baseline", {}, True), A), BENCH, 2, EvalSettings(256, 2, ("fizzbuzz",)), 3)
    assert SweepPlan.from_json(plan.to_json()) == plan


def test_slot_key_is_filesystem_safe():
    assert Slot(0, "my/preset.toml x", 2).key == "01-my_preset.toml_x-r2"


def test_store_records_survive_a_torn_line(tmp_path):
    plan = SweepPlan((A, B), BENCH)
    store = SweepStore.create(plan, {"backend": "sim"}, tmp_path / "s")
    rec = SlotRecord(Slot(0, "A", 1), "done", None, "x", None, {"restarted": True}, 1.0, 2.0)
    store.append(rec)
    with open(store.slots_file, "a") as fh:
        fh.write('{"slot": {"index": 1, "con')  # a crash mid-write
    again = SweepStore.open(tmp_path / "s")
    assert again.records() == [rec]
    assert again.plan() == plan
    assert again.read()["status"] == "running"


def test_out_folder_with_a_sweep_refuses_a_second_one(tmp_path):
    SweepStore.create(SweepPlan((A,), BENCH), {}, tmp_path / "s")
    with pytest.raises(UsageError, match="--resume"):
        SweepStore.create(SweepPlan((A,), BENCH), {}, tmp_path / "s")


def test_open_without_a_sweep_names_the_fix(tmp_path, state_dir):
    with pytest.raises(UsageError, match="no sweep to resume"):
        SweepStore.open(None)
    with pytest.raises(UsageError, match="no sweep.json"):
        SweepStore.open(tmp_path)


def test_eta_from_restart_and_cell_samples():
    from workloads.sweep.engine import EtaModel

    eta = EtaModel(expected_restart_s=None)
    assert eta.eta(1, 4, 0) is None  # nothing measured, no history
    eta = EtaModel(expected_restart_s=30.0)
    assert eta.eta(2, 0, 0) == 60.0  # history medians before the first restart
    eta.restart_s += [10.0, 20.0, 90.0]
    eta.cell_s += [2.0, 4.0]
    assert eta.eta(2, 5, 0) == 2 * 20.0 + 5 * 3.0  # median restart, mean cell
    assert eta.eta(0, 0, 1) is None  # an eval still to run, none measured
    eta.eval_s.append(7.0)
    assert eta.eta(1, 1, 1) == 20.0 + 3.0 + 7.0
