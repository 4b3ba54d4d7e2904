"""tail_file reads a large log in bounded pieces and still yields every line, in order."""

import asyncio

from backends.drivers.base import TAIL_READ_BYTES, tail_file


async def test_large_log_is_read_in_bounded_pieces(tmp_path):
    path = tmp_path / "server.log"
    lines = [f"[2026-11-30 09:00:00 TP0] Decode batch, #running-req: {i}" for i in range(80_000)]
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size > 3 * TAIL_READ_BYTES
    seen = []

    async def read_all():
        async for line in tail_file(path, from_start=True):
            seen.append(line)
            if len(seen) == len(lines):
                return

    await asyncio.wait_for(read_all(), timeout=60)
    assert seen == lines


async def test_from_end_yields_only_new_lines(tmp_path):
    path = tmp_path / "server.log"
    path.write_text("old 1\nold 2\n")
    agen = tail_file(path, from_start=False, poll=0.01)
    task = asyncio.ensure_future(agen.__anext__())
    await asyncio.sleep(0.05)
    with path.open("a") as fh:
        fh.write("new 1\n")
    assert await asyncio.wait_for(task, timeout=10) == "new 1"
    await agen.aclose()
