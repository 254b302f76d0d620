"""Fake endpoints for bench/bench_poll.py, served from a child process so that their CPU time,
threads and memory are not the poller's (no Django needed here)."""

from __future__ import annotations

import contextlib
import multiprocessing
import sys
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


def _start_servers(n_hang: int, n_ok: int, hang_s: float) -> list:
    """``n_hang`` hanging servers then ``n_ok`` answering ones, all started; stopped again on failure."""
    from fleet.polling.fakeserver import FakeEngineServer

    servers: list[FakeEngineServer] = []
    try:
        for i in range(n_hang + n_ok):
            behaviour = "hang" if i < n_hang else "ok"
            servers.append(FakeEngineServer(ENGINE, behaviour=behaviour, seed=i, hang_s=hang_s).start())
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


def _fakes_process(conn, n_hang: int, n_ok: int, hang_s: float) -> None:
    """Child process: serve until told to stop, the parent goes away, or the lifetime ends.

    Messages from the parent: ``"cpu"`` (answer with this process's CPU seconds so far) and
    ``"stop"``; an EOF on the pipe (parent gone) also stops.
    """
    try:
        servers = _start_servers(n_hang, n_ok, hang_s)
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

    def __init__(self, n_hang: int, n_ok: int, hang_s: float, in_process: bool) -> None:
        self.n_hang, self.n_ok, self.hang_s, self.in_process = n_hang, n_ok, hang_s, in_process
        self._servers: list = []
        self._process = None
        self._conn = None

    def start(self, timeout_s: float = 120.0) -> list[tuple[str, str, str]]:
        """Start them; (url, served model id, behaviour) per server, hanging ones first."""
        if self.in_process:
            self._servers = _start_servers(self.n_hang, self.n_ok, self.hang_s)
            return _describe_servers(self._servers)
        ctx = multiprocessing.get_context("spawn")  # a clean interpreter: no Django, no threads
        self._conn, child = ctx.Pipe()
        self._process = ctx.Process(
            target=_fakes_process, args=(child, self.n_hang, self.n_ok, self.hang_s), name="bench-fakes", daemon=True
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
