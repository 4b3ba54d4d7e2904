"""The pure parts of parallel sweeps: --gpus parsing, GPU sets, the GPU choice from NVML (a fake),
GPU differences, lane ports, the rotation of runs across lanes, and the report's lanes section."""

from __future__ import annotations

import pytest

from backends.knobs.config import ServerConfig
from backends.core.errors import UsageError
from backends.machine.gpuset import (
    GpuIdentity, Inventory, choose, differences, groups, inventory, parse_gpus, sharing,
)
from backends.record.lanes import Lane, assign_ports
from tests.fake_nvml import GIB, FakeGpu, NVMLError_DriverNotLoaded, make_fake_nvml
from workloads.bench.plan import BenchPlan
from workloads.report.compare import build_report
from workloads.report.render import to_json, to_markdown
from workloads.report.inputs import Inputs, Placement
from workloads.sweep.lanes import StartGate, assign
from workloads.sweep.plan import SweepConfig, SweepPlan


def test_parse_gpus_takes_distinct_indices_and_names_the_fix():
    assert parse_gpus("0,1, 3") == ("0", "1", "3")
    assert parse_gpus("07") == ("7",)
    for bad, words in (("", "separated by commas"), ("0,,1", "separated by commas"), ("0,a", "'a' is not a GPU"),
                       ("1,1", "GPU 1 is named twice"), ("-1", "not a GPU index")):
        with pytest.raises(UsageError) as err:
            parse_gpus(bad)
        assert words in err.value.message and "--gpus" in err.value.hint


def test_a_gpu_named_twice_needs_share_gpu_and_then_gives_lanes_one_gpu():
    with pytest.raises(UsageError) as err:
        parse_gpus("0,0")
    assert "--share-gpu" in err.value.hint and "interferes" in err.value.hint
    assert parse_gpus("0, 0", share=True) == ("0", "0")
    assert groups(("0", "0"), 1, 2, share=True) == (("0",), ("0",))
    assert groups(("0",), 1, 3, share=True) == (("0",), ("0",), ("0",))  # --parallel beyond the GPUs: dealt in turn
    assert groups(("0", "1"), 1, 3, share=True) == (("0",), ("1",), ("0",))
    assert groups(("0",), 1, 3) == (("0",),)  # not asked: one lane per GPU set
    assert groups(("0", "1", "0", "1"), 2, 2, share=True) == (("0", "1"), ("0", "1"))
    with pytest.raises(UsageError) as err:
        groups(("0", "0"), 2, 1, share=True)
    assert "names a GPU twice" in err.value.message
    assert sharing([("0",), ("0",), ("1",)]) == {0: (1,), 1: (0,), 2: ()}
    assert sharing([("0", "1"), ("1", "2"), ("3", "4")]) == {0: (1,), 1: (0,), 2: ()}


async def test_lanes_of_one_gpu_start_one_at_a_time_and_others_at_once():
    import asyncio

    gate = StartGate([Lane(0, ("0",), 1), Lane(1, ("0",), 2), Lane(2, ("1",), 3)])
    assert sorted(gate.locks) == ["0"]  # only a GPU several lanes use is gated
    inside: set[str] = set()
    seen: list[frozenset[str]] = []   # who was starting at once, at each entry
    said: list[str] = []

    async def start(name: str, gpus: tuple[str, ...]) -> None:
        async with gate.hold(gpus, lambda kind, text: said.append(text)):
            inside.add(name)
            seen.append(frozenset(inside))
            await asyncio.sleep(0.05)
            inside.discard(name)

    await asyncio.gather(start("a", ("0",)), start("c", ("1",)), start("b", ("0",)))
    assert not any({"a", "b"} <= group for group in seen), seen       # GPU 0: never two starts at once
    assert any("c" in group and len(group) > 1 for group in seen), seen  # GPU 1 did not wait for GPU 0
    assert any("GPU 0" in text and "one at a time" in text for text in said), said


def test_groups_split_gpus_into_sets_per_server():
    assert groups(("0", "1", "2", "3"), 1, 2) == (("0",), ("1",))
    assert groups(("0", "1", "2", "3"), 2, 4) == (("0", "1"), ("2", "3"))
    assert groups(("0", "1", "2"), 2, 4) == (("0", "1"),)  # the odd GPU out is not used
    with pytest.raises(UsageError) as err:
        groups(("0",), 2, 1)
    assert "only 1 GPU(s)" in err.value.message


def test_no_nvml_needs_gpus():
    none = Inventory(False, "no NVIDIA driver found")
    with pytest.raises(UsageError) as err:
        choose(None, none)
    assert "--parallel needs --gpus" in err.value.message and "no NVIDIA driver" in err.value.message
    assert "--gpus 0,1" in err.value.hint
    assert choose(("4", "5"), none) == (("4", "5"), [])
    # the real reader says the same on a box whose driver is missing
    assert not inventory(make_fake_nvml(init_error=NVMLError_DriverNotLoaded)).available


def test_default_gpus_leave_out_foreign_memory_but_not_our_lane_servers():
    nv = make_fake_nvml([FakeGpu(procs=[]), FakeGpu(procs=[(999_999_1, 20 * GIB)]), FakeGpu(procs=[(999_999_2, GIB)]),
                         FakeGpu(name="NVIDIA H100")])
    inv = inventory(nv)
    assert [d.index for d in inv.devices] == ["0", "1", "2", "3"]
    assert inv.devices[0].uuid == "GPU-fake-0" and inv.devices[3].name == "NVIDIA H100"
    # the fake's pids are not processes here, so NVML's pids count as another namespace's: every holder is foreign
    gpus, notes = choose(None, inv)
    assert gpus == ("0", "3") and "GPU 1 (pids 9999991)" in notes[0]
    attributable = Inventory(True, None, inv.devices, {"0": (), "1": (77,), "2": (88,), "3": ()}, True)
    gpus, notes = choose(None, attributable, own_pids={88})  # 88: a lane server of ours, restarted anyway
    assert gpus == ("0", "2", "3") and "GPU 1" in notes[0] and "GPU 2" not in notes[0]
    gpus, notes = choose(("1", "3"), attributable)  # named GPUs are used, with a warning
    assert gpus == ("1", "3") and "GPU 1 already holds memory of pids [77]" in notes[0]
    with pytest.raises(UsageError) as err:
        choose(("0", "9"), attributable)
    assert "GPU 9 does not exist here" in err.value.message and "0, 1, 2, 3" in err.value.hint
    busy = Inventory(True, None, inv.devices[:1], {"0": (5,)}, True)
    with pytest.raises(UsageError) as err:
        choose(None, busy)
    assert "every GPU holds another process's memory" in err.value.message


def test_differences_name_model_and_clock():
    a = GpuIdentity("0", "u0", "NVIDIA H200", 141 * GIB, 700.0, 1980)
    assert differences([a, GpuIdentity("1", "u1", "NVIDIA H200", 141 * GIB, 700.0, 1980)]) == []
    assert differences([GpuIdentity("0"), GpuIdentity("1")]) == []  # the simulator: nothing known, nothing to say
    found = differences([a, GpuIdentity("1", "u1", "NVIDIA H100", 80 * GIB, 700.0, 1755)])
    assert any("differ in model" in f and "GPU 1: NVIDIA H100" in f for f in found)
    assert any("top SM clock" in f and "1755 MHz" in f for f in found)
    assert any("memory" in f and "80 GiB" in f for f in found)


def test_lane_ports_skip_taken_ones_but_keep_a_lanes_own_server():
    taken = {30000: 111, 30002: True}  # 111: the main server; True: someone we cannot name
    ports = assign_ports(30000, 3, {}, lambda p: taken.get(p))
    assert ports == [30001, 30003, 30004]
    assert assign_ports(30000, 2, {0: {111}}, lambda p: taken.get(p)) == [30000, 30001]


def test_lane_config_has_its_own_gpus_and_port():
    base = ServerConfig(env={"FOO": "1", "CUDA_VISIBLE_DEVICES": "0,1,2,3"})
    config = Lane(1, ("2", "3"), 30001).config(base)
    assert config.port == 30001 and config.env["FOO"] == "1"
    assert config.env["CUDA_VISIBLE_DEVICES"] == "2,3" and config.env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert config.config_hash() != base.config_hash()


def test_repeats_rotate_each_configuration_across_lanes():
    plan = SweepPlan((SweepConfig("A"), SweepConfig("B"), SweepConfig("C")), BenchPlan((60,), (1,), 16), repeats=3)
    queues = assign(plan.schedule(), plan, 3)
    for name in "ABC":
        lanes = sorted(i for i, q in enumerate(queues) for s in q if s.config == name)
        assert lanes == [0, 1, 2], (name, queues)
    one = SweepPlan((SweepConfig("A"), SweepConfig("B")), BenchPlan((60,), (1,), 16))
    assert [[s.config for s in q] for q in assign(one.schedule(), one, 2)] == [["A"], ["B"]]


def test_report_names_each_runs_gpu_and_warns_when_gpus_differ():
    h200 = GpuIdentity("0", "GPU-a", "NVIDIA H200", 141 * GIB, 700.0, 1980).to_json()
    h100 = GpuIdentity("1", "GPU-b", "NVIDIA H100", 80 * GIB, 700.0, 1980).to_json()
    inputs = Inputs((), (), (), 10.0, placements=(Placement("A", 1, 0, ("0",), (h200,)),
                                                   Placement("A", 2, 1, ("1",), (h100,), "failed")))
    report = build_report(inputs)
    assert report.lanes == 2
    md = to_markdown(report)
    assert "## lanes" in md and "**Warning: the GPUs differ in model" in md
    assert "| A | 1 | 0 | 0 | NVIDIA H200 | GPU-a | done |" in md
    assert "| A | 2 | 1 | 1 | NVIDIA H100 | GPU-b | failed |" in md
    doc = to_json(report)
    assert doc["placements"][1]["gpus"] == ["1"] and doc["gpu_warnings"]
    alike = build_report(Inputs((), (), (), 10.0, placements=(Placement("A", 1, 0, ("0",), (h200,)),)))
    assert "Warning" not in to_markdown(alike) and "## lanes" in to_markdown(alike)
    assert "## lanes" not in to_markdown(build_report(Inputs((), (), (), 10.0)))


def test_report_labels_runs_of_a_shared_gpu():
    h200 = GpuIdentity("0", "GPU-a", "NVIDIA H200", 141 * GIB, 700.0, 1980).to_json()
    inputs = Inputs((), (), (), 10.0, placements=(Placement("A", 1, 0, ("0",), (h200,), shared=True),
                                                   Placement("B", 1, 1, ("0",), (h200,), shared=True)))
    md = to_markdown(build_report(inputs))
    assert "**Warning: lanes 0, 1 shared GPU 0 (--share-gpu): their runs interfered in throughput" in md
    assert "| A | 1 | 0 | 0 | NVIDIA H200 | GPU-a | done | shared |" in md and "| GPU use |" in md
    assert "differ in" not in md  # one GPU is alike itself
    assert [p["shared_gpu"] for p in to_json(build_report(inputs))["placements"]] == [True, True]
    own = to_markdown(build_report(Inputs((), (), (), 10.0, placements=(Placement("A", 1, 0, ("0",), (h200,)),))))
    assert "GPU use" not in own and "shared GPU" not in own
