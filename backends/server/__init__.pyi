# The types of what backends.server offers (its __init__.py loads each module on first use).

from backends.core.phase import Phase as Phase
from backends.drivers.registry import DriverFlags as DriverFlags, driver_flags as driver_flags
from backends.launch.dialect import llamacpp_info as llamacpp_info, steps_of as steps_of
from backends.launch.ownership import (NotOurs as NotOurs, Owned as Owned, SAME_START_S as SAME_START_S,
                                       StopReport as StopReport, owned as owned, signal_owned as signal_owned,
                                       stop_owned as stop_owned)
from backends.launch.process import port_owner as port_owner
from backends.record.laneports import (MOVE_SEARCH as MOVE_SEARCH, bind_clash as bind_clash,
                                       ephemeral_note as ephemeral_note, ephemeral_range as ephemeral_range,
                                       next_free_port as next_free_port)
from backends.record.lanes import (Lane as Lane, assign_ports as assign_ports, port_owner_pid as port_owner_pid,
                                   record_move as record_move, save_lane as save_lane)
from backends.record.state import ServerState as ServerState
from backends.server.commands import (ServerOutcome as ServerOutcome, requested_config as requested_config,
                                      run_server_command as run_server_command)
from backends.server.console import ConsoleSetup as ConsoleSetup, console_setup as console_setup
from backends.server.doctor import Check as Check, DoctorReport as DoctorReport, run_doctor as run_doctor
from backends.server.events import (AlarmCleared as AlarmCleared, AlarmRaised as AlarmRaised,
                                    CommandRefused as CommandRefused, ConfigChanged as ConfigChanged,
                                    DecodeStats as DecodeStats, FatalSeen as FatalSeen, LogBatch as LogBatch,
                                    NoteAdded as NoteAdded, PhaseChanged as PhaseChanged, PidChanged as PidChanged,
                                    SessionEvent as SessionEvent, Settled as Settled, Stopped as Stopped,
                                    Verified as Verified)
from backends.server.gpuwatch import gpu_samples as gpu_samples
from backends.server.inspect import LogReport as LogReport, inspect_log as inspect_log
from backends.server.lane_gpu import LaneShare as LaneShare, LaneTree as LaneTree, lane_trees as lane_trees
from backends.server.lanecontrol import stop_lane_servers as stop_lane_servers
from backends.server.lanes import (LaneServer as LaneServer, lane_servers as lane_servers,
                                   live_lane_pids as live_lane_pids)
from backends.server.lifecycle import OtherConfigRuns as OtherConfigRuns
from backends.server.release import gpu_holders as gpu_holders
from backends.server.session import ServerSession as ServerSession
from backends.server.snapshot import is_alive as is_alive, recorded_server as recorded_server
from backends.server.startup import (Progress as Progress, StartupHistory as StartupHistory,
                                     StartupTracker as StartupTracker)
from backends.server.status import (FeedEvent as FeedEvent, KnobStatus as KnobStatus, ServerStatus as ServerStatus,
                                    StatusChanged as StatusChanged, StatusFeed as StatusFeed)
from backends.server.status_report import (LaneStatus as LaneStatus, ServerAcceptance as ServerAcceptance,
                                           StatusReport as StatusReport, server_status as server_status)
from backends.server.target import ServerTarget as ServerTarget, server_target as server_target
from backends.server.telemetry import (History as History, TelemetrySample as TelemetrySample,
                                       TelemetryStream as TelemetryStream)
