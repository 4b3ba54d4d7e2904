"""One owner for the server's record (issue 23, item 2): server.json and launch.json are read and
written by the server family alone. The import contract in pyproject.toml says so; these tests show
it holds on the code as it is and that it breaks the moment a module outside the family imports the
record's file I/O (the contract is checked on the real import graph plus one added import)."""

import tomllib

import grimp
import pytest
from importlinter.contracts.protected import ProtectedContract

from tests.helpers import REPO

NAME = "only the server family touches the server's record files"


def contract() -> ProtectedContract:
    settings = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    options = next(c for c in settings["contracts"] if c["name"] == NAME)
    return ProtectedContract(NAME, {"graph": None}, {k: v for k, v in options.items() if k not in ("name", "type")})


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("backends", "workloads", "tui", include_external_packages=True, cache_dir=None)


def kept_with(graph, importer: str | None = None) -> bool:
    """Whether the contract holds on ``graph``, plus ``importer`` importing the record I/O."""
    if importer is None:
        return contract().check(graph, verbose=False).kept
    graph.add_import(importer=importer, imported="backends.server.record", line_number=1, line_contents="import")
    try:
        return contract().check(graph, verbose=False).kept
    finally:
        graph.remove_import(importer=importer, imported="backends.server.record")


def test_the_code_as_it_is_keeps_the_contract(graph):
    assert kept_with(graph)


@pytest.mark.parametrize("intruder", ["workloads.runs.provenance", "tui.commands.gpu", "backends.drivers.spawn",
                                      "backends.record.lanes", "backends.selftest.checks"])
def test_a_reader_outside_the_server_family_breaks_it(graph, intruder):
    assert not kept_with(graph, intruder)


def test_the_server_family_may_read_it(graph):
    assert kept_with(graph, "backends.server.telemetry")
