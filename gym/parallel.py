"""Running many simulations: one small interface, three executors.

``Serial`` runs in this process; ``LocalPool`` spreads tasks over local worker processes
(the default for sweeps, nothing to set up); ``DaskCluster`` sends the same tasks to a Dask
distributed scheduler (``--scheduler ADDRESS``; the optional ``dask`` extra). Every task
carries its own seed, so results are identical whichever executor runs them.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Protocol

from gym.errors import GymError

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
        chunk = max(1, len(tasks) // (self.workers * 16))
        out: list[Any] = []
        pool = ProcessPoolExecutor(max_workers=self.workers)
        try:
            for result in pool.map(fn, tasks, chunksize=chunk):
                out.append(result)
                if progress:
                    progress(1)
        except KeyboardInterrupt:
            pool.shutdown(wait=False, cancel_futures=True)
            raise Interrupted(out) from None
        pool.shutdown()
        return out


class DaskCluster:
    """Tasks sent to a Dask distributed scheduler at ``address`` (tcp://host:port)."""

    name = "dask"

    def __init__(self, address: str) -> None:
        try:
            self._distributed: Any = importlib.import_module("distributed")
        except ImportError:
            raise GymError.single(
                None,
                "--scheduler",
                "Dask is not installed; install the extra: pip install 'crawler-slo-gym[dask]'",
            ) from None
        try:
            self.client = self._distributed.Client(address, timeout=15)
        except OSError as exc:
            raise GymError.single(
                None, "--scheduler", f"cannot reach a Dask scheduler at {address!r}: {exc}"
            ) from None
        self.address = address

    def map(
        self, fn: Callable[[Any], Any], tasks: Sequence[Any], progress: Progress | None = None
    ) -> list[Any]:
        # A flow run takes milliseconds, about what Dask spends on a task: send chunks.
        workers = max(1, len(self.client.scheduler_info().get("workers", {})))
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
        self.client.close()


def _run_chunk(fn: Callable[[Any], Any], chunk: list[Any]) -> list[Any]:
    return [fn(task) for task in chunk]


def make_executor(workers: int | None = None, scheduler: str | None = None) -> Executor:
    """Dask when a scheduler address is given, else a local pool (``workers=1``: serial)."""
    if scheduler:
        return DaskCluster(scheduler)
    if workers == 1:
        return Serial()
    return LocalPool(workers)
