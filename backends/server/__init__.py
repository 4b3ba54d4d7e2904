"""The server's face: everything tui and workloads need of the server ddtune manages, in one place.

    session = ServerSession(config)          # the one owner: up, restart, apply, stop, watch, close
    session.subscribe(callback)              # or: async for event in session.events()
    StatusFeed(session, callback)            # for a reader that draws the server: log lines, decode stats,
                                             # knob changes, and one typed ServerStatus for the rest
    recorded_server()                        # the record as written (url, log, argv as launched)
    driver_flags(config.backend).attaches    # what the configured driver can do
    lane_servers(); stop_lane_servers(...)   # a parallel sweep's servers, one per lane

The headless commands' use cases, each one call returning a typed result the CLI only prints:
run_server_command (up/restart/stop/down) with requested_config, server_status, run_doctor,
inspect_log, gpu_samples, server_target (a workload's URL, key and log), console_setup.

Events are frozen, past-tense facts (PhaseChanged, LogBatch, Settled, ...), a ``SessionEvent`` union
its readers ``match`` exhaustively (``assert_never``); where the server stands is one ``Phase``. The
record is a typed ``ServerState``: nobody outside this family reads server.json (an import contract guards its I/O,
backends.server.record). Import from here, not from the family's modules. Like every family face,
it loads a module when one of its names is first used (backends/core/faces.py); the stub beside it
(__init__.pyi) types them.
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "backends.core.phase": ("Phase",),
    "backends.drivers.registry": ("DriverFlags", "driver_flags"),
    "backends.launch.dialect": ("llamacpp_info", "steps_of"),
    "backends.launch.ownership": ("NotOurs", "Owned", "SAME_START_S", "StopReport", "owned", "signal_owned",
                                  "stop_owned"),
    "backends.launch.process": ("port_owner",),
    "backends.record.laneports": ("MOVE_SEARCH", "bind_clash", "ephemeral_note", "ephemeral_range", "next_free_port"),
    "backends.record.lanes": ("Lane", "assign_ports", "port_owner_pid", "record_move", "save_lane"),
    "backends.record.state": ("ServerState",),
    "backends.server.commands": ("ServerOutcome", "requested_config", "run_server_command"),
    "backends.server.console": ("ConsoleSetup", "console_setup"),
    "backends.server.doctor": ("Check", "DoctorReport", "run_doctor"),
    "backends.server.events": ("AlarmCleared", "AlarmRaised", "CommandRefused", "ConfigChanged", "DecodeStats",
                               "FatalSeen", "LogBatch", "NoteAdded", "PhaseChanged", "PidChanged", "SessionEvent",
                               "Settled", "Stopped", "Verified"),
    "backends.server.gpuwatch": ("gpu_samples",),
    "backends.server.inspect": ("LogReport", "inspect_log"),
    "backends.server.lane_gpu": ("LaneShare", "LaneTree", "lane_trees"),
    "backends.server.lanecontrol": ("stop_lane_servers",),
    "backends.server.lanes": ("LaneServer", "lane_servers", "live_lane_pids"),
    "backends.server.lifecycle": ("OtherConfigRuns",),
    "backends.server.release": ("gpu_holders",),
    "backends.server.session": ("ServerSession",),
    "backends.server.snapshot": ("is_alive", "recorded_server"),
    "backends.server.startup": ("Progress", "StartupHistory", "StartupTracker"),
    "backends.server.status": ("FeedEvent", "KnobStatus", "ServerStatus", "StatusChanged", "StatusFeed"),
    "backends.server.status_report": ("LaneStatus", "ServerAcceptance", "StatusReport", "server_status"),
    "backends.server.target": ("ServerTarget", "server_target"),
    "backends.server.telemetry": ("History", "TelemetrySample", "TelemetryStream"),
})
