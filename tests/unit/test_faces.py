"""One door per family: the console (tui/) reaches ``workloads`` only through each family's face, the
package's ``__init__`` (workloads.sweep, workloads.live, ...), and takes from a face only what its
``__all__`` offers. A face is the family's use case; its modules are free to change behind it.

The same holds for ``backends``: the server's families (record, drivers, launch) open no door of their
own, ``backends.server`` is theirs. In all, the console uses at most ``MOST_FACES`` faces (issue 23).
The console's imports are read from its source with ``ast`` (lazy imports inside functions included).
A face loads its modules on first use (backends/core/faces.py) and types them in its stub
(``__init__.pyi``): the stub must say the same, and a face must open no door upward."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import REPO, ddtune_env

LAYERS = ("workloads", "backends")
MOST_FACES = 12  # the lower layers as the console sees them: one door per use case


def _imports(path: Path) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    """(line, module, names) of every absolute import in ``path``, in line order; ``names`` is () for
    ``import m``."""
    found: list[tuple[int, str, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module, tuple(alias.name for alias in node.names)))
    yield from sorted(found, key=lambda item: item[0])


def _is_package(dotted: str) -> bool:
    return (REPO / dotted.replace(".", "/") / "__init__.py").is_file()


def _is_module(dotted: str) -> bool:
    path = REPO / dotted.replace(".", "/")
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _all_of(face: str) -> set[str]:
    """What a face offers: its ``__all__`` (importing a face loads none of its modules)."""
    return set(getattr(importlib.import_module(face), "__all__", ()))


def _stub(face: str) -> dict[str, str]:
    """name -> home module, as the face's stub (``__init__.pyi``) declares them for type checkers."""
    tree = ast.parse((REPO / face.replace(".", "/") / "__init__.pyi").read_text(encoding="utf-8"))
    return {alias.asname or alias.name: node.module for node in tree.body if isinstance(node, ast.ImportFrom)
            for alias in node.names if node.module}


def faces(layer: str) -> list[str]:
    """The family faces of a layer: each package directly under it."""
    return sorted(f"{layer}.{p.parent.name}" for p in (REPO / layer).glob("*/__init__.py"))


def offences(layer: str, root: Path = REPO / "tui") -> list[str]:
    """Every import under ``root`` that reaches into ``layer`` past a face, as ``file:line: why``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root.parent)
        for line, module, names in _imports(path):
            parts = module.split(".")
            if parts[0] != layer:
                continue
            if len(parts) == 1:  # `from workloads import sweep`, `import workloads`: the face by name
                bad = [n for n in names if not _is_package(f"{layer}.{n}")]
                found += [f"{where}:{line}: from {module} import {n}: not a family of {layer}" for n in bad]
                continue
            face = ".".join(parts[:2])
            if len(parts) > 2 or not _is_package(face):
                found.append(f"{where}:{line}: {module}: a module behind the face {face}; import the face")
                continue
            for name in names:
                if _is_module(f"{face}.{name}"):
                    found.append(f"{where}:{line}: from {face} import {name}: a module behind the face; "
                                 f"import what {face}.__all__ offers")
                elif name not in _all_of(face):
                    found.append(f"{where}:{line}: from {face} import {name}: not in {face}.__all__")
    return found


@pytest.mark.parametrize("layer", LAYERS)
def test_the_console_imports_only_family_faces(layer):
    found = offences(layer)
    assert not found, f"tui/ reaches into {layer} past its faces:\n" + "\n".join(found)


FACES = [f for layer in LAYERS for f in faces(layer) if _all_of(f)]


@pytest.fixture(scope="module")
def graph():
    import grimp

    return grimp.build_graph("backends", "workloads")


@pytest.mark.parametrize("face", FACES)
def test_each_face_offers_what_its_stub_declares(face):
    """The stub types exactly what the face offers, each name as the module the stub names has it."""
    assert (REPO / face.replace(".", "/") / "__init__.pyi").is_file(), f"{face} offers names but has no stub"
    module, stub = importlib.import_module(face), _stub(face)
    assert set(stub) == _all_of(face), sorted(set(stub) ^ _all_of(face))
    for name, home in stub.items():
        assert getattr(module, name) is getattr(importlib.import_module(home), name), (name, home)


@pytest.mark.parametrize("face", FACES)
def test_a_face_opens_no_door_upward(face, graph):
    """A face offers its own family's names and a few of lower families (e.g. workloads.sweep's --gpus
    parser, the server's lane ports): never a name of a family that itself depends on this one."""
    outside = {home for home in _stub(face).values() if not home.startswith(face + ".")}
    upward = [home for home in sorted(outside)
              if graph.chain_exists(importer=".".join(home.split(".")[:2]), imported=face, as_packages=True)]
    assert not upward, f"{face} offers names of families above it: {upward}"


def test_importing_a_family_loads_none_of_its_modules():
    """The point of lazy faces: a command pays only for the names it uses (``ddtune --help``
    lists the knobs without loading the log parser the knob checks need)."""
    code = ("import sys\n"
            "import backends.knobs, workloads.sweep\n"
            "from backends.knobs import KNOBS\n"
            "print(','.join(sorted(m for m in sys.modules if m.startswith(('backends.', 'workloads.')))))\n")
    out = subprocess.run([sys.executable, "-c", code], env=ddtune_env(), cwd=REPO, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    loaded = set(out.stdout.strip().split(","))
    assert "backends.knobs.plan" in loaded and "workloads.sweep" in loaded
    assert not loaded & {"backends.knobs.verify", "backends.logs.events", "workloads.sweep.engine"}, loaded


def test_the_check_names_what_reaches_past_a_face(tmp_path):
    """The check itself: each way past a face is named, the face's own names are not."""
    console = tmp_path / "tui"
    console.mkdir()
    (console / "screen.py").write_text(
        "import backends.logs.parse\n"
        "from backends.logs import parse, LineSplitter, not_offered\n"
        "from backends.logs.events import DecodeBatch\n"
        "from backends import logs, nothing_here\n"
        "from backends.server.session import ServerSession\n"
        "def later():\n"
        "    from backends.knobs.plan import KNOBS\n")
    found = offences("backends", console)
    assert [f.split(":")[1] for f in found] == ["1", "2", "2", "3", "4", "5", "7"], found
    assert "backends.logs.parse: a module behind the face backends.logs" in found[0]
    assert "from backends.logs import parse: a module behind the face" in found[1]
    assert "from backends.logs import not_offered: not in backends.logs.__all__" in found[2]
    assert "nothing_here: not a family of backends" in found[4]
    assert "backends.knobs.plan" in found[6]
    assert any("backends.server.session: a module behind the face backends.server" in f for f in found)


def used_faces(root: Path = REPO / "tui") -> set[str]:
    """The distinct modules of backends and workloads that ``root`` imports (lazy imports included)."""
    used = set()
    for path in root.rglob("*.py"):
        for _, module, names in _imports(path):
            parts = module.split(".")
            if parts[0] in LAYERS:
                used |= {f"{module}.{n}" for n in names if _is_package(f"{module}.{n}")} if len(parts) == 1 \
                    else {module}
    return used


def test_the_console_uses_at_most_twelve_doors():
    """Issue 23: tui/ imports at most 12 distinct modules of backends/ and workloads/, each a face."""
    used = used_faces()
    assert len(used) <= MOST_FACES, f"{len(used)} doors: {sorted(used)}"
    assert all(_is_package(face) for face in used), sorted(used)


MOST_NAMES = 59  # what the console takes from the faces: 188 before issue 33, which asked for at most 60; a ratchet


def taken_names(root: Path = REPO / "tui") -> set[str]:
    """Every ``face.name`` the console takes: imported by name, or read as an attribute of a face it
    imported as a module (``from workloads import sweep`` then ``sweep.run``): both are the same door."""
    taken: set[str] = set()
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level \
                    and node.module.split(".")[0] in LAYERS:
                for alias in node.names:
                    if _is_package(f"{node.module}.{alias.name}"):
                        aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                    else:
                        taken.add(f"{node.module}.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in LAYERS and alias.asname:
                        aliases[alias.asname] = alias.name
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                taken.add(f"{aliases[node.value.id]}.{node.attr}")
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
                dotted = ast.unparse(node.value)
                if dotted.split(".")[0] in LAYERS and _is_package(dotted):
                    taken.add(f"{dotted}.{node.attr}")
    return taken


def test_the_console_takes_few_names_from_the_faces():
    """Issue 33: the console starts each use case through one call and renders its typed results; what
    it takes from below stays small."""
    taken = taken_names()
    assert len(taken) <= MOST_NAMES, f"{len(taken)} names:\n" + "\n".join(sorted(taken))


def test_the_names_count_reads_every_way_in(tmp_path):
    console = tmp_path / "tui"
    console.mkdir()
    (console / "a.py").write_text("from workloads import sweep\nfrom backends.core import UsageError as U\n"
                                  "import workloads.report as rep\nsweep.run_sweep(); rep.report_text\n")
    assert taken_names(console) == {"workloads.sweep.run_sweep", "backends.core.UsageError",
                                    "workloads.report.report_text"}
