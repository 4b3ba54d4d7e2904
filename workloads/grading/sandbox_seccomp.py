"""The grading sandbox's seccomp filter, as a classic BPF program built here and installed by bwrap
(``--seccomp``, from ``filter_fd``'s pipe) just before it runs the child, so it holds from the
interpreter's first instruction; the child checks that it holds before the answer runs.

It is a deny list, the field's usual shape for an interpreter that must keep working: everything an
answer could use to leave or widen its sandbox fails with EPERM: new namespaces (``unshare``,
``setns``, ``clone`` with any ``CLONE_NEW*`` flag; ``clone3``, whose flags sit in memory a filter
cannot read, fails with ENOSYS so the C library falls back to ``clone``), mounts of every kind,
``chroot``/``pivot_root``, ``ptrace`` and cross-process memory, the kernel keyring, ``bpf``,
``perf_event_open``, ``userfaultfd``, ``io_uring``, modules, kexec, ``open_by_handle_at`` (the classic
container escape), host clocks and names, and SysV/POSIX shared memory and message queues (memory that
outlives every process and escapes per-process limits). Sockets are allowed in three families only
(unix, IPv4, IPv6): ``socket``/``socketpair`` of any other (``AF_VSOCK``, ``AF_NETLINK``, ``AF_PACKET``,
...) fails with EAFNOSUPPORT, as on a kernel without that family. A syscall of another ABI (x32, or
a foreign architecture) kills the process. Only x86_64 and aarch64 are known; elsewhere ``program()`` returns
None and ``ddtune doctor`` says the filter is missing.
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import struct
from collections.abc import Iterator

# classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h)
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
EPERM = 1
ENOSYS = 38
EAFNOSUPPORT = 97  # the same number on x86_64 and aarch64
# seccomp_data offsets: nr, arch, instruction pointer, then six 64-bit arguments
_NR, _ARCH, _ARG0_LOW = 0, 4, 16

CLONE_NEW_FLAGS = (0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000
                   | 0x40000000 | 0x00000080)  # NEWNS CGROUP UTS IPC USER PID NET TIME

# name -> (x86_64, aarch64) syscall numbers
DENIED: dict[str, tuple[int, int]] = {
    "unshare": (272, 97), "setns": (308, 268), "mount": (165, 40), "umount2": (166, 39),
    "pivot_root": (155, 41), "chroot": (161, 51), "open_tree": (428, 428), "move_mount": (429, 429),
    "fsopen": (430, 430), "fsconfig": (431, 431), "fsmount": (432, 432), "fspick": (433, 433),
    "mount_setattr": (442, 442), "ptrace": (101, 117), "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271), "pidfd_getfd": (438, 438), "process_madvise": (440, 440),
    "keyctl": (250, 219), "add_key": (248, 217), "request_key": (249, 218), "bpf": (321, 280),
    "perf_event_open": (298, 241), "userfaultfd": (323, 282), "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426), "io_uring_register": (427, 427), "init_module": (175, 105),
    "finit_module": (313, 273), "delete_module": (176, 106), "kexec_load": (246, 104),
    "kexec_file_load": (320, 294), "open_by_handle_at": (304, 265), "name_to_handle_at": (303, 264),
    "fanotify_init": (300, 262), "acct": (163, 89), "swapon": (167, 224), "swapoff": (168, 225),
    "reboot": (169, 142), "sethostname": (170, 161), "setdomainname": (171, 162), "syslog": (103, 116),
    "quotactl": (179, 60), "settimeofday": (164, 170), "clock_settime": (227, 112),
    "clock_adjtime": (305, 266), "adjtimex": (159, 171), "personality": (135, 92), "vhangup": (153, 58),
    "shmget": (29, 194), "msgget": (68, 186), "semget": (64, 190), "mq_open": (240, 180),
    "memfd_create": (319, 279), "memfd_secret": (447, 447), "move_pages": (279, 239),
    "migrate_pages": (256, 238), "mbind": (237, 235), "set_mempolicy": (238, 237),
}
_CLONE = {"x86_64": 56, "aarch64": 220}
_SOCKET = {"socket": (41, 198), "socketpair": (53, 199)}
# The only address families a socket may have: local sockets (Python's own socketpair, asyncio's
# self-pipe) and IP (the network namespace holds only its own loopback). Every other family is kernel
# surface no answer needs: AF_VSOCK reaches the hypervisor and other VMs past the network namespace,
# AF_NETLINK the kernel's configuration interfaces, AF_PACKET raw frames; AF_ALG, AF_KEY, AF_XDP ...
SOCKET_FAMILIES = {"AF_UNIX": 1, "AF_INET": 2, "AF_INET6": 10}
_CLONE3 = 435
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_BIT = 0x40000000


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def machine() -> str:
    name = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(name, name)


@functools.cache
def program(arch: str | None = None) -> bytes | None:
    """The filter as ``struct sock_filter[]`` bytes for ``arch`` (this machine by default), or None
    where the syscall table is not known here."""
    arch = arch or machine()
    if arch not in _AUDIT_ARCH:
        return None
    column = 0 if arch == "x86_64" else 1
    denied = sorted({numbers[column] for numbers in DENIED.values()})
    families = sorted(SOCKET_FAMILIES.values())
    # layout (classic BPF jumps only forward): arch check, load nr, (x86_64: x32 check), one test
    # per denied nr, clone, clone3, socket, socketpair, allow; clone's flag test; the family tests;
    # then the shared returns
    n_head = 4 if arch == "x86_64" else 3
    clone_at = n_head + len(denied) + 5
    socket_at = clone_at + 3
    allow_at = socket_at + 1 + len(families) + 1
    deny_at, enosys_at, kill_at = allow_at + 1, allow_at + 2, allow_at + 3

    def jump(target: int) -> int:  # from the instruction about to be appended
        return target - len(out) - 1

    out: list[bytes] = [_insn(_LD_W_ABS, 0, 0, _ARCH)]
    out.append(_insn(_JEQ_K, 0, jump(kill_at), _AUDIT_ARCH[arch]))
    out.append(_insn(_LD_W_ABS, 0, 0, _NR))
    if arch == "x86_64":
        out.append(_insn(_JGE_K, jump(kill_at), 0, _X32_BIT))
    for nr in denied:
        out.append(_insn(_JEQ_K, jump(deny_at), 0, nr))
    out.append(_insn(_JEQ_K, jump(clone_at), 0, _CLONE[arch]))
    out.append(_insn(_JEQ_K, jump(enosys_at), 0, _CLONE3))
    for name in ("socket", "socketpair"):
        out.append(_insn(_JEQ_K, jump(socket_at), 0, _SOCKET[name][column]))
    out.append(_insn(_RET_K, 0, 0, RET_ALLOW))
    assert len(out) == clone_at  # clone: flags are its first argument (low word); any CLONE_NEW* is refused
    out.append(_insn(_LD_W_ABS, 0, 0, _ARG0_LOW))
    out.append(_insn(_JSET_K, jump(deny_at), 0, CLONE_NEW_FLAGS))
    out.append(_insn(_RET_K, 0, 0, RET_ALLOW))
    assert len(out) == socket_at  # socket, socketpair: the family is the first argument, an int
    out.append(_insn(_LD_W_ABS, 0, 0, _ARG0_LOW))
    for family in families:
        out.append(_insn(_JEQ_K, jump(allow_at), 0, family))
    out.append(_insn(_RET_K, 0, 0, RET_ERRNO | EAFNOSUPPORT))
    assert len(out) == allow_at
    out += [_insn(_RET_K, 0, 0, RET_ALLOW), _insn(_RET_K, 0, 0, RET_ERRNO | EPERM),
            _insn(_RET_K, 0, 0, RET_ERRNO | ENOSYS), _insn(_RET_K, 0, 0, RET_KILL_PROCESS)]
    return b"".join(out)


@contextlib.contextmanager
def filter_fd() -> Iterator[int | None]:
    """The read end of a pipe that holds the seccomp filter, for bwrap to install (``--seccomp``)
    just before it runs the command. None where there is no filter for this machine."""
    filter_program = program()
    if filter_program is None:
        yield None
        return
    read, write = os.pipe()
    try:
        os.write(write, filter_program)  # a few hundred bytes: well within a pipe's buffer
        os.close(write)
        write = -1
        yield read
    finally:
        if write >= 0:
            os.close(write)
        os.close(read)

