"""The driver registry: one table name -> driver class, and the flags callers read instead of a
driver's class or name (issue 23, item 3)."""

import os
import time

import psutil
import pytest

from backends.drivers.registry import DRIVERS, NO_DRIVER, DriverFlags, alive, driver_of, driver_flags, make_driver
from backends.knobs.config import BACKENDS, ServerConfig
from backends.record.state import ServerState

# what each driver can do, pinned: a flag that moves changes what the lifecycle does with it
EXPECTED = {
    "sglang": DriverFlags(can_start=True, can_stop=True, has_logs=True, spawns=True, owns_gpu_memory=True,
                          log_names_pid=True),
    "sim": DriverFlags(can_start=True, can_stop=True, has_logs=True, spawns=True, owns_gpu_memory=True,
                       simulated=True, log_names_pid=True),
    "systemd": DriverFlags(can_start=True, can_stop=True, has_logs=True, stops_by_unit=True, log_names_pid=True),
    "endpoint": DriverFlags(attaches=True, log_names_pid=True),
    # llama-server names no pid in its log: the port's owner alone proves the pid ready
    "llamacpp": DriverFlags(can_start=True, can_stop=True, has_logs=True, spawns=True, owns_gpu_memory=True),
}


def test_every_backend_the_config_accepts_has_a_driver():
    assert set(DRIVERS) == set(BACKENDS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_flags_of_each_driver(name):
    assert driver_flags(name) == EXPECTED[name]


def test_a_name_no_driver_has_gets_no_flags():
    assert driver_flags("hand-edited") == NO_DRIVER and not any(vars(NO_DRIVER).values())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_make_backend_builds_the_named_driver(name):
    extra = {"unit": "sglang.service"} if name == "systemd" else {}
    extra |= {"url": "http://127.0.0.1:9"} if name == "endpoint" else {}
    config = ServerConfig(backend=name, **extra)
    driver = make_driver(config)
    assert type(driver) is DRIVERS[name] and driver.NAME == name and driver.config is config


def test_an_endpoint_with_a_log_file_has_logs_and_a_connect_grace():
    plain = make_driver(ServerConfig(backend="endpoint", url="http://127.0.0.1:9"))
    logged = make_driver(ServerConfig(backend="endpoint", url="http://127.0.0.1:9", log_file="/tmp/x.log"))
    assert not plain.has_logs() and logged.has_logs()
    assert plain.connect_grace() is not None and make_driver(ServerConfig()).connect_grace() is None


def _record(backend: str, token: str | None = None) -> ServerState:
    me = os.getpid()
    return ServerState(backend=backend, pid=me, pgid=me, host="127.0.0.1", port=1, url="http://127.0.0.1:1",
                       config_hash="x", knobs={}, log_path=None, started_at=time.time(),
                       create_time=psutil.Process(me).create_time(), token=token)


def test_a_unit_s_main_pid_is_alive_without_a_launch_token():
    """systemd started the unit's process: it carries no token, and its pid + start time prove it."""
    assert alive(_record("systemd"))


@pytest.mark.parametrize("backend", ["sim", "sglang", "llamacpp", "hand-edited"])
def test_a_spawned_record_is_alive_only_with_its_launch_token(backend):
    """This test process runs, at that start time, but carries no launch token: it is no server ddtune
    spawned (nor is a record naming a driver nobody has)."""
    assert not alive(_record(backend)) and not alive(_record(backend, token="0" * 32))
    assert not alive(_record("systemd").with_(create_time=None))


def test_driver_of_a_record_of_another_kind_stops_it_with_that_kind():
    current = make_driver(ServerConfig(backend="sglang"))
    assert driver_of(_record("sglang"), current) is current
    other = driver_of(_record("sim"), current)
    assert other.NAME == "sim" and other.SPAWNS and other.config.port == current.config.port
