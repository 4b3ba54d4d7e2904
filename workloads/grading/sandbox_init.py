"""The unshare sandbox's setup: build the answer's root and drop every privilege, in the process
that then runs the sandbox child.

Runs as ``python -I -S -u -c <this source + a main(...) call> N``, pid 2 of fresh mount, PID, network,
IPC and UTS namespaces (``unshare``; inside a user namespace when ddtune is not root) whose pid 1 is
a shell that only waits for it (so the answer is never an unkillable pid 1). It makes the root that
bubblewrap makes, with mount(2) and pivot_root(2) through ctypes: a tmpfs holding the allow-list of
sandbox_view.py (read-only binds of the interpreter, its libraries and its stdlib folders, the
symlinks on their way, empty read-only tmpfs over any site-packages inside), four /dev nodes, a
fresh /proc with /proc/sys read-only, a sized /tmp. Then it drops every privilege as ``setpriv`` would (the
bounding and ambient sets, a fresh uid and gid as root, every capability set emptied, no_new_privs),
checks in /proc/self/status that all of it holds, and runs the sandbox child read from stdin, as
``CHILD_BOOT`` does.

One interpreter per answer and no other process but the waiting shell, where a shell script ran some
twenty-five mount/mkdir/touch/ln processes and setpriv first (about a third of an answer's cost).
Imported by nothing: ``sandbox_isolation.init_code`` reads this file as text. A failed step prints
one line on stderr and exits 125, before any answer code runs.
"""

import ctypes
import marshal
import os
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
ST_KEPT = 1 | 2 | 4 | 8 | 1024 | 2048 | 4096  # ro, nosuid, nodev, noexec, noatime, nodiratime, relatime
MNT_DETACH = 2
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 38, 47, 4
CAPS_V3 = 0x20080522  # _LINUX_CAPABILITY_VERSION_3: two 32-bit words per set
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}  # the syscall's number by machine (glibc has no wrapper);
# elsewhere util-linux's pivot_root program makes the call

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
libc.capset.argtypes = [ctypes.c_void_p, ctypes.c_void_p]


def fail(step: str) -> None:
    err = ctypes.get_errno()
    sys.stderr.write(f"sandbox setup: {step}: {os.strerror(err)}\n")
    sys.exit(125)


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    if libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), flags,
                  data and data.encode()) != 0:
        fail(f"mount {target}")


def bind_read_only(source: str, target: str) -> None:
    """A read-only bind. The remount keeps the flags the source already has: inside a user namespace
    the kernel refuses to clear a flag the outer mount locked (nosuid, nodev, noexec, atime)."""
    mount(source, target, None, MS_BIND)
    kept = os.statvfs(target).f_flag & ST_KEPT
    mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | kept)


def run(argv: list[str]) -> int:
    """Fork and exec ``argv`` (searched on PATH); its wait status."""
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            sys.stderr.write(f"sandbox setup: {argv[0]}: {exc.strerror}\n")
        finally:
            os._exit(127)
    return os.waitpid(pid, 0)[1]


def pivot() -> None:
    """pivot_root(".", "old"): the new root becomes / of every process here, this one included."""
    nr = PIVOT_ROOT.get(os.uname().machine)
    if nr is not None:
        if libc.syscall(ctypes.c_long(nr), ctypes.c_char_p(b"."), ctypes.c_char_p(b"old")) != 0:
            fail("pivot_root")
    elif run(["pivot_root", ".", "old"]) != 0:
        sys.exit(125)


STAGES = ("/tmp", "/mnt", "/media", "/srv", "/opt", "/var/tmp", "/run", "/home")


def stage(sources: list[str]) -> str:
    """Where the new root is assembled: a folder of this mount namespace above none of the paths bound
    into it (the tmpfs mounted there hides what is below, and a source under /tmp must stay reachable)."""
    for path in STAGES:
        if os.path.isdir(path) and not os.path.islink(path) and \
                not any(source == path or source.startswith(path + "/") for source in sources):
            return path
    sys.stderr.write(f"sandbox setup: no folder to build the root in: each of {', '.join(STAGES)} holds a source\n")
    sys.exit(125)


def build(tmpfs_bytes: int, parents: list[str], sources: list[str], links: list[tuple[str, str]],
          covers: list[str]) -> None:
    """The view of sandbox_view.py: ``parents`` made, ``sources`` (folders and files) bound read-only at
    their own paths, ``links`` recreated, ``covers`` hidden under an empty read-only tmpfs."""
    where = stage(sources)
    mount("tmpfs", where, "tmpfs", MS_NOSUID | MS_NODEV, f"size={tmpfs_bytes},mode=755")
    os.chdir(where)
    for name in ("proc", "dev", "tmp", "old"):
        os.mkdir(name)
    # the answer's /tmp first, so that a source below /tmp is bound over it, not hidden under it
    mount("tmpfs", "tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={tmpfs_bytes},mode=1777")
    for parent in parents:
        os.makedirs("." + parent, mode=0o755, exist_ok=True)
    for source in sources:
        if os.path.isdir(source):
            os.makedirs("." + source, exist_ok=True)
        else:
            os.close(os.open("." + source, os.O_CREAT | os.O_WRONLY, 0o644))
        bind_read_only(source, "." + source)
    for target, link in links:
        os.symlink(target, "." + link)
    for path in covers:
        mount("tmpfs", "." + path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k")
    for node in ("null", "zero", "random", "urandom"):
        os.close(os.open(f"dev/{node}", os.O_CREAT | os.O_WRONLY, 0o644))
        mount(f"/dev/{node}", f"dev/{node}", None, MS_BIND)
    mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    bind_read_only("proc/sys", "proc/sys")
    pivot()
    os.chdir("/")
    if libc.umount2(b"/old", MNT_DETACH) != 0:
        fail("umount /old")
    os.rmdir("/old")
    mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chdir("/tmp")


def prctl(option: int, arg: int, arg3: int = 0) -> int:
    return libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg), ctypes.c_ulong(arg3), ctypes.c_ulong(0),
                      ctypes.c_ulong(0))


def drop(uid: int | None) -> None:
    """What ``setpriv [--reuid U --regid U --clear-groups] --no-new-privs --inh-caps=-all
    --bounding-set=-all`` does, then a check that it held: no capability in any set, no way to gain
    one, and (as root) ``uid`` for every user and group id with no supplementary group."""
    with open("/proc/sys/kernel/cap_last_cap") as fh:
        last = int(fh.read())
    for cap in range(last + 1):  # while CAP_SETPCAP is still held
        if prctl(PR_CAPBSET_DROP, cap) != 0:
            fail(f"drop capability {cap} from the bounding set")
    if prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL) != 0:
        fail("clear the ambient set")
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # leaving uid 0 empties the permitted and effective sets
    header, sets = (ctypes.c_uint32 * 2)(CAPS_V3, 0), (ctypes.c_uint32 * 6)()
    if libc.capset(header, sets) != 0:  # and the inheritable one
        fail("empty the capability sets")
    if prctl(PR_SET_NO_NEW_PRIVS, 1) != 0:
        fail("set no_new_privs")
    with open("/proc/self/status") as fh:
        status = dict(line.split(":", 1) for line in fh.read().splitlines() if ":" in line)
    wrong = [key for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb") if int(status[key], 16) != 0]
    wrong += [] if status["NoNewPrivs"].strip() == "1" else ["NoNewPrivs"]
    if uid is not None:
        ids = {str(uid)}
        wrong += [key for key in ("Uid", "Gid") if set(status[key].split()) != ids]
        wrong += ["Groups"] if status["Groups"].split() else []
    if wrong:
        sys.stderr.write(f"sandbox setup: privileges still held after the drop: {', '.join(wrong)}\n")
        os._exit(125)


def main(tmpfs_bytes: int, parents: list[str], sources: list[str], links: list[tuple[str, str]],
         covers: list[str], uid: int | None) -> None:
    try:
        build(tmpfs_bytes, parents, sources, links, covers)
        drop(uid)
        os.environ.clear()  # as ``env -i``: the answer sees no variable of ddtune's
        code = marshal.loads(sys.stdin.buffer.read(int(sys.argv.pop(1))))
    except (OSError, ValueError, EOFError) as exc:
        sys.stderr.write(f"sandbox setup: {exc}\n")
        os._exit(125)
    exec(code, {"__name__": "__main__", "__builtins__": __builtins__})  # the sandbox child, as CHILD_BOOT runs it
