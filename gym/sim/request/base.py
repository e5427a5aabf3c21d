"""What every node's rule shares, importing no kind: a URL's state, the run, a node's
per-tick log, and the helpers that turn a run's logs into a record (the stations a URL
meets are in :mod:`gym.sim.request.stations`).

A URL is a :class:`Url` moved along by callbacks on :class:`~gym.sim.request.kernel.Kernel`;
a rule (:class:`Rule`) sees it arrive (:meth:`Rule.visit`) and hands it on with
``rule.passed(url)``, at once or from a callback it scheduled. Each callback stands for
the SimPy event a process per URL would have waited on, scheduled at the same point of
the run, so the kernel steps through the same events in the same order.
"""

from __future__ import annotations

import gc
import itertools
from array import array
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from gym.models import CrashFault, Scenario
from gym.sim.flow.base import tick_quota
from gym.sim.latency import Samples
from gym.sim.record import Tally
from gym.sim.request.kernel import Kernel
from gym.sim.timeline import Timeline
from gym.system.topology import Node

if TYPE_CHECKING:
    from gym.sim.request.stations import Replica


class Url:
    """One URL on its way: when it arrived (``t``, in tick ``ka``), whether it counts in
    the latencies, and what the node it is at keeps about it."""

    __slots__ = (
        "dead",
        "end",
        "ka",
        "measured",
        "replica",
        "t",
        "t_mark",
        "t_start",
        "tries",
    )

    def __init__(self, t: float, ka: int, measured: bool) -> None:
        self.t = t  # arrival instant
        self.ka = ka  # arrival tick: the window its latencies count in
        self.measured = measured  # arrived after the warm-up
        self.t_start = 0.0  # the start of its service at a fleet
        self.replica: Replica | None = None  # the fleet replica serving it
        self.dead = False  # its service was cut short by a crash
        self.t_mark = 0.0  # when it reached the node it is at
        self.end = 0.0  # the end of a write a write buffer took a store slot for
        self.tries = 0  # tries at a loss station that retries

    def again(self) -> Url:
        """The same URL for a new try at a fleet (after a crash): the old one's callbacks
        still come due, and find it dead."""
        url = Url(self.t, self.ka, self.measured)
        url.t_mark, url.end = self.t_mark, self.end
        return url


class Log:
    """One component's per-tick counts, as plain lists while the run goes."""

    def __init__(
        self,
        name: str,
        n: int,
        causes: tuple[str, ...],
        extra: tuple[str, ...] = (),
        skips: tuple[str, ...] = (),
    ):
        # One slot more than the run's ticks: an instant within a rounding error of the
        # end lands there, and is folded into the last tick.
        self.name = name
        self.n = n
        self.arrived = [0] * (n + 1)
        self.processed = [0] * (n + 1)
        self.out = [0] * (n + 1)
        self.served = [0] * (n + 1)
        self.failed = {c: [0] * (n + 1) for c in causes}
        self.skipped = {c: [0] * (n + 1) for c in skips}
        self.extra = {e: [0] * (n + 1) for e in extra}

    def _array(self, counts: list[int]) -> np.ndarray:
        a = np.asarray(counts[: self.n], dtype=np.int64)
        a[-1] += counts[self.n]
        return a

    def tally(
        self, capacity: np.ndarray, limit: int | None = None, rate: np.ndarray | None = None
    ) -> Tally:
        arrays = {
            k: self._array(getattr(self, k)) for k in ("arrived", "processed", "out", "served")
        }
        failed = {c: self._array(v) for c, v in self.failed.items()}
        skipped = {c: self._array(v) for c, v in self.skipped.items()}
        extra = {e: self._array(v) for e, v in self.extra.items()}
        inflow = arrays["arrived"] + extra.get("requeued_in", 0)
        outflow = arrays["out"] + arrays["served"] + extra.get("requeued", 0)
        for counts in (*failed.values(), *skipped.values()):
            outflow = outflow + counts
        backlog = np.cumsum(inflow - outflow)
        if "requeued_in" in extra:  # a queue's requeued work comes back in
            extra["requeued"] = extra.pop("requeued_in")
        return Tally(
            self.name,
            capacity,
            backlog=backlog,
            failed=failed,
            extra=extra,
            limit=limit,
            skipped=skipped,
            rate=rate,
            **arrays,
        )


class Run:
    """What every rule of one run shares: the kernel, the tick grid, latency samples."""

    def __init__(self, timeline: Timeline, seed: int, warmup_s: float, scenario: Scenario):
        self.kernel = Kernel()
        self.scenario = scenario
        self.seed = seed
        self.timeline = timeline
        self.n = timeline.n_ticks
        self.tick_ms = timeline.tick_ms
        self.tick_s = timeline.tick_s
        self.per_s = 1.0 / timeline.tick_s
        self.end_s = timeline.n_ticks * timeline.tick_s
        self.warmup_s = warmup_s
        # Per node: latencies (s) and the arrival tick of each URL they belong to, in
        # packed arrays (8 and 4 bytes a sample).
        self.samples: dict[str, array[float]] = {}
        self.sample_ticks: dict[str, array[int]] = {}

    def k(self, t: float) -> int:
        """The tick instant ``t`` falls in."""
        return int(t * self.per_s + 1e-9)

    def sample(self, name: str, url: Url, seconds: float) -> None:
        if url.measured:
            if name not in self.samples:
                self.samples[name], self.sample_ticks[name] = array("d"), array("i")
            self.samples[name].append(seconds)
            self.sample_ticks[name].append(url.ka)

    def at_tick(self, tick: int, callback: Callable[[Any], None], arg: Any = None) -> None:
        """Call ``callback(arg)`` at the start of ``tick``."""
        self.kernel.at_tick(tick, self.tick_s, callback, arg)

    def rates(self, changes: list[tuple[int, float]]) -> np.ndarray:
        """Capacity per second in force each tick, from (tick, rate) changes."""
        return rates_of(changes, self.n)

    def capacity(self, changes: list[tuple[int, float]]) -> np.ndarray:
        """Whole URLs per tick from (tick, rate) changes, as the flow engine counts them."""
        return capacity_of(changes, self.n, self.tick_ms)


def _nowhere(url: Url) -> None:
    raise AssertionError("a rule's passed() is set by the engine")


class Rule:
    """A node's rule in the request engine: what one URL meets there.

    :meth:`visit` is called when a URL reaches the node; the rule calls
    ``self.passed(url)`` when it goes on (at once, or from a callback it scheduled on
    ``run.kernel``), or does not, when it finished or failed here. Every rule's requests
    still inside at the end (waiting, in service, held) count as in flight (its log's
    backlog)."""

    def __init__(self, run: Run, node: Node, causes: tuple[str, ...], **log: Any) -> None:
        self.run = run
        self.name = node.name
        self.params = node.params
        self.log = Log(node.name, run.n, causes, **log)
        #: Hands a URL on from here (set by the engine): to the tees, then along one
        #: outgoing edge; :attr:`onward` does the second alone.
        self.passed: Callable[[Url], None] = _nowhere
        self.onward: Callable[[Url], None] = _nowhere
        #: URLs on a delayed edge on their way here (in flight at the end).
        self.transit = 0

    def connect(self, inputs: Sequence[Rule], outputs: Sequence[Rule]) -> None:
        """Join the rules feeding this one and fed by it (most rules need neither)."""

    def visit(self, url: Url) -> None:
        """A URL arrives here now."""
        raise NotImplementedError

    def start(self) -> None:
        """Schedule the rule's own work at the start of the run (a write buffer's flusher)."""

    # Tees: a rule a tee edge may feed (a copy of what a node passes on) overrides both.
    def tee_to(self, target: Rule, delay_s: float) -> None:
        """Fed by a tee: send what it makes of the copies to ``target``, ``delay_s`` later
        on average (its one edge's delay)."""
        raise TypeError(f"a tee edge cannot feed {self.name}: its kind takes no copies")

    def tee(self, url: Url) -> None:
        """A copy of ``url``, passed on by the node whose tee feeds this rule."""
        raise NotImplementedError

    def tally(self) -> Tally:
        raise NotImplementedError

    # Faults: a rule that can suffer one overrides it.
    def crash(self, fault: CrashFault, start: int, end: int | None) -> None:
        """Schedule a crash from tick ``start`` to ``end`` (None: for good)."""
        raise NotImplementedError

    def change(self, tick: int, stall: int = 0, factor: float = 1.0) -> None:
        """A stall (+1 starts, -1 ends) or a slowdown by ``factor``, now, at ``tick``."""
        raise NotImplementedError


# -- helpers ------------------------------------------------------------------------------


def arrival_delays(
    k: int, count: int, tick_s: float, even: bool, rng: np.random.Generator, now: float
) -> list[float]:
    """Seconds from ``now`` (tick ``k``'s start) to each of its ``count`` arrivals, in
    order: uniform random instants in the tick (a Poisson process), or evenly spaced."""
    if not count:
        return []
    base = k * tick_s
    if even:
        offsets = (np.arange(count) + 0.5) * (tick_s / count)
    else:
        offsets = np.sort(rng.random(count)) * tick_s
    return [max(0.0, base + off - now) for off in offsets.tolist()]


def run_kernel(kernel: Kernel) -> None:
    """Run the kernel with the cyclic garbage collector off: a run allocates hundreds of
    thousands of short-lived URLs and no cycles among them."""
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        kernel.run()
    finally:
        if gc_was_on:
            gc.enable()


def rates_of(changes: list[tuple[int, float]], n: int) -> np.ndarray:
    """Capacity per second in force each tick, from (tick, rate) changes."""
    rates = np.zeros(n)
    for (t0, rate), (t1, _) in itertools.pairwise([*changes, (n, 0.0)]):
        rates[t0:t1] = rate
    return rates


def capacity_of(changes: list[tuple[int, float]], n: int, tick_ms: int) -> np.ndarray:
    """Whole URLs per tick from (tick, rate) changes, as the flow engine counts them."""
    out = np.zeros(n, dtype=np.int64)
    carry = 0.0
    for (t0, rate), (t1, _) in itertools.pairwise([*changes, (n, 0.0)]):
        if t1 > t0:
            out[t0:t1], carry = tick_quota(rate, tick_ms, t1 - t0, carry)
    return out


def latency_of(
    samples: Mapping[str, array[float]], ticks: Mapping[str, array[int]]
) -> dict[str, Samples]:
    """Per-URL latencies (s), by component, as the run record's samples in ms.

    The arrays are taken over, not copied: the samples become ms in place, and the
    ticks stay 4-byte integers. The engine must not append to them afterwards."""
    out = {}
    for name, values in samples.items():
        if len(values):
            ms = np.frombuffer(values, dtype=np.float64)
            ms *= 1000.0
            out[name] = Samples.of(np.frombuffer(ticks[name], dtype=np.intc), ms)
    return out
