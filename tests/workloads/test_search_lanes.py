"""Which lane measures which configuration of a search round (workloads.search.lanes.place): a
re-measured configuration moves to the lane where it has the fewest waves, a lane keeps the
configuration its server runs, queues stay balanced; and the lane history read back from rounds."""

from workloads.search.lanes import history, place
from workloads.search.space import SearchSpace
from workloads.sweep.plan import Slot

A, B, C, D = (0, 0), (1, 0), (0, 1), (1, 1)
NAMES = {"a": A, "b": B, "c": C, "d": D}


def slots(*names: str) -> list[Slot]:
    return [Slot(i, name, 1) for i, name in enumerate(names)]


def queues(result: list[list[Slot]]) -> list[list[str]]:
    return [[s.config for s in q] for q in result]


def nothing_runs(lane: int, name: str) -> bool:
    return False


def test_a_lane_keeps_what_it_runs_and_new_ones_fill_the_shortest_queue():
    running = {0: "c", 1: "a"}
    got = place(slots("a", "b", "c", "d"), NAMES, 2, lambda lane, name: running[lane] == name, {})
    assert queues(got) == [["c", "b"], ["a", "d"]]  # each lane's own first: no restart for it


def test_a_re_measured_configuration_moves_to_the_lane_where_it_has_fewest_waves():
    seen = {A: {0: 4}, B: {1: 4}}
    running = {0: "a", 1: "b"}  # sticky would keep them; fairness moves them (a restart each)
    got = place(slots("a", "b"), NAMES, 2, lambda lane, name: running[lane] == name, seen)
    assert queues(got) == [["b"], ["a"]]


def test_with_waves_even_across_lanes_the_running_lane_wins():
    seen = {A: {0: 4, 1: 4}, B: {0: 4, 1: 4}}
    running = {0: "b", 1: "a"}
    got = place(slots("a", "b"), NAMES, 2, lambda lane, name: running[lane] == name, seen)
    assert queues(got) == [["b"], ["a"]]


def test_rotation_keeps_queues_balanced():
    # all three measured on lane 0 only: lane 1 would take all three, but no lane gets more than its share
    seen = {A: {0: 2}, B: {0: 2}, C: {0: 2}}
    got = queues(place(slots("a", "b", "c"), NAMES, 2, nothing_runs, seen))
    assert sorted(map(len, got)) == [1, 2] and len(got[1]) == 2


def test_history_sums_waves_per_lane_and_skips_serial_records():
    space = SearchSpace((("budget", (4, 8)), ("topk", (2, 4))))
    rounds = [{"observations": [{"point": [4, 2], "samples": [1.0, 2.0], "lane": 0},
                                {"point": [8, 2], "samples": [1.0], "lane": 1},
                                {"point": [8, 4], "samples": [1.0]}]},
              {"observations": [{"point": [4, 2], "samples": [3.0], "lane": 1}, "junk",
                                {"point": [5, 5], "samples": [3.0], "lane": 1}]}]
    assert history(rounds, space) == {(4, 2): {0: 2, 1: 1}, (8, 2): {1: 1}}
