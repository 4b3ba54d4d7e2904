"""The grading sandbox in each of its modes: ``sandbox_mode`` forces one through DDTUNE_SANDBOX.

No mode is skipped: where bubblewrap or namespaces are missing, the forced mode raises ConfigError
and its tests fail (CI installs bubblewrap, as it installs tmux for the e2e tests)."""

import pytest

NS_MODES = ["bwrap", "unshare"]
ALL_MODES = NS_MODES + ["rlimit"]


@pytest.fixture(params=ALL_MODES)
def sandbox_mode(request, monkeypatch):
    monkeypatch.setenv("DDTUNE_SANDBOX", request.param)
    return request.param
