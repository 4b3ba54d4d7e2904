"""The simulator process: parse, print the startup, bind late, warm up, serve, shut down like SGLang.

Exit behaviour (as SGLang): argparse errors exit 2; ServerArgs validation errors print a traceback
ending in ``ValueError: <SGLang's message>`` and exit 1; a fatal error during load/capture/warmup
prints SGLang's text, kills the children and then the process itself with SIGKILL (exit -9, as
SGLang's ``kill_process_tree`` does); a taken port fails only after loading, with uvicorn's bind
error and exit 3. SIGTERM/SIGINT exit 0 (after ``--sim-drain-seconds`` of still serving).

Children (``--sim-children N``): ``python -c ... sglang::scheduler_TP<i>`` processes in the server's
process group. They exit on SIGTERM/SIGKILL; the server stops them on a clean exit. If the server
dies without stopping them they stay for ``--sim-orphan-seconds`` (default 30, like the orphaned
schedulers reported in SGLang issues), so only a kill of the whole process group removes them at once.

Daemons (``--sim-daemons N``): processes that leave the server's session, group and tree (``setsid``
and a double fork, as a helper a library starts can) and live ``--sim-orphan-seconds`` whatever the
server does; only their environment (the launch token) still says whose they are.
"""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import subprocess
import sys

from backends.core.paths import problems_file
from backends.sim import answers
from backends.sim.args import SGLangValueError, SimArgs, parse
from backends.sim.completions import Completions
from backends.sim.engine import Engine
from backends.sim.http import HttpServer
from backends.sim.logwriter import LogWriter
from backends.sim.server import SimServer
from backends.sim.startup import Startup, StartupFailed

CHILD_CODE = (
    "import os, sys, time\n"
    "parent, linger = int(sys.argv[1]), float(sys.argv[2])\n"
    "while os.getppid() == parent:\n"
    "    time.sleep(0.2)\n"
    "time.sleep(linger)\n"
)

DAEMON_CODE = (
    "import os, sys, time\n"
    "if os.fork():\n"
    "    os._exit(0)\n"
    "os.setsid()\n"
    "if os.fork():\n"
    "    os._exit(0)\n"
    "time.sleep(float(sys.argv[1]))\n"
)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parse(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    except SGLangValueError as exc:
        sys.stderr.write(
            "Traceback (most recent call last):\n"
            '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
            '  File "/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py", line 32, in <module>\n'
            "    server_args = prepare_server_args(sys.argv[1:])\n"
            '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/server_args.py", line 5313, in __post_init__\n'
            f"ValueError: {exc}\n")
        sys.stderr.flush()
        return 1
    return asyncio.run(Runner(args).run())


class Runner:
    def __init__(self, args: SimArgs) -> None:
        self.args = args
        self.log = LogWriter()
        self.children: list[subprocess.Popen] = []
        self.stop = asyncio.Event()
        self.released = asyncio.Event()  # SIGUSR1: ends a --sim-hang-at load, capture or warmup hang
        self.gpu: object | None = None  # --sim-gpu-alloc-gib: the held allocation (backends.sim.gpualloc.Held)

    def spawn_children(self) -> None:
        for i in range(self.args.children):
            self.children.append(subprocess.Popen(
                [sys.executable, "-c", CHILD_CODE, str(os.getpid()), str(self.args.orphan_seconds),
                 f"sglang::scheduler_TP{i}"], stdin=subprocess.DEVNULL))

    def spawn_daemons(self) -> None:
        for i in range(self.args.daemons):
            subprocess.run([sys.executable, "-c", DAEMON_CODE, str(self.args.orphan_seconds), f"sglang::daemon{i}"],
                           stdin=subprocess.DEVNULL, check=False)  # returns once the first fork exited

    def stop_children(self) -> None:
        for c in self.children:
            if c.poll() is None:
                c.terminate()
        for c in self.children:
            try:
                c.wait(timeout=5)
            except subprocess.TimeoutExpired:
                c.kill()
                c.wait()

    def die(self) -> None:
        """SGLang's kill_process_tree(include_parent=True): children first, then SIGKILL ourselves."""
        for c in self.children:
            if c.poll() is None:
                c.kill()
        for c in self.children:
            c.wait()
        sys.stderr.flush()
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    def hold_gpu_memory(self, gib: float) -> None:
        """--sim-gpu-alloc-gib: real device memory for the process's life; no driver is a fatal start."""
        from backends.sim.gpualloc import GpuAllocError, allocate

        try:
            held = allocate(gib)
        except GpuAllocError as exc:
            self.log.info(f"RuntimeError: CUDA error: {exc}")
            self.die()
            return
        self.gpu = held
        self.log.info(f"ddtune sim: holding {gib:g} GiB on {held.device_name} "
                      f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')})")

    def _on_signal(self) -> None:
        if self.args.hang_at == "shutdown":
            return
        self.stop.set()

    async def _until_stopped(self, coro) -> bool:
        """Run coro unless a stop signal comes first; True when it completed."""
        task = asyncio.ensure_future(coro)
        stopper = asyncio.ensure_future(self.stop.wait())
        done, _ = await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            stopper.cancel()
            task.result()
            return True
        task.cancel()
        try:
            await task
        except (asyncio.CancelledError, StartupFailed):
            pass
        return False

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_signal)
        a = self.args
        if a.hang_at is not None:  # before the first line: a test holds a phase as long as it needs
            loop.add_signal_handler(signal.SIGUSR1, self.released.set)
        self.spawn_children()
        self.spawn_daemons()
        if a.gpu_alloc_gib:
            self.hold_gpu_memory(a.gpu_alloc_gib)
        startup = Startup(a, self.log, self.released)
        try:
            if not await self._until_stopped(startup.load()):
                self.stop_children()
                return 0
        except StartupFailed:
            self.die()
        engine = Engine(a, self.log)
        completions = Completions(engine, answers.load_problems(problems_file()), a)
        server = SimServer(a, engine, completions, self.log)
        http = HttpServer(server.handle)
        try:
            await http.listen(a.host, a.port)
        except OSError as exc:
            code = exc.errno if exc.errno in (errno.EADDRINUSE, errno.EACCES, errno.EADDRNOTAVAIL) else errno.EADDRINUSE
            startup.bind_error(code)
            self.stop_children()
            return 3
        startup.after_bind()
        engine.start()
        if not await self._until_stopped(self.warmup(server, engine, completions)):
            return self.shutdown(http)
        await self.stop.wait()
        if a.drain_seconds > 0:
            server.state = "draining"
            await asyncio.sleep(a.drain_seconds)
        return self.shutdown(http)

    async def warmup(self, server: SimServer, engine: Engine, completions: Completions) -> None:
        a = self.args
        await asyncio.sleep(a.load_seconds * 0.05)
        self.log.access("127.0.0.1:40000", "GET", "/model_info", 200)
        if a.hang_at == "warmup":
            await self.released.wait()
        if a.fail_at == "warmup":
            self.log.info("Initialization failed. warmup error: Traceback (most recent call last):\n"
                          "  File \"/usr/local/lib/python3.12/dist-packages/sglang/srt/entrypoints/http_server.py\", "
                          "line 1412, in _execute_server_warmup\n"
                          "    assert res.status_code == 200, f\"{res}\"\n"
                          "AssertionError: <Response [500]>\n")
            self.die()
        r = completions.make_request("The capital city of France is", 7, 8, False, False, 0)
        await engine.submit(r)
        self.log.access("127.0.0.1:40002", "POST", "/generate", 200)
        self.log.info("The server is fired up and ready to roll!")
        if a.hostile:  # last in the startup log, so a console's log tail shows it
            self.log.info(f"Model card says: {a.hostile}")
        server.state = "ready"

    def shutdown(self, http: HttpServer) -> int:
        http.close()
        self.log.info("SIGTERM received. signum=None frame=None. Draining requests and shutting down...")
        if self.args.version == "0.5.17":  # recorded: the server kills its own group; the leader exits -9
            self.log.info(f"kill_process_tree called: parent_pid={os.getpid()}, include_parent=True, pid={os.getpid()}")
            self.die()
        self.stop_children()
        return 0
