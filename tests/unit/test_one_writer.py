"""One way to write a file (issue 28, issue 33 item 3): backends/core/writes.py (with the state dir's
half, backends/core/statefs.py, built on it) is the only product code that opens, creates, replaces or
renames a file; everything else asks it. This test reads the product code (ast) for every other way:
open()/os.fdopen()/Path.open() with a writing mode, Path.write_text/write_bytes, os.open with a
writing flag, os.replace/rename, Path.replace/rename, shutil copies and moves, tempfile's named
files, os.link/symlink/truncate/ftruncate. What remains is the allow-list below, each entry with its
reason; a new way of writing fails here with its file, function and line."""

from __future__ import annotations

import ast
import functools

from tests.helpers import REPO

PACKAGES = ("backends", "workloads", "tui", "presets")
WRITERS = {"backends/core/writes.py", "backends/core/statefs.py"}  # the one writer and its state-dir rules

# (file, enclosing function, what): why it may write there
ALLOWED = {
    # wraps the fd writes.open_append (under statefs.STATE) made O_EXCL|O_NOFOLLOW: the server's log
    ("backends/launch/process.py", "spawn", "open(mode)"): "an fd from writes.open_append",
    # the flock'd lock file: rewritten in place on the fd statefs.open_state opened and checked; its
    # readers take the lock first, so nobody sees it half-written
    ("backends/record/lock.py", "__aenter__", "os.ftruncate"): "the lock holder's note, under the lock",
    ("backends/record/lock.py", "__aexit__", "os.ftruncate"): "the lock holder's note, under the lock",
    # runs in the server's own interpreter (torch, no ddtune importable), into the fresh private temp
    # folder the selftest made for its tiny models
    ("backends/selftest/tinymodels/build_tiny.py", "write_json", "open(mode)"): "another interpreter",
    # REPORTED to the lead: sets server.json aside under a timestamped name with os.replace (a rename,
    # in the state dir): belongs in statefs (owned by the server session's engineer this round)
    ("backends/server/record.py", "quarantine_state", "os.replace"): "to move into statefs",
    # the simulator (a stand-in for SGLang, not ddtune) logs the requests it served when asked to
    ("backends/sim/completions.py", "received", "open(mode)"): "the simulator's own log",
    # the grading sandbox: cgroup control files (the kernel's interface, not files on a disk) ...
    ("workloads/grading/sandbox_cgroup.py", "_cap", "open(mode)"): "cgroup control files",
    ("workloads/grading/sandbox_cgroup.py", "_write", "open(mode)"): "cgroup control files",
    # ... its init, building the child's root on a fresh tmpfs inside its own mount namespace ...
    # ... and the canaries `ddtune doctor` places for a moment (O_EXCL|O_NOFOLLOW) to prove them hidden
    ("workloads/grading/sandbox_view.py", "canaries", "os.open(write)"): "doctor's canaries",
    # the run's append-only records: the fd writes.open_append made and checked
    ("workloads/runs/store.py", "_heal_tail", "os.fdopen(mode)"): "an fd from writes.open_append",
    ("workloads/runs/store.py", "append_response", "os.fdopen(mode)"): "an fd from writes.open_append",
    # the load worker's stdout (a pipe to the console), dup'd to write its messages line by line
    ("workloads/live/worker.py", "main", "os.fdopen(mode)"): "its own stdout",
    # a reader of stdout went away: stdout is pointed at /dev/null (Python's advice for SIGPIPE)
    ("tui/cli.py", "main", "os.open(write)"): "/dev/null",
}

_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC")


def _writes_mode(mode: ast.expr | None) -> bool:
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return bool(set(mode.value) & set("wax+"))
    return True  # a mode computed at run time: say why in the allow-list


def _mode(call: ast.Call, position: int) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == "mode":
            return kw.value
    return call.args[position] if len(call.args) > position else None


def what_writes(call: ast.Call) -> str | None:
    """The kind of write ``call`` is, or None."""
    func = call.func
    if isinstance(func, ast.Name):
        return "open(mode)" if func.id == "open" and _writes_mode(_mode(call, 1)) else None
    if not isinstance(func, ast.Attribute):
        return None
    base, name = ast.unparse(func.value), func.attr
    if base == "os":
        if name == "open":
            flags = ast.unparse(call.args[1]) if len(call.args) > 1 else ""
            return "os.open(write)" if any(flag in flags for flag in _WRITE_FLAGS) else None
        if name == "fdopen":
            return "os.fdopen(mode)" if _writes_mode(_mode(call, 1)) else None
        if name in ("replace", "rename", "renames", "link", "symlink", "truncate", "ftruncate", "mkfifo"):
            return f"os.{name}"
        return None
    if base in ("io", "builtins") and name == "open":
        return "open(mode)" if _writes_mode(_mode(call, 1)) else None
    if base == "shutil" and name in ("copy", "copy2", "copyfile", "copytree", "copyfileobj", "move"):
        return f"shutil.{name}"
    if base == "tempfile" and name in ("NamedTemporaryFile", "TemporaryFile", "SpooledTemporaryFile", "mkstemp"):
        return f"tempfile.{name}"
    if name in ("write_text", "write_bytes"):
        return f"Path.{name}"
    if name == "open" and call.args and isinstance(call.args[0], ast.Constant) and _writes_mode(call.args[0]):
        return "Path.open(mode)"
    # Path.replace(target) and Path.rename(target) take one argument; str.replace takes two
    if name in ("replace", "rename") and len(call.args) == 1 and not call.keywords and base != "dataclasses":
        return f"Path.{name}"
    return None


@functools.cache
def found_writes() -> tuple[tuple[str, str, str, int], ...]:
    """(file, enclosing function, kind, line) for every write outside the one writer."""
    found = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if rel in WRITERS:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), rel)
            for func in [tree, *[n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]]:
                name = getattr(func, "name", "<module>")
                for node in _own_nodes(func):
                    if isinstance(node, ast.Call) and (kind := what_writes(node)):
                        found.append((rel, name, kind, node.lineno))
    return tuple(found)


def _own_nodes(scope: ast.AST):
    """The nodes of ``scope`` outside the functions defined in it (each is its own scope)."""
    for child in ast.iter_child_nodes(scope):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        yield child
        yield from _own_nodes(child)


def test_nothing_but_the_one_writer_writes_a_file():
    stray = [f"{rel}:{line} in {name}(): {kind}" for rel, name, kind, line in found_writes()
             if (rel, name, kind) not in ALLOWED]
    assert not stray, ("write through backends.core.writes (write_atomic, open_append, append_text) instead, "
                       "or add the call to ALLOWED with its reason:\n" + "\n".join(stray))


def test_every_allowed_write_still_exists():
    """An entry whose code went away leaves the list: the allow-list says what is there today."""
    present = {(rel, name, kind) for rel, name, kind, _ in found_writes()}
    assert not set(ALLOWED) - present, sorted(set(ALLOWED) - present)


def test_the_scan_sees_each_way_of_writing():
    """The scan itself: each way named in the docstring is found, reading and str.replace are not."""
    source = """
def f(p, fd, s):
    open(p, "w"); open(p, mode="a"); p.open("x"); p.write_text(s); p.write_bytes(b""); os.fdopen(fd, "w")
    os.open(p, os.O_WRONLY | os.O_CREAT); os.replace(p, s); os.rename(p, s); p.rename(s); p.replace(s)
    shutil.copyfile(p, s); shutil.move(p, s); tempfile.NamedTemporaryFile(); tempfile.mkstemp()
    os.symlink(p, s); os.truncate(p, 0); os.ftruncate(fd, 0); io.open(p, "wb")
    open(p); open(p, "rb"); p.open(); os.open(p, os.O_RDONLY); s.replace("a", "b"); os.fdopen(fd, "rb")
"""
    kinds = [what_writes(node) for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)]
    assert len([k for k in kinds if k]) == 19, kinds
