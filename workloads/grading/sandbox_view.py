"""What a namespace sandbox's child sees of the host: an allow-list, worked out once per process.

The child (sandbox_child.py) runs this interpreter on the standard library and nothing else, so its
root holds exactly that, read-only, and no other host path: the interpreter binary; the shared
libraries the dynamic loader maps for it and for the stdlib's extension modules (asked of the
loader itself, ``LD_TRACE_LOADED_OBJECTS``, so each is found in the sandbox under the name the
loader uses on the host), the symlinks on their way (/lib -> usr/lib, libz.so.1 -> libz.so.1.2.13)
and the loader's cache; the folders of ``python -I -S``'s own sys.path (the stdlib and lib-dynload).
A stdlib folder can hold site-packages (pyenv, a python built from source, conda): those, and
whatever else of the grader's import path or of ddtune's own folders lies inside one, are covered
by an empty tmpfs. Not mounted at all: /usr, /etc, /home, the prefix around the stdlib, any venv.
So no way of installing ddtune puts the hidden tests' expected values (presets/problems/coding.toml),
a checkout's .git or any site-packages on a path the child can open: pipx or uv tool from a clone
anywhere (under /usr too), ``pip install -e`` from a checkout, the wheel in site-packages, a checkout
on PYTHONPATH. ``sandbox_isolation`` has bubblewrap build this view.

Extension modules an answer cannot use are not traced, so their libraries stay out: ``_tkinter``
(no display), ``nis`` (no NIS server), ``_curses``, ``_curses_panel`` and ``readline`` (no terminal),
``_ssl`` (no network to speak TLS to), ``_crypt`` (Unix password hashing, gone in Python 3.13) and
``_uuid`` (``uuid`` works without it). Each library is one more bind mount per graded answer (about
0.2 ms of CPU under bwrap).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import secrets
import site
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from backends.core import package_dirs, problems_file

CANARY_PREFIX = ".ddtune-canary-"
UNUSED_MODULES = frozenset({"_tkinter", "nis", "_curses", "_curses_panel", "readline", "_ssl", "_crypt", "_uuid"})
LOADER_CACHE = "/etc/ld.so.cache"
PACKAGES_NAMES = ("site-packages", "dist-packages")
MAX_LINKS = 40  # symlinks followed on one path, as the kernel's limit
# what the child's own interpreter puts on its sys.path, and the extension modules found there
_ASK = ("import importlib.machinery as m, json, os, sys\n"
        "mods = [os.path.join(d, f) for d in sys.path if os.path.isdir(d) for f in sorted(os.listdir(d))\n"
        "        if f.endswith(tuple(m.EXTENSION_SUFFIXES))]\n"
        "print(json.dumps({'path': sys.path, 'modules': mods}))\n")
_TRACED = re.compile(r"^\s*(?:\S+ => )?(/\S+) \(0x[0-9a-f]+\)$", re.M)


@dataclass(frozen=True)
class View:
    """The sandbox's filesystem, in the order it is built: ``parents`` (folders, outermost first),
    read-only binds of whole ``dirs`` and single ``files`` (host path = sandbox path), ``links``
    (target, path) recreated as on the host, then empty read-only tmpfs ``covers`` inside the dirs."""

    parents: tuple[str, ...]
    dirs: tuple[str, ...]
    files: tuple[str, ...]
    links: tuple[tuple[str, str], ...]
    covers: tuple[str, ...]

    def sources(self) -> tuple[str, ...]:
        """The host paths the view reads: whatever hides them while it is built hides them from the child."""
        return self.dirs + self.files


def resolve(path: str) -> tuple[list[tuple[str, str]], str]:
    """The symlinks met on the way to ``path`` ((target, link) with a real parent) and the real path
    it ends at, so that recreating the links and binding the real path makes ``path`` work inside.
    Raises OSError past MAX_LINKS links (a loop)."""
    links: list[tuple[str, str]] = []
    todo = [part for part in path.split("/") if part]
    done = "/"
    while todo:
        part = todo.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            done = os.path.dirname(done)
            continue
        here = os.path.join(done, part)
        if not os.path.islink(here):
            done = here
            continue
        if len(links) >= MAX_LINKS:
            raise OSError(f"too many symlinks on the way to {path}")
        target = os.readlink(here)
        links.append((target, here))
        if target.startswith("/"):
            done = "/"
        todo = [p for p in target.split("/") if p] + todo
    return links, done


def _child_paths(exe: str) -> tuple[list[str], list[str]]:
    """``python -I -S``'s sys.path, in an empty environment as the child runs, and the extension
    modules on it an answer can use."""
    try:
        done = subprocess.run([exe, "-I", "-S", "-c", _ASK], env={}, capture_output=True, timeout=30,
                              stdin=subprocess.DEVNULL, cwd="/")
        found = json.loads(done.stdout)
    except (subprocess.SubprocessError, ValueError) as exc:
        raise OSError(f"{exe} -I -S does not say what it needs: {exc}") from None
    modules = [m for m in found["modules"] if os.path.basename(m).split(".")[0] not in UNUSED_MODULES]
    return [str(p) for p in found["path"]], [str(m) for m in modules]


def _libraries(program: list[str], preload: list[str]) -> list[str]:
    """The objects the dynamic loader maps for ``program`` with ``preload`` loaded too, as the paths it
    opens them by (ldd's own method: the loader lists them and exits without running the program)."""
    env = {"LD_TRACE_LOADED_OBJECTS": "1"}
    usable = [p for p in preload if not any(c in p for c in " :\t\n")]  # LD_PRELOAD's separators
    if usable:
        env["LD_PRELOAD"] = " ".join(usable)
    try:
        done = subprocess.run(program, env=env, capture_output=True, timeout=30, stdin=subprocess.DEVNULL, cwd="/")
    except subprocess.SubprocessError as exc:
        raise OSError(f"the dynamic loader does not list what {program[0]} needs: {exc}") from None
    return _TRACED.findall(done.stdout.decode("utf-8", "replace"))


def _inside(path: str, folders: list[str] | tuple[str, ...]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in folders)


def _covers(dirs: list[str], kept: list[str]) -> list[str]:
    """Folders inside the bound ``dirs`` the child must not see: their site-packages, and whatever of
    the grader's import path, its site folders and ddtune's package folders (and the folder above
    each: a checkout's .git, the site-packages a wheel went to) lies inside one. Never a folder
    that holds something of the view (``kept``)."""
    wanted = [os.path.join(d, name) for d in dirs for name in PACKAGES_NAMES]
    wanted += sys.path + site.getsitepackages() + site.getsitepackages([sys.base_prefix, sys.base_exec_prefix])
    wanted += [site.getusersitepackages()]
    for pkg in package_dirs():
        wanted += [str(pkg), str(pkg.parent), str(pkg.parent / ".git")]
    found = set()
    for path in wanted:
        real = os.path.realpath(path or ".")  # "" on sys.path: the working folder
        if not os.path.isdir(real) or real in dirs or not _inside(real, dirs):
            continue
        if not any(_inside(k, [real]) for k in kept):
            found.add(real)
    return sorted(c for c in found if not _inside(c, [o for o in found if o != c]))  # one cover over nested ones


def _parents(paths: list[str]) -> list[str]:
    """Every folder above ``paths``, outermost first."""
    found: set[str] = set()
    for path in paths:
        parent = os.path.dirname(path)
        while parent not in ("/", ""):
            found.add(parent)
            parent = os.path.dirname(parent)
    return sorted(found, key=lambda p: (p.count("/"), p))


@functools.cache
def view(exe: str, programs: tuple[str, ...] = ()) -> View:
    """The child's view for interpreter ``exe`` (a real path), plus ``programs`` the sandbox runs before
    it (setpriv, for a root grader under bwrap) with their libraries. Raises OSError where the
    interpreter or the loader cannot say what it needs."""
    path, modules = _child_paths(exe)
    needed = [exe, *_libraries([exe, "-I", "-S", "-c", "pass"], modules), *path]
    for program in programs:
        needed += [program, *_libraries([program], [])]
    if os.path.exists(LOADER_CACHE):
        needed.append(LOADER_CACHE)
    links: dict[str, str] = {}
    dirs: set[str] = set()
    files: set[str] = set()
    for wanted in needed:
        chain, real = resolve(wanted)
        links.update((link, target) for target, link in chain)
        if os.path.isdir(real) and wanted in path:
            dirs.add(real)
        elif os.path.isfile(real):
            files.add(real)
    kept = sorted(dirs | files)  # what a cover must never hide
    bound = sorted(d for d in dirs if not _inside(d, [o for o in dirs if o != d]))  # lib-dynload: in the stdlib
    files = {f for f in files if not _inside(f, bound)}
    link_list = [(target, link) for link, target in sorted(links.items()) if not _inside(link, bound)]
    return View(parents=tuple(_parents(bound + sorted(files) + [link for _, link in link_list])),
                dirs=tuple(bound), files=tuple(sorted(files)), links=tuple(link_list),
                covers=tuple(_covers(bound, kept)))


def guarded() -> list[str]:
    """What no namespace sandbox's child may find: the hidden tests' expected values, a file of each of
    ddtune's packages (a covered folder is there, empty) and a checkout's .git above them (its history
    holds the same values)."""
    found = [str(problems_file())]
    for pkg in package_dirs():
        found += [str(pkg / "__init__.py")] + ([str(pkg.parent / ".git" / "HEAD")] if (pkg.parent / ".git").is_dir()
                                               else [])
    return list(dict.fromkeys(found))


@contextlib.contextmanager
def canaries() -> Iterator[tuple[list[str], list[str]]]:
    """Canary files beside the hidden tests' file and beside each of ddtune's package folders (in the
    checkout, or the site-packages it was installed to), readable by anyone as the real files are,
    removed afterwards: ``ddtune doctor`` asks a child to find them. Yields (the canaries placed, the
    folders where none could be placed and why)."""
    folders = dict.fromkeys([problems_file().parent] + [pkg.parent for pkg in package_dirs()])
    placed: list[str] = []
    refused: list[str] = []
    try:
        for folder in folders:
            canary = folder / f"{CANARY_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
            try:
                fd = os.open(canary, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o644)
            except OSError as exc:
                refused.append(f"{folder} ({exc.strerror})")
                continue
            placed.append(str(canary))
            try:
                os.fchmod(fd, 0o644)  # past ddtune's private umask: as readable as coding.toml
                os.write(fd, b"ddtune canary: a graded answer must never read this\n")
            finally:
                os.close(fd)
        yield placed, refused
    finally:
        for path in placed:
            with contextlib.suppress(OSError):
                os.remove(path)
