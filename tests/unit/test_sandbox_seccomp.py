"""The seccomp program is built here, byte by byte: each jump must land inside it, forward, and it
decides each syscall as it says (run here by a small classic-BPF interpreter, for both machines)."""

import struct

import pytest

from workloads.grading.sandbox_seccomp import (_AUDIT_ARCH, DENIED, EAFNOSUPPORT, RET_ALLOW, RET_ERRNO,
                                              RET_KILL_PROCESS, SOCKET_FAMILIES, program)

AF_KEY, AF_NETLINK, AF_PACKET, AF_BLUETOOTH, AF_ALG, AF_VSOCK, AF_XDP = 15, 16, 17, 31, 38, 40, 44


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_every_jump_lands_forward_inside_the_program_and_it_ends_in_returns(arch):
    code = program(arch)
    assert code is not None and len(code) % 8 == 0
    insns = [struct.unpack("=HBBI", code[i:i + 8]) for i in range(0, len(code), 8)]
    for at, (op, jt, jf, _) in enumerate(insns):
        if op & 0x07 == 0x05:  # a jump
            assert at + 1 + max(jt, jf) < len(insns)
    returns = {k for op, _, _, k in insns if op == 0x06}
    assert {RET_ALLOW, RET_KILL_PROCESS, 0x00050001, 0x00050026} <= returns  # allow, kill, EPERM, ENOSYS


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_each_denied_syscall_number_is_tested(arch):
    column = 0 if arch == "x86_64" else 1
    code = program(arch)
    assert code is not None
    tested = {struct.unpack("=HBBI", code[i:i + 8])[3] for i in range(0, len(code), 8)
              if struct.unpack("=HBBI", code[i:i + 8])[0] == 0x15}
    assert {nums[column] for nums in DENIED.values()} <= tested


def test_an_unknown_architecture_has_no_filter():
    assert program("riscv64") is None


def verdict(arch: str, nr: int, *args: int, audit_arch: int | None = None) -> int:
    """What the filter returns for one syscall: a classic-BPF interpreter for the four instructions
    it uses, over ``struct seccomp_data`` (nr, arch, instruction pointer, six arguments)."""
    code = program(arch)
    assert code is not None
    data = struct.pack("=iIQ6Q", nr, _AUDIT_ARCH[arch] if audit_arch is None else audit_arch, 0,
                       *(list(args) + [0] * 6)[:6])
    insns = [struct.unpack("=HBBI", code[i:i + 8]) for i in range(0, len(code), 8)]
    at, acc = 0, 0
    while True:
        op, jt, jf, k = insns[at]
        if op == 0x20:  # ld w abs
            acc = struct.unpack_from("=I", data, k)[0]
            at += 1
        elif op in (0x15, 0x35, 0x45):  # jeq, jge, jset
            taken = acc == k if op == 0x15 else acc >= k if op == 0x35 else bool(acc & k)
            at += 1 + (jt if taken else jf)
        else:
            assert op == 0x06, f"unexpected instruction {op:#x}"
            return k


SOCKET = {"x86_64": (41, 53), "aarch64": (198, 199)}  # socket, socketpair


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_sockets_only_of_the_unix_and_ip_families(arch):
    refused = RET_ERRNO | EAFNOSUPPORT
    for nr in SOCKET[arch]:
        for family in (AF_VSOCK, AF_NETLINK, AF_PACKET, AF_ALG, AF_KEY, AF_BLUETOOTH, AF_XDP, 0, 0xFFFFFFFF):
            assert verdict(arch, nr, family, 1, 0) == refused, (nr, family)
        for family in SOCKET_FAMILIES.values():
            assert verdict(arch, nr, family, 1, 0) == RET_ALLOW, (nr, family)
        # the kernel reads the family as an int: the high word is not a way around the test
        assert verdict(arch, nr, (1 << 32) | AF_NETLINK, 3, 0) == refused


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_the_rest_of_the_filter_still_decides_as_before(arch):
    column = 0 if arch == "x86_64" else 1
    read_nr = 0 if arch == "x86_64" else 63
    assert verdict(arch, read_nr, 0, 0, 0) == RET_ALLOW
    assert verdict(arch, DENIED["mount"][column]) == RET_ERRNO | 1  # EPERM
    clone = 56 if arch == "x86_64" else 220
    assert verdict(arch, clone, 0x10000000) == RET_ERRNO | 1  # CLONE_NEWUSER
    assert verdict(arch, clone, 17) == RET_ALLOW  # a plain fork
    assert verdict(arch, 435) == RET_ERRNO | 38  # clone3: ENOSYS, the C library falls back to clone
    assert verdict(arch, read_nr, audit_arch=0x40000003) == RET_KILL_PROCESS  # i386 (int 0x80)
    if arch == "x86_64":
        assert verdict(arch, 0x40000000 | read_nr) == RET_KILL_PROCESS  # x32
