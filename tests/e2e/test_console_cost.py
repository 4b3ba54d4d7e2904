"""benchmarks/console_cost.py: real ptys, real process trees. Correctness only (byte counts, pty size,
cleanup, errors); its figures are never asserted beyond "a spinning process used some CPU"."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import time


from benchmarks.console_cost import REFERENCES, PtyProgram, main, measure
from tests.helpers import REPO
from tests.e2e.procs import STUBBORN_TREE, gone

SPIN = "while True: pass"


def drain_until(program: PtyProgram, done, deadline_s: float = 60) -> None:
    deadline = time.monotonic() + deadline_s
    while not done():
        assert time.monotonic() < deadline, f"gave up; last output: {program.tail!r}"
        program.drain(0.1)


def start(code: str, cols: int = 200, rows: int = 50) -> PtyProgram:
    return PtyProgram([sys.executable, "-c", code], cols, rows, dict(os.environ), str(REPO))


def test_counts_every_byte_and_sets_the_pty_size():
    code = ("import os, shutil, time; c, r = shutil.get_terminal_size(); os.write(1, b'x' * 3000);"
            " os.write(1, f'size={c}x{r};'.encode()); time.sleep(600)")
    program = start(code, cols=123, rows=45)
    try:
        drain_until(program, lambda: b"size=" in program.tail and program.tail.endswith(b";"))
    finally:
        program.stop()
    assert program.tail.endswith(b"size=123x45;")
    assert program.bytes == 3000 + len("size=123x45;")


def test_stop_kills_the_group_and_escaped_children():
    program = start(STUBBORN_TREE)
    try:
        drain_until(program, lambda: re.search(rb"pids \d+ \d+ \d+", program.tail) is not None)
        program.sample()  # what measure() does; stop() samples again in any case
    finally:
        program.stop(grace=0.5)  # the tree ignores SIGTERM: the default 5 s grace would only be waited out
    pids = [int(p) for p in re.search(rb"pids (\d+) (\d+) (\d+)", program.tail).groups()]
    assert [pid for pid in pids if not gone(pid)] == []
    assert program.status is not None


def test_measure_reports_cpu_of_the_tree_and_bytes():
    code = (f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {SPIN!r}]);"
            " print('started', flush=True);\nwhile True: pass")
    program = start(code)
    try:
        cost = measure(program, settle=0.3, duration=1.0, rss_every=0.4, size="200x50", report=lambda _: None)
    finally:
        program.stop()
    assert cost.cpu_pct_root > 0
    assert cost.cpu_pct_tree >= cost.cpu_pct_root
    assert cost.processes_end == 2
    assert cost.rss_max >= max(cost.rss_start, cost.rss_end) > 0
    assert len(cost.rss_series) >= 3  # start, at least one periodic sample, end


def test_main_json_and_table(capsys):
    cmd = shlex.join([sys.executable, "-c", "import shutil, time; print(shutil.get_terminal_size()); time.sleep(600)"])
    assert main(["--cmd", cmd, "--settle", "0.2", "--duration", "0.5", "--size", "90x30", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["size"] == "90x30"
    assert doc["command"] == cmd
    assert {"cpu_pct_tree", "bytes_per_s", "rss_start", "rss_end", "rss_max"} <= doc.keys()
    assert main(["--cmd", cmd, "--settle", "0", "--duration", "0.3"]) == 0
    table = capsys.readouterr().out
    assert "% of a core" in table
    for name, _, _ in REFERENCES:
        assert name in table
    assert "nvitop" in table and " 1.0 " in table and "530" in table


def test_program_that_exits_is_a_failed_run(capsys):
    cmd = shlex.join([sys.executable, "-c", "print('fatal: no console here'); raise SystemExit(3)"])
    assert main(["--cmd", cmd, "--settle", "30", "--duration", "1"]) == 1
    err = capsys.readouterr().err
    assert "exited with status 3" in err
    assert "fatal: no console here" in err


def test_bad_arguments_name_the_option(capsys):
    for argv, words in ((["--size", "wide"], "--size 'wide': give COLSxROWS"),
                        (["--env", "NOEQUALS"], "--env 'NOEQUALS': give KEY=VALUE"),
                        (["--duration", "0"], "--duration '0': give a number of seconds above 0")):
        try:
            main(argv)
        except SystemExit as exc:
            assert exc.code == 2
        else:
            raise AssertionError(f"{argv} was accepted")
        assert words in capsys.readouterr().err


def test_rows_counts_the_bytes_written_to_each_screen_row(capsys):
    from benchmarks.console_cost import written_rows

    assert written_rows(b"hi\x1b[3;1Hhello\x1b[5;10Hworld!\x1b[3Hab") == {0: 2, 3: 7, 5: 6}
    assert written_rows(b"") == {}
    # a program that rewrites row 4 five times a second and row 9 once
    code = ("import os, time\nos.write(1, b'\\x1b[9;1H' + b'x' * 50)\n"
            "while True:\n    os.write(1, b'\\x1b[4;2H' + b'y' * 10)\n    time.sleep(0.2)")
    cmd = shlex.join([sys.executable, "-c", code])
    assert main(["--cmd", cmd, "--settle", "0.5", "--duration", "1.5", "--rows", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = dict(doc["rows"])
    assert list(rows) == [4] and rows[4] % 10 == 0 < rows[4]  # only row 4 repaints; row 9 was written before
