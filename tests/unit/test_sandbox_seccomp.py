"""The seccomp program is built here, byte by byte: each jump must land inside it, forward."""

import struct

import pytest

from workloads.grading.sandbox_seccomp import DENIED, RET_ALLOW, RET_KILL_PROCESS, program


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
