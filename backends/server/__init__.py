"""The server's face: everything tui and workloads need of the server ddtune manages, in one place.

    session = ServerSession(config)          # the one owner: up, restart, apply, stop, watch, close
    session.subscribe(callback)              # or: async for event in session.events()
    current_server()                         # the record as it stands (phase "stale": pid gone)
    recorded_server()                        # the record as written (url, log, argv as launched)
    driver_flags(config.backend).attaches    # what the configured driver can do
    lane_servers(); stop_lane_servers(...)   # a parallel sweep's servers, one per lane

Events are frozen, past-tense facts (PhaseChanged, LogBatch, Settled, ...). The record is a typed
``ServerState``: nobody outside this family reads server.json (an import contract guards its I/O,
backends.server.record). Import from here, not from the family's modules.
"""

from backends.drivers.registry import DriverFlags
from backends.drivers.registry import flags as driver_flags
from backends.record.laneports import MOVE_SEARCH, bind_clash, ephemeral_note, ephemeral_range, next_free_port
from backends.record.lanes import Lane, assign_ports, port_owner_pid, record_move, save_lane
from backends.record.state import ServerState
from backends.server.events import (
    AlarmCleared, AlarmRaised, CommandRefused, ConfigChanged, DecodeStats, FatalSeen, LogBatch, NoteAdded,
    PhaseChanged, PidChanged, SessionEvent, Settled, Stopped, Verified,
)
from backends.server.lane_gpu import LaneShare, LaneTree, lane_shares, lane_trees
from backends.server.lanecontrol import stop_lane_servers
from backends.server.lanes import LaneServer, lane_servers, live_lane_pids
from backends.server.release import gpu_holders
from backends.server.session import ServerSession
from backends.server.snapshot import current_server, is_alive, launched_api_key, record_reason, recorded_server
from backends.server.startup import WORK_PHASES, Progress, StartupHistory
from backends.server.telemetry import History, TelemetrySample, TelemetryStream

__all__ = [
    # the owner and what it says
    "ServerSession", "SessionEvent", "PhaseChanged", "NoteAdded", "LogBatch", "DecodeStats", "FatalSeen",
    "PidChanged", "ConfigChanged", "Verified", "Settled", "Stopped", "CommandRefused", "AlarmRaised",
    "AlarmCleared", "Progress", "WORK_PHASES", "StartupHistory",
    # the record, read-only
    "ServerState", "current_server", "recorded_server", "is_alive", "launched_api_key", "record_reason",
    # drivers, as flags
    "DriverFlags", "driver_flags",
    # a parallel sweep's lanes
    "Lane", "LaneServer", "lane_servers", "live_lane_pids", "stop_lane_servers", "save_lane", "record_move",
    "assign_ports", "port_owner_pid", "MOVE_SEARCH", "bind_clash", "ephemeral_note", "ephemeral_range",
    "next_free_port",
    # GPU memory and telemetry
    "TelemetryStream", "TelemetrySample", "History", "LaneTree", "LaneShare", "lane_trees", "lane_shares",
    "gpu_holders",
]
