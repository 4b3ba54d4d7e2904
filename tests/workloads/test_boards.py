"""The console's sweep and search screens draw what workloads' boards say an event changes (the boards
match every event; mypy proves it): here the boards alone, no widget, no process."""

from __future__ import annotations

from backends.record.lanes import Lane
from tests.tui.search_fixtures import OOM, PATH, search_events
from workloads.search.board import SearchBoard
from workloads.search.events import RoundProgress
from workloads.sweep.board import SweepBoard
from workloads.sweep.events import (
    Applied, CellFinished, LaneClosed, LaneEvent, LanesStarted, LosslessChecked, ServerApplied, SlotStarted,
    SweepStarted,
)
from workloads.sweep.plan import Slot


def test_a_lane_event_fills_its_slot_row_and_its_lane_row():
    board = SweepBoard()
    slot = Slot(0, "b8-t4-w2048", 1)
    start = board(SweepStarted("runs/x", (slot,), (), None))
    assert start.slot_rows == [(0, ("1", "b8-t4-w2048", "waiting", "-", "-", ""))] and "1 runs" in start.status
    lanes = board(LanesStarted((Lane(0, ("2",), 30001),), ("lanes 0, 1 share GPU 2",)))
    assert lanes.lane_rows == [(0, ("0", "2", "30001", "waiting", "-", "-"))]
    assert lanes.notices == [("lanes 0, 1 share GPU 2", False)]
    started = board(LaneEvent(0, SlotStarted(slot, True, 90.0)))
    assert [(i, c, m.text) for i, c, m in started.slot_cells] == [(0, 2, "restarting")]
    assert (0, 4, "1 b8-t4-w2048 r1") in started.lane_cells
    cell = {"output_tok_s": 812.4, "context": 60, "concurrency": 1}
    done = board(LaneEvent(0, CellFinished(slot, cell, 1, 2, None)))
    assert (0, 3, "812") in [(i, c, m.text) for i, c, m in done.slot_cells] and (0, 5, "cells 1/2") in done.lane_cells
    assert board(LaneEvent(0, ServerApplied(slot, Applied(False, None, True, "oom")))).lane_cells == \
        [(0, 3, "server FAILED")]
    assert board(LaneClosed(0, "stopped pid 12")).lane_cells == [(0, 3, "stopped pid 12")]


def test_answers_that_differ_from_the_baseline_are_red_and_said():
    change = SweepBoard()(LosslessChecked(Slot(1, "b16", 1), {"status": "compared", "prompts": 8, "diverged": 2,
                                                                  "first": [4, None, 9]}))
    [(index, column, mark)] = change.slot_cells
    assert (index, column, mark.text, mark.tone) == (1, 5, "DIFFERS 2/8 @4,9", "bad")
    [(said, error)] = change.notices
    assert error and said.startswith("b16: ")


def test_the_search_board_counts_starts_marks_the_failure_and_the_best():
    board = SearchBoard()
    changes = [board(event) for event in search_events()]
    assert changes[0].round is not None and "folder " in changes[0].round[0].text and board.path == PATH
    rows = [label for change in changes for label in change.rows]
    assert len(rows) == len(set(rows)) > 3  # one row per configuration started
    failed = [m for change in changes for _, column, m in change.cells if m.tone == "bad"]
    assert failed and failed[0].text.startswith("FAILED: " + OOM[:10])
    assert any(error for change in changes for _, error in change.notices)
    assert changes[-1].best is not None and board.best is not None
    assert any(m.text == "BEST" and m.tone == "win" for _, _, m in changes[-1].cells)
    assert changes[-1].restarts.startswith(f"restarts: {board.restarts} of a full grid's 27") and board.restarts


def test_a_round_s_progress_names_the_lane_and_lane_notes_are_said_at_once():
    board = SearchBoard()
    events = search_events(rounds=1)
    for event in events:
        board(event)
    slot = Slot(0, board.space.label(events[-1].plan.asks[0].point), 1)
    change = board(RoundProgress(events[-1].plan, LaneEvent(1, SlotStarted(slot, True, None))))
    assert [(label, m.text) for label, _, m in change.cells] == [(slot.config, "lane 1: restarting")]
    assert SearchBoard.said_at_once(LanesStarted((), ("a note",))) == ["a note"]
    assert SearchBoard.said_at_once(LaneClosed(1, "stopped")) == ["lane 1: stopped"]
    assert SearchBoard.said_at_once(events[0]) == []
    assert board.interrupted_line().endswith("--resume --out " + PATH)
