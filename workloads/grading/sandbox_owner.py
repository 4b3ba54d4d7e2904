"""Which grader made what a grader leaves on the host: an answer's cgroup.

Names carry ``<pid namespace>-<pid>-<token>``. A pid alone repeats across PID namespaces: a grader
in a container and one on the host can both be pid 7, and one took the other's fresh cgroups for
a dead grader's and removed them (10 of 60 correct answers graded ``error``). So a grader removes
what it made, and of the rest only what it can prove stale: made in its own PID namespace (the
same namespace inode) by a pid that no longer exists there. What another namespace made, it never
touches; that pid means nothing here. The token, random per process, keeps names apart even where
the namespace inode and the pid repeat.
"""

from __future__ import annotations

import os
import re
import secrets

PATTERN = r"(\d+)-(\d+)-[0-9a-f]{8}"  # namespace inode, pid, token
_tokens: dict[int, str] = {}


def namespace() -> int:
    """The inode of this process's PID namespace (0 where /proc cannot say)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def tag() -> str:
    """``<pid namespace>-<pid>-<token>`` of this process (a forked child gets its own token)."""
    pid = os.getpid()
    if pid not in _tokens:
        _tokens[pid] = secrets.token_hex(4)
    return f"{namespace()}-{pid}-{_tokens[pid]}"


def stale(name: str, prefix: str) -> bool:
    """``name`` (``prefix`` + a tag + anything) was made by a grader of this PID namespace that is gone."""
    match = re.match(re.escape(prefix) + PATTERN, name)
    if match is None or int(match.group(1)) == 0 or int(match.group(1)) != namespace():
        return False
    try:
        pidfd = os.pidfd_open(int(match.group(2)))  # a pid of this namespace; no signal is sent
    except ProcessLookupError:
        return True
    except OSError:
        return False  # cannot tell: leave it
    os.close(pidfd)
    return False
