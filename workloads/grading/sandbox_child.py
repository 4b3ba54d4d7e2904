"""The code that runs inside the grading sandbox; the parent compiles this file once and sends it
at the head of the child's stdin, which ``python -I -S -c CHILD_BOOT`` reads and runs
(workloads/grading/sandbox_isolation.py).

It only computes. It reads the task (the answer's code, the function name, the left-hand sides of
the hidden tests, limits) from stdin, in ``marshal`` form, runs the answer, evaluates each left-hand
side and writes one JSON line per result to the results pipe (the fd number in argv[1]): a JSON
array, never an object, in the form workloads/grading/sandbox_wire.py reads. It never sees the expected
values and never decides a verdict: the parent compares (workloads/grading/checks.py). Everything here can
be undone by the answer, which runs in this process; that is fine, because the worst a lying child
can send is a wrong value, and a wrong value is a ``fail``.

Standalone on purpose: it imports only the standard library, because inside a namespace sandbox
neither ddtune nor site-packages is mounted. And little of it: this runs once per graded answer, and
``import json`` alone (its ``re`` and ``enum``) cost about as much CPU as the rest of the
interpreter's start. The task comes as ``marshal`` (built in; the trusted side made it, so decoding
it here is safe) and the results go out through ``dumps`` below, json's own C string escaper
without the module around it; the trusted side still reads them with ``json`` (sandbox_judge.py).
"""

import marshal
import os
import resource
import sys

try:  # json's C escaper, as json.dumps uses it, without json's imports
    from _json import encode_basestring_ascii as quote
except ImportError:  # an interpreter built without json's accelerator
    from json.encoder import py_encode_basestring_ascii as quote

MAX_DEPTH = 100


class NotPlain(Exception):
    pass


def plain(value, depth=0):
    """JSON form of plain data, checked by exact type so a subclass cannot lie through its methods:
    scalars as they are, a list as ["l", *items], a tuple as ["t", *items], a dict as ["d", k1, v1, ...]."""
    kind = type(value)
    if value is None or kind is bool or kind is int or kind is float or kind is str:
        return value
    if depth > MAX_DEPTH:
        raise NotPlain(f"returned data nested deeper than {MAX_DEPTH} levels")
    if kind is list or kind is tuple:
        return ["l" if kind is list else "t", *[plain(item, depth + 1) for item in value]]
    if kind is dict:
        flat = ["d"]
        for k, v in value.items():
            flat += (plain(k, depth + 1), plain(v, depth + 1))
        return flat
    try:
        name = kind.__name__ if type(kind.__name__) is str else "object"
    except BaseException:
        name = "object"
    raise NotPlain(f"returned a {name[:80]}, not plain data")


def dumps(value):
    """``json.dumps(value, separators=(",", ":"))`` for what this sends: records of plain() data, and
    the facts (an object with string keys).
    Raises ValueError where json.dumps does (an int past the str-conversion limit)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    kind = type(value)
    if kind is str:
        return quote(value)
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "Infinity" if value > 0 else "-Infinity"
        return float.__repr__(value)
    if kind is list:
        return "[" + ",".join([dumps(item) for item in value]) + "]"
    if kind is dict:
        return "{" + ",".join([quote(key) + ":" + dumps(item) for key, item in value.items()]) + "}"
    raise TypeError(f"cannot send a {kind.__name__}")


def describe(exc):
    try:
        return f"{type(exc).__name__}: {exc}"[:500]
    except BaseException:
        return "an exception that cannot be described"


def setlimit(which, value, slack=0):
    try:
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY and value + slack > hard:
            value, slack = hard, 0
        resource.setrlimit(which, (value, value + slack))
    except (ValueError, OSError):
        pass


def filtered():
    """A seccomp filter holds this process (bwrap installed it before the interpreter started)."""
    try:
        with open("/proc/self/status") as fh:
            return any(line.split()[:2] == ["Seccomp:", "2"] for line in fh)
    except OSError:
        return False


def filter_state(expected):
    """None when the filter holds; else why not. ``expected``: bwrap was given one (else there is none
    for this machine)."""
    if not expected:
        return "no filter for this machine"
    return None if filtered() else "the sandbox's wrapper installed no filter"


def facts(expected, paths):
    """What the sandbox looks like from inside, for the trusted side's probe (``ddtune doctor``):
    ``visible``, those of ``paths`` (ddtune's own files, canaries) that exist here."""
    with open("/proc/self/status") as fh:
        status = fh.read()
    field = {line.split(":")[0]: line.split(":", 1)[1].strip() for line in status.splitlines() if ":" in line}
    out = {"uid": os.getuid(), "cap_eff": field.get("CapEff", "?"),
           "proc_sys_writable": os.access("/proc/sys/kernel/core_pattern", os.W_OK),
           "root_writable": os.access("/", os.W_OK), "visible": [p for p in paths if os.path.lexists(p)]}
    out["seccomp"] = filter_state(expected)
    print(dumps(out), flush=True)


def main():
    if sys.argv[1] == "facts":
        return facts(sys.argv[2], sys.argv[3:])
    fd = int(sys.argv[1])

    def send(record):
        data = (dumps(record) + "\n").encode()
        while data:
            data = data[os.write(fd, data):]

    def stop(record):
        send(record)
        os._exit(0)

    task = marshal.loads(sys.stdin.buffer.read())
    limits = task["limits"]
    setlimit(resource.RLIMIT_CPU, limits["cpu_s"], 1)  # SIGXCPU at the soft limit
    setlimit(resource.RLIMIT_AS, limits["memory_bytes"])
    setlimit(resource.RLIMIT_FSIZE, limits["file_bytes"])
    setlimit(resource.RLIMIT_NOFILE, limits["open_files"])
    setlimit(resource.RLIMIT_CORE, 0)
    setlimit(resource.RLIMIT_MSGQUEUE, 0)
    if limits.get("nproc"):
        setlimit(resource.RLIMIT_NPROC, limits["nproc"])
    if task["seccomp"]:  # bwrap was given the filter: refuse to run the answer where it does not hold
        why = filter_state(True)
        if why is not None:
            stop(["error", "sandbox: no seccomp filter: " + why])
    try:
        code = compile(task["code"], "<answer>", "exec")
    except BaseException as exc:
        stop(["error", describe(exc)])
    ns = {"__name__": "__answer__"}
    try:
        exec(code, ns)
    except BaseException as exc:
        stop(["error", "while defining the answer: " + describe(exc)])
    if not callable(ns.get(task["function"])):
        stop(["error", f"the answer does not define function {task['function']!r}"])
    send(["defined"])
    for n, call in enumerate(task["calls"], 1):
        try:
            value = eval(compile(call, f"<test {n}>", "eval"), ns)
        except BaseException as exc:
            stop(["raised", describe(exc)])
        try:
            send(["value", plain(value)])
        except NotPlain as exc:
            stop(["unplain", str(exc)])
        except (ValueError, RecursionError) as exc:  # e.g. an int past the str-conversion limit
            stop(["unplain", "returned a value that cannot be sent: " + describe(exc)])
    os._exit(0)


if __name__ == "__main__":
    main()
