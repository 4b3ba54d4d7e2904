"""The endpoint's connect grace (issue 12, item 5): [server] connect_grace_s is validated like the
other fields, a real refused socket reads "connection refused at URL", and the grace keeps waiting
while the endpoint's log is still being written."""

from __future__ import annotations

import os
import time

import pytest

from backends.knobs.config import ServerConfig, config_from_dict
from backends.drivers.endpoint import ConnectGrace, EndpointDriver
from backends.core.errors import ConfigError
from backends.launch.readiness import ProbeResult, ReadinessProbe
from tests.helpers import free_port


def test_connect_grace_defaults_to_30_s_and_takes_seconds():
    assert ServerConfig().connect_grace_s == 30.0
    config = config_from_dict({"server": {"backend": "endpoint", "url": "http://h:1", "connect_grace_s": 5}}, "c.toml")
    assert config.connect_grace_s == 5.0


@pytest.mark.parametrize("bad", [0, -1, "30", True, float("nan")])
def test_a_bad_connect_grace_names_the_field_and_the_fix(bad):
    with pytest.raises(ConfigError) as info:
        config_from_dict({"server": {"connect_grace_s": bad}}, "c.toml")
    assert info.value.message.startswith("c.toml: [server] connect_grace_s: ")
    assert info.value.hint == "connect_grace_s = 30 (seconds, > 0)"


async def test_a_refused_socket_reads_connection_refused_at_the_url():
    url = f"http://127.0.0.1:{free_port()}"  # bound once, then closed: nothing listens
    async with ReadinessProbe(url, None, None, check_owner=False) as probe:
        result = await probe.probe()
    assert not result.ready and result.unreachable
    assert result.reason == f"connection refused at {url}"


def refused(url: str) -> ProbeResult:
    return ProbeResult(False, f"connection refused at {url}", unreachable=True)


def test_grace_fails_only_after_the_grace_and_says_why():
    backend = EndpointDriver(ServerConfig(backend="endpoint", url="http://h:1", connect_grace_s=30))
    grace = ConnectGrace(backend)
    assert grace.check(refused("http://h:1"), 100.0) == ("connection refused at http://h:1", None)
    assert grace.check(refused("http://h:1"), 129.0) == (None, None)
    detail, failure = grace.check(refused("http://h:1"), 130.0)
    assert detail is None
    assert failure == ("connection refused at http://h:1: nothing answered there for 30 s ([server] connect_grace_s); "
                       "start the server there, or fix [server] url")


def test_an_answer_restarts_the_grace_and_updates_the_detail():
    backend = EndpointDriver(ServerConfig(backend="endpoint", url="http://h:1", connect_grace_s=30))
    grace = ConnectGrace(backend)
    grace.check(refused("http://h:1"), 100.0)
    busy = ProbeResult(False, "1-token /generate failed: /generate returned HTTP 503")
    assert grace.check(busy, 120.0) == ("http://h:1 answers; not ready: 1-token /generate failed: "
                                        "/generate returned HTTP 503", None)
    assert grace.check(refused("http://h:1"), 140.0)[1] is None  # a new run of refusals: 30 s again
    assert grace.check(refused("http://h:1"), 171.0)[1] is not None


def test_a_log_still_being_written_keeps_the_wait_going(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("Load weight begin.\n")
    backend = EndpointDriver(ServerConfig(backend="endpoint", url="http://h:1", connect_grace_s=30,
                                           log_file=str(log)))
    grace = ConnectGrace(backend)
    grace.check(refused("http://h:1"), 0.0)
    assert grace.check(refused("http://h:1"), 31.0) == (None, None)  # the log changed just now
    old = time.time() - 60
    os.utime(log, (old, old))  # a log nobody wrote to for a minute: no server on its way
    assert grace.check(refused("http://h:1"), 32.0)[1] is not None
