"""Fake endpoints for bench/bench_poll.py, served from a child process so that their CPU time,
threads and memory are not the poller's (no Django needed here).

Two kinds. ``lean`` (the default): every endpoint served by one asyncio loop with the same engine
simulation and payloads as ``FakeEngineServer``; 0.3-0.5 ms of CPU a request with the render
cache (a real engine's HTTP front end costs the machine polling it nothing). ``threaded``: one
``FakeEngineServer`` (stdlib ``ThreadingHTTPServer``, a thread per connection, ~1.4 ms of CPU a
request) per endpoint, the server the tests use; on this 2-core machine its process saturates a
core before the poller does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ENGINE = "vllm"
#: Seconds the fake servers' process lives at most (it exits at once when asked or orphaned).
FAKES_MAX_LIFETIME_S = 3600.0

# --------------------------------------------------------------------------------------------
# Fake endpoints (no Django needed: this part also runs in the child process)
# --------------------------------------------------------------------------------------------


class _LeanEndpoint:
    """One fake vLLM endpoint of a :class:`_LeanFleet`: ``ok`` or ``hang``."""

    def __init__(self, fleet: _LeanFleet, behaviour: str, seed: int, render_cache_s: float) -> None:
        from fleet.polling.fake_engines import Simulation
        from fleet.polling.fakeserver import DEFAULT_MODELS, models_payload

        self.fleet, self.behaviour, self.render_cache_s = fleet, behaviour, render_cache_s
        self.model_id = DEFAULT_MODELS[ENGINE]
        self.sim = Simulation(ENGINE, self.model_id, 1, 1, seed, warm_steps=40)
        self.models_body = json.dumps(models_payload(ENGINE, self.model_id, 8192, int(self.sim.started))).encode()
        self.url = ""

    def metrics_body(self) -> bytes:
        return self.sim.render(self.render_cache_s)

    def stop(self) -> None:
        self.fleet.stop()


class _LeanFleet:
    """Many fake endpoints on one asyncio loop in one thread; each its own port on 127.0.0.1."""

    ROUTES = {b"/v1/models": "application/json", b"/health": "text/plain", b"/metrics": "text/plain; version=0.0.4"}

    def __init__(self, behaviours: list[str], hang_s: float, render_cache_s: float) -> None:
        self.hang_s = hang_s
        self.endpoints = [_LeanEndpoint(self, b, i, render_cache_s) for i, b in enumerate(behaviours)]
        self._loop = asyncio.new_event_loop()
        self._stopping: asyncio.Event | None = None
        self._servers: list[asyncio.Server] = []
        self._stop_lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop.run_forever, name="lean-fakes", daemon=True)

    def start(self) -> list[_LeanEndpoint]:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(60)
        return self.endpoints

    async def _listen(self) -> None:
        self._stopping = asyncio.Event()
        for endpoint in self.endpoints:
            server = await asyncio.start_server(
                lambda r, w, e=endpoint: self._serve(e, r, w), "127.0.0.1", 0, backlog=1024
            )
            self._servers.append(server)
            endpoint.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"

    async def _shutdown(self) -> None:
        """Release the hanging requests, stop listening, and let every connection task end."""
        self._stopping.set()
        for server in self._servers:
            server.close()
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        if others:  # released hangs and finished replies end by themselves, at once
            await asyncio.wait(others, timeout=10)

    async def _serve(self, endpoint: _LeanEndpoint, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            if endpoint.behaviour == "hang":  # accept, read the request, never answer
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), self.hang_s)
                return
            path = head.split(b" ", 2)[1].split(b"?", 1)[0]
            ctype = self.ROUTES.get(path)
            if ctype is None:
                status, ctype, body = b"404 Not Found", "application/json", b'{"detail":"Not Found"}'
            else:
                status = b"200 OK"
                body = endpoint.models_body if path == b"/v1/models" else b""
                if path == b"/metrics":
                    body = endpoint.metrics_body()
            writer.write(
                b"HTTP/1.1 "
                + status
                + f"\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        finally:
            writer.close()

    def stop(self) -> None:
        """Stop everything (each endpoint's ``stop()`` lands here; the first one does the work)."""
        with self._stop_lock:
            if self._thread.is_alive():
                self._stop()

    def _stop(self) -> None:
        if self._stopping is not None:
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def _start_servers(n_hang: int, n_ok: int, hang_s: float, render_cache_s: float = 0.0, lean: bool = True) -> list:
    """``n_hang`` hanging servers then ``n_ok`` answering ones, all started; stopped again on failure."""
    from fleet.polling.fakeserver import FakeEngineServer

    if lean:
        return _LeanFleet(["hang"] * n_hang + ["ok"] * n_ok, hang_s, render_cache_s).start()

    servers: list[FakeEngineServer] = []
    try:
        for i in range(n_hang + n_ok):
            behaviour = "hang" if i < n_hang else "ok"
            fake = FakeEngineServer(ENGINE, behaviour=behaviour, seed=i, hang_s=hang_s, render_cache_s=render_cache_s)
            servers.append(fake.start())
    except BaseException:
        _stop_servers(servers)
        raise
    return servers


def _stop_servers(servers: list) -> None:
    """Stop in parallel: each ``stop()`` waits for its accept loop (about 25 ms)."""
    if servers:
        with ThreadPoolExecutor(max_workers=32) as pool:
            list(pool.map(lambda server: server.stop(), servers))


def _describe_servers(servers: list) -> list[tuple[str, str, str]]:
    return [(server.url, server.model_id, server.behaviour) for server in servers]


def _fakes_process(conn, n_hang: int, n_ok: int, hang_s: float, render_cache_s: float, lean: bool) -> None:
    """Child process: serve until told to stop, the parent goes away, or the lifetime ends.

    Messages from the parent: ``"cpu"`` (answer with this process's CPU seconds so far) and
    ``"stop"``; an EOF on the pipe (parent gone) also stops.
    """
    try:
        servers = _start_servers(n_hang, n_ok, hang_s, render_cache_s, lean)
    except Exception as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    deadline = time.monotonic() + FAKES_MAX_LIFETIME_S
    try:
        conn.send(("ready", _describe_servers(servers)))
        while (left := deadline - time.monotonic()) > 0:
            if not conn.poll(left):
                break
            try:
                message = conn.recv()
            except EOFError:
                break
            if message == "cpu":
                conn.send(("cpu", time.process_time()))
            elif message == "stop":
                break
    finally:
        _stop_servers(servers)
    with contextlib.suppress(OSError):
        conn.send(("stopped", time.process_time()))


class Fakes:
    """The fake endpoints, in a child process (default) or in this one (``in_process``)."""

    def __init__(
        self, n_hang: int, n_ok: int, hang_s: float, in_process: bool, render_cache_s: float = 0.0, lean: bool = True
    ) -> None:
        self.n_hang, self.n_ok, self.hang_s, self.in_process = n_hang, n_ok, hang_s, in_process
        self.render_cache_s, self.lean = render_cache_s, lean
        self._servers: list = []
        self._process = None
        self._conn = None

    def start(self, timeout_s: float = 120.0) -> list[tuple[str, str, str]]:
        """Start them; (url, served model id, behaviour) per server, hanging ones first."""
        if self.in_process:
            self._servers = _start_servers(self.n_hang, self.n_ok, self.hang_s, self.render_cache_s, self.lean)
            return _describe_servers(self._servers)
        ctx = multiprocessing.get_context("spawn")  # a clean interpreter: no Django, no threads
        self._conn, child = ctx.Pipe()
        self._process = ctx.Process(
            target=_fakes_process,
            args=(child, self.n_hang, self.n_ok, self.hang_s, self.render_cache_s, self.lean),
            name="bench-fakes",
            daemon=True,
        )
        self._process.start()
        child.close()
        try:
            kind, payload = self._ask(None, timeout_s)
        except (EOFError, OSError, TimeoutError) as exc:
            kind, payload = "error", f"{type(exc).__name__}: {exc}"
        if kind != "ready":
            self.stop()
            raise RuntimeError(f"the fake servers did not start: {payload}")
        return payload

    def _ask(self, message: str | None, timeout_s: float) -> tuple[str, object]:
        if message is not None:
            self._conn.send(message)
        if not self._conn.poll(timeout_s):
            raise TimeoutError(f"no answer from the fake servers' process within {timeout_s:g} s")
        return self._conn.recv()

    def cpu_seconds(self) -> float | None:
        """The child's CPU seconds so far (None in process: they are part of this process's)."""
        if self._process is None:
            return None
        kind, value = self._ask("cpu", 30.0)
        return float(value) if kind == "cpu" else None

    def stop(self) -> None:
        """Stop every server and the child process (bounded: terminate, then kill)."""
        if self.in_process:
            _stop_servers(self._servers)
            self._servers = []
            return
        if self._process is None:
            return
        with contextlib.suppress(OSError, EOFError, TimeoutError):
            self._ask("stop", 60.0)
        self._process.join(10)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(5)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(5)
        self._conn.close()
        self._process = None


# --------------------------------------------------------------------------------------------
