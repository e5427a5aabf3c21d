"""Running many simulations: one small interface, three executors.

``Serial`` runs in this process; ``LocalPool`` spreads tasks over local worker processes
(the default for sweeps, nothing to set up); ``DaskCluster`` sends the same tasks to a Dask
distributed scheduler (``--scheduler ADDRESS``; the optional ``dask`` extra). Every task
carries its own seed, so results are identical whichever executor runs them.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import socket
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Protocol

from gym.core.errors import GymError

Progress = Callable[[int], None]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a batch of tasks: carries the results finished so far (in task order,
    a prefix of the tasks)."""

    def __init__(self, done: list[Any]) -> None:
        super().__init__()
        self.done = done


class Executor(Protocol):
    """Maps a picklable function over tasks; results come back in task order."""

    name: str

    def map(
        self, fn: Callable[[Any], Any], tasks: Sequence[Any], progress: Progress | None = None
    ) -> list[Any]: ...

    def close(self) -> None:
        """Release what the executor holds (a Dask client's connection)."""


class Serial:
    """One task after another, in this process."""

    name = "serial"

    def close(self) -> None:
        pass

    def map(
        self, fn: Callable[[Any], Any], tasks: Sequence[Any], progress: Progress | None = None
    ) -> list[Any]:
        out: list[Any] = []
        try:
            for task in tasks:
                out.append(fn(task))
                if progress:
                    progress(1)
        except KeyboardInterrupt:
            raise Interrupted(out) from None
        return out


class LocalPool:
    """A pool of local worker processes (as many as cores by default)."""

    name = "pool"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1

    def close(self) -> None:
        pass

    def map(
        self, fn: Callable[[Any], Any], tasks: Sequence[Any], progress: Progress | None = None
    ) -> list[Any]:
        if self.workers == 1 or len(tasks) <= 1:
            return Serial().map(fn, tasks, progress)
        workers = min(self.workers, len(tasks))
        chunk = max(1, len(tasks) // (workers * 16))
        out: list[Any] = []
        pool = ProcessPoolExecutor(max_workers=workers, initializer=_worker_signals)
        try:
            for result in pool.map(fn, tasks, chunksize=chunk):
                out.append(result)
                if progress:
                    progress(1)
        except KeyboardInterrupt:
            # Workers ignore Ctrl-C and SIGTERM; stop them now rather than letting the
            # command wait at exit for the chunks they hold.
            workers_left = list((getattr(pool, "_processes", None) or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for process in workers_left:
                with contextlib.suppress(Exception):
                    process.kill()
            raise Interrupted(out) from None
        pool.shutdown()
        return out


def _worker_signals() -> None:
    """Workers leave Ctrl-C and SIGTERM to the parent, which keeps the finished results
    and shuts the pool down: a signal sent to the whole process group (Ctrl-C, ``kill
    -TERM -PGID``) must not kill a worker and break the pool before the parent saves what
    is done. Workers end when the parent does."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


#: Schemes a Dask scheduler address may use.
DASK_SCHEMES = ("tcp", "tls", "inproc", "ucx", "ws", "wss")
#: Seconds to wait for a scheduler to answer.
DASK_TIMEOUT_S = 15.0
#: Seconds to wait, once connected, for the scheduler to have a worker.
DASK_WORKER_WAIT_S = 15.0


def check_address(address: str) -> None:
    """A scheduler address must look like ``tcp://host:port``: checked before any import or
    connection, so a typo is one line at once."""
    scheme, sep, rest = address.partition("://")
    host, colon, port = rest.rpartition(":")
    problem = None
    if not sep or scheme not in DASK_SCHEMES:
        problem = "is not a scheduler address; give SCHEME://HOST:PORT, e.g. tcp://10.0.0.5:8786"
    elif scheme != "inproc" and (not colon or not host or not (port.isascii() and port.isdigit())):
        problem = "needs a host and a port, e.g. tcp://10.0.0.5:8786"
    elif scheme != "inproc" and not 0 < int(port) < 65536:
        problem = f"port {port} is not between 1 and 65535"
    if problem:
        raise GymError.single(None, "--scheduler", f"{address!r} {problem}")


#: Seconds a tcp:// scheduler has to send its first bytes (Dask sends its handshake as
#: soon as it accepts a connection).
DASK_GREETING_S = 5.0


def _probe(address: str, timeout: float) -> None:
    """For TCP-based addresses, a plain connection first: a refused connection or an
    unknown host is reported at once, not after Dask's connection timeout. For tcp://,
    the other end must also speak first, as a Dask scheduler does (its handshake): a web
    server or another service that waits for the client is reported in seconds."""
    scheme, _, rest = address.partition("://")
    if scheme not in ("tcp", "tls"):
        return
    host, _, port = rest.rpartition(":")
    try:
        conn = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise GymError.single(
            None, "--scheduler", f"nothing answers at {address!r}: {reason}"
        ) from None
    with conn:
        if scheme != "tcp":
            return
        conn.settimeout(DASK_GREETING_S)
        try:
            greeting = conn.recv(1)
        except OSError:
            greeting = b""
    if not greeting:
        raise GymError.single(
            None,
            "--scheduler",
            f"{address!r} is not a Dask scheduler: it sent no handshake within "
            f"{DASK_GREETING_S:g} s",
        )


class DaskCluster:
    """Tasks sent to a Dask distributed scheduler at ``address`` (tcp://host:port)."""

    name = "dask"

    def __init__(self, address: str) -> None:
        check_address(address)
        timeout = DASK_TIMEOUT_S
        try:
            self._distributed: Any = importlib.import_module("distributed")
        except ImportError:
            raise GymError.single(
                None,
                "--scheduler",
                "Dask is not installed; install the extra: pip install 'crawler-slo-gym[dask]'",
            ) from None
        self.address = address
        _probe(address, timeout)
        self.client = self._connect(address, timeout)
        wait = DASK_WORKER_WAIT_S
        try:
            self.client.wait_for_workers(1, timeout=wait)
        except Exception:
            self.close()
            raise GymError.single(
                None,
                "--scheduler",
                f"the Dask scheduler at {address!r} has no workers (waited {wait:g} s); "
                "start one with: dask worker " + address,
            ) from None

    def _connect(self, address: str, timeout: float) -> Any:
        """Connect in a helper thread with a hard deadline: something that accepts the
        connection but is not a Dask scheduler must not hang the command."""
        box: dict[str, Any] = {}

        def connect() -> None:
            try:
                box["client"] = self._distributed.Client(address, timeout=timeout)
            except BaseException as exc:  # reported below, in the caller's thread
                box["error"] = exc

        thread = threading.Thread(target=connect, name="gym-dask-connect", daemon=True)
        thread.start()
        thread.join(timeout + 1)
        if thread.is_alive() or ("client" not in box and "error" not in box):
            raise GymError.single(
                None,
                "--scheduler",
                f"no Dask scheduler answered at {address!r} within {timeout:g} s "
                "(is it a Dask scheduler?)",
            )
        if "error" in box:
            exc = box["error"]
            detail = " ".join(str(exc).split()) or type(exc).__name__
            if isinstance(exc, OSError | TimeoutError):
                message = f"cannot reach a Dask scheduler at {address!r}: {detail}"
            else:  # it answered, but not as Dask does (an SSH banner read as a frame size)
                message = f"{address!r} is not a Dask scheduler (its reply: {detail})"
            raise GymError.single(None, "--scheduler", message)
        return box["client"]

    @property
    def workers(self) -> int:
        """The scheduler's workers now (at least one): batches of runs are split so that
        each has work."""
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def map(
        self, fn: Callable[[Any], Any], tasks: Sequence[Any], progress: Progress | None = None
    ) -> list[Any]:
        # A flow run takes milliseconds, about what Dask spends on a task: send chunks.
        workers = self.workers
        size = max(1, len(tasks) // (workers * 8))
        chunks = [list(tasks[i : i + size]) for i in range(0, len(tasks), size)]
        futures = self.client.map(_run_chunk, [fn] * len(chunks), chunks, pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        done: list[list[Any] | None] = [None for _ in chunks]
        try:
            for future in self._distributed.as_completed(futures):
                i = index[future.key]
                done[i] = future.result()
                if progress:
                    progress(len(chunks[i]))
        except KeyboardInterrupt:
            self.client.cancel(futures)
            prefix: list[Any] = []
            for part in done:
                if part is None:
                    break
                prefix += part
            raise Interrupted(prefix) from None
        return [result for part in done if part is not None for result in part]

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            with contextlib.suppress(Exception):
                client.close(timeout=5)


def _run_chunk(fn: Callable[[Any], Any], chunk: list[Any]) -> list[Any]:
    return [fn(task) for task in chunk]


def make_executor(workers: int | None = None, scheduler: str | None = None) -> Executor:
    """Dask when a scheduler address is given, else a local pool (``workers=1``: serial)."""
    if scheduler:
        return DaskCluster(scheduler)
    if workers == 1:
        return Serial()
    return LocalPool(workers)
