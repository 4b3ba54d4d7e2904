import pytest


@pytest.fixture
def state_dir(tmp_path, monkeypatch):
    """A private DDTUNE_STATE_DIR for the test (and the processes it starts)."""
    path = tmp_path / "state"
    path.mkdir()
    monkeypatch.setenv("DDTUNE_STATE_DIR", str(path))
    return path
