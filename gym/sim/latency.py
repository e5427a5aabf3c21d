"""Latency: samples per component and end to end, and their mean and percentiles in ms.

The request engine measures every URL; the flow engine estimates from its per-tick
counts (see ``estimate_flow``). Both hand over :class:`Samples`, so statistics, tables,
per-window columns and JSON are computed the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gym.models import Design, Scenario
from gym.sim.timeline import fetch_ticks

if TYPE_CHECKING:
    from gym.sim.record import RunRecord

PERCENTILES = (50, 95, 99)


@dataclass(frozen=True)
class LatencyStats:
    """Mean and percentiles of a latency, in milliseconds, over ``count`` URLs."""

    mean: float
    p50: float
    p95: float
    p99: float
    count: int

    def to_dict(self) -> dict[str, float | int]:
        return {
            "mean": self.mean,
            "p50": self.p50,
            "p95": self.p95,
            "p99": self.p99,
            "count": self.count,
        }

    @classmethod
    def of(cls, values_ms: np.ndarray, weights: np.ndarray | None = None) -> LatencyStats | None:
        """Stats of samples (optionally weighted); None when there are none."""
        values_ms = np.asarray(values_ms, dtype=float)
        if weights is None:
            if values_ms.size == 0:
                return None
            p50, p95, p99 = np.percentile(values_ms, PERCENTILES)
            return cls(
                float(values_ms.mean()), float(p50), float(p95), float(p99), int(values_ms.size)
            )
        weights = np.asarray(weights, dtype=float)
        keep = weights > 0
        values_ms, weights = values_ms[keep], weights[keep]
        total = weights.sum()
        if total <= 0:
            return None
        order = np.argsort(values_ms, kind="stable")
        v, cw = values_ms[order], np.cumsum(weights[order])
        p50, p95, p99 = (
            float(v[min(int(np.searchsorted(cw, q / 100 * total)), v.size - 1)])
            for q in PERCENTILES
        )
        mean = float((values_ms * weights).sum() / total)
        return cls(mean, p50, p95, p99, round(float(total)))

    @classmethod
    def of_counted(cls, values_ms: np.ndarray) -> LatencyStats | None:
        """:meth:`of` with every sample weighing 1, without a weights array: the same
        figures (the percentile is the sample where the running count reaches it, not
        interpolated), in less memory."""
        n = values_ms.size
        if n == 0:
            return None
        at = [_counted_index(q / 100 * n, n) for q in PERCENTILES]
        p50, p95, p99 = (float(x) for x in np.partition(values_ms, at)[at])
        return cls(float(values_ms.sum() / n), p50, p95, p99, n)


def _counted_index(x: float, n: int) -> int:
    """Where a running count 1, 2, ..., n first reaches ``x``: ``np.searchsorted`` of the
    cumulative weights when every weight is 1 (the last sample at most)."""
    return min(max(0, math.ceil(x) - 1), n - 1)


@dataclass(frozen=True)
class Samples:
    """Latencies in ms, each with the tick it belongs to and a weight (URLs it stands for;
    None: each sample is one URL, as the request engine measures them)."""

    ticks: np.ndarray
    values_ms: np.ndarray
    weights: np.ndarray | None

    @classmethod
    def of(cls, ticks: object, values_ms: object, weights: object | None = None) -> Samples:
        t = np.asarray(ticks)
        if t.dtype.kind not in "iu":
            t = t.astype(np.int64)
        v = np.asarray(values_ms, dtype=float)
        if weights is None:  # every sample counts once: no copies to filter
            return cls(t, v, None)
        w = np.asarray(weights, dtype=float)
        keep = w > 0
        return cls(t[keep], v[keep], w[keep])

    @property
    def size(self) -> int:
        """How many samples (not URLs: a weighted sample may stand for a fraction)."""
        return int(self.values_ms.size)

    def stats(self) -> LatencyStats | None:
        if self.weights is None:
            return LatencyStats.of_counted(self.values_ms)
        return LatencyStats.of(self.values_ms, self.weights)

    def per_window(self, ticks_per_window: int, n_windows: int) -> tuple[np.ndarray, np.ndarray]:
        """Mean and 99th percentile per window (NaN where no URL counts)."""
        mean = np.full(n_windows, np.nan)
        p99 = np.full(n_windows, np.nan)
        window = self.ticks // ticks_per_window
        order = np.lexsort((self.values_ms, window))
        w_sorted, v_sorted = window[order], self.values_ms[order]
        wt_sorted = None if self.weights is None else self.weights[order]
        bounds = np.searchsorted(w_sorted, np.arange(n_windows + 1))
        for i in range(n_windows):
            a, b = bounds[i], bounds[i + 1]
            if b > a:
                v = v_sorted[a:b]
                if wt_sorted is None:  # each sample one URL
                    mean[i] = float(v.sum() / v.size)
                    p99[i] = float(v[_counted_index(0.99 * v.size, v.size)])
                    continue
                wt = wt_sorted[a:b]
                total = wt.sum()
                mean[i] = float((v * wt).sum() / total)
                cw = np.cumsum(wt)
                p99[i] = float(v[min(int(np.searchsorted(cw, 0.99 * total)), v.size - 1)])
        return mean, p99


class Deferred(Mapping[str, "Samples"]):
    """Latency samples worked out on first use: the flow engine's estimate costs about a
    tenth of a run, and a sweep or the optimizer never looks at it."""

    def __init__(self, compute: Callable[[], dict[str, Samples]]) -> None:
        self._compute: Callable[[], dict[str, Samples]] | None = compute
        self._samples: dict[str, Samples] = {}

    def _get(self) -> dict[str, Samples]:
        if self._compute is not None:
            self._samples, self._compute = self._compute(), None
        return self._samples

    def __getitem__(self, name: str) -> Samples:
        return self._get()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())


def estimate_flow(
    record: RunRecord, design: Design, scenario: Scenario, warmup_s: float = 0.0
) -> dict[str, Samples]:
    """The flow engine's latency estimate, from its per-tick counts.

    Queues (the frontier, the async writer) are first in, first out, matched URL by URL
    on their cumulative counts (see :func:`fifo_segments`): the URLs that entered in tick
    k and left in tick m waited m - k ticks. So the mean wait is the queue's mean backlog
    over its throughput (Little's law on the per-tick counts), and the wait stays right
    when the hand-out rate changes (after a crash) or is 0 for a while (a stall). URLs
    still queued at the end are left out. Fetches take the fetch time; the cache, the
    resolver and the store have no queue in the flow engine, so their latency is their
    mean service time (the resolver's multiplied by any slowdown in force), as is the
    seen set's of a design with the link-discovery loop (added end to end).

    End to end, over served URLs: the URLs finishing at the cache in tick j left the
    frontier in tick j - L (L = the fetch time in ticks), so they carry the frontier waits
    of the URLs that *left* it then; to that add fetch + lookup for hits, + resolver for
    pages whose body was stored already (content hashing), + store write for misses,
    + the writer's hold for held writes. Samples are filed by the tick the URL arrived, as
    in the request engine, and ``warmup_s`` drops URLs that arrived before it. The tails
    come from the queues only: the flow engine has no service-time variability.
    """
    tl = record.timeline
    c = record.components
    n = tl.n_ticks
    start = min(tl.to_tick(warmup_s), n)
    left = c["frontier"].processed
    f_in, f_out, f_w = fifo_segments(_entered(left, c["frontier"].backlog), left)
    f_wait = (f_out - f_in) * float(tl.tick_ms)
    out: dict[str, Samples] = {"frontier": _since(start, f_in, f_wait, f_w)}
    # The fetch as the engine held it: whole ticks (gym.analysis.rounding warns when that is not
    # the design's figure).
    lag = fetch_ticks(design.fetchers.service.mean_ms, tl.tick_ms)
    fetch = float(lag * tl.tick_ms)
    res_ms = _resolver_ms(record, scenario)
    out |= _stage_samples(record, design, start, fetch, res_ms)
    # Per tick j of finishing the fetch: what each way of being served adds to the
    # frontier wait (ms), and how many URLs took it.
    upstream = np.full(n, _seen_ms(design) + fetch + design.cache.service.mean_ms)
    resolved = upstream + res_ms
    # Finished at the cache, and at the resolver (bodies stored already: content hashing).
    paths = [(upstream, c["cache"].served), (resolved, c["resolver"].served)]
    writes, held, written = _write_paths(record, design, _ways(design, upstream, resolved), start)
    out |= written
    # The frontier waits of the URLs leaving it in tick m, as shares of that tick's URLs.
    share = f_w / np.maximum(left[f_out], 1)
    finish = f_out + lag  # the tick these URLs finish their fetch
    ok = finish < n
    fetched = _Fetched(f_in[ok], f_wait[ok], share[ok], finish[ok])
    out["end_to_end"] = _end_to_end(start, fetched, paths + writes, held)
    order = ["seen_set", *(name for name in out if name != "seen_set")]  # pipeline order
    return {name: out[name] for name in order if name in out and out[name].size}


#: Per tick: what a way of being served adds to the frontier wait (ms), and how many URLs
#: took it.
_Path = tuple[np.ndarray, np.ndarray]
#: Writes the async writer held: the tick they entered it, their time past the frontier
#: (ms), and how many.
_Held = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class _Fetched:
    """The frontier's runs of URLs whose fetch finished within the run: the tick they
    arrived, their frontier wait (ms), their share of the URLs that left it with them, and
    the tick their fetch finished (ascending)."""

    arrived: np.ndarray
    wait_ms: np.ndarray
    share: np.ndarray
    finish: np.ndarray


def _seen_ms(design: Design) -> float:
    """The link-discovery loop's seen set's mean lookup time (0 without the loop)."""
    return design.discovery.service.mean_ms if design.discovery is not None else 0.0


def _resolver_ms(record: RunRecord, scenario: Scenario) -> np.ndarray:
    """The resolver's mean service time each tick (ms), multiplied by any slowdown in
    force (its rate below the scenario's)."""
    rate = record.components["resolver"].extra["rate"]
    return scenario.resolver.service.mean_ms * np.where(
        rate > 0, scenario.resolver.rps / np.maximum(rate, 1e-12), 1.0
    )


def _stage_samples(
    record: RunRecord, design: Design, start: int, fetch: float, res_ms: np.ndarray
) -> dict[str, Samples]:
    """The fetchers', the cache's, the resolver's and the seen set's samples: each URL one
    took in a tick takes its mean time (the fetch as the engine held it)."""
    c = record.components
    n = record.timeline.n_ticks
    ticks = np.arange(n)
    lookup = design.cache.service.mean_ms
    out = {
        "fetchers": _since(start, ticks, np.full(n, fetch), c["fetchers"].processed),
        "cache": _since(start, ticks, np.full(n, lookup), c["cache"].processed),
        "resolver": _since(start, ticks, res_ms, c["resolver"].processed),
    }
    # The link-discovery loop's seen set: a lookup before the frontier (its mean time).
    if "seen_set" in c:
        seen = np.full(n, _seen_ms(design))
        out["seen_set"] = _since(start, ticks, seen, c["seen_set"].processed)
    return out


def _ways(
    design: Design, upstream: np.ndarray, resolved: np.ndarray
) -> list[tuple[np.ndarray, float]]:
    """The ways to a write, each with its share: through the resolver; with the
    link-discovery loop the cache is the DNS cache alone, and its hits (a share hit_ratio)
    go to the write without it."""
    hit = design.cache.hit_ratio if design.discovery is not None else 0.0
    return [(w, share) for w, share in ((upstream, hit), (resolved, 1.0 - hit)) if share]


def _write_paths(
    record: RunRecord, design: Design, ways: list[tuple[np.ndarray, float]], start: int
) -> tuple[list[_Path], list[_Held], dict[str, Samples]]:
    """The writes' paths (the store write added to each way), the writes the async writer
    held, and the writer's and the store's samples."""
    c = record.components
    n = record.timeline.n_ticks
    ticks = np.arange(n)
    store = design.page_store.service.mean_ms
    paths: list[_Path] = []
    held: list[_Held] = []
    out: dict[str, Samples] = {}
    if "async_writer" in c:
        w = c["async_writer"]
        w_in, w_out, w_w = fifo_segments(
            _entered(w.extra["flushed"], w.backlog), w.extra["flushed"]
        )
        hold_ms = (w_out - w_in) * float(record.timeline.tick_ms)
        direct = w.out - w.extra["flushed"]
        for way, share in ways:
            paths.append((way + store, direct * share))
            held.append((w_in, way[w_in] + hold_ms + store, w_w * share))
        out["async_writer"] = _since(
            start,
            np.concatenate([ticks, w_in]),
            np.concatenate([np.zeros(n), hold_ms]),
            np.concatenate([direct, w_w]),
        )
    else:
        for way, share in ways:
            paths.append((way + store, c["page_store"].served * share))
    out["page_store"] = _since(start, ticks, np.full(n, store), c["page_store"].processed)
    return paths, held, out


def _end_to_end(start: int, fetched: _Fetched, paths: list[_Path], held: list[_Held]) -> Samples:
    """End to end: each path's time added to the frontier waits of the URLs whose fetch
    finished in the tick it counts, and each held write's to those of the URLs whose fetch
    finished in the tick it entered the writer."""
    e_ticks: list[np.ndarray] = []
    e_values: list[np.ndarray] = []
    e_weights: list[np.ndarray] = []
    for extra_ms, count in paths:
        e_ticks.append(fetched.arrived)
        e_values.append(fetched.wait_ms + extra_ms[fetched.finish])
        e_weights.append(fetched.share * count[fetched.finish])
    for j, value, weight in held:
        # Held writes entered the writer in tick j: pair each writer segment with the
        # frontier waits of the URLs whose fetch finished in tick j.
        idx, reps = _finished_in(fetched.finish, j)
        e_ticks.append(fetched.arrived[idx])
        e_values.append(np.repeat(value, reps) + fetched.wait_ms[idx])
        e_weights.append(np.repeat(weight, reps) * fetched.share[idx])
    return _since(
        start, np.concatenate(e_ticks), np.concatenate(e_values), np.concatenate(e_weights)
    )


def _finished_in(finish: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pair each tick of ``j`` with the runs whose fetch finished in it (``finish``
    ascending): the runs' indices, in order, and how many each tick of ``j`` pairs with."""
    lo = np.searchsorted(finish, j, side="left")
    hi = np.searchsorted(finish, j, side="right")
    reps = hi - lo
    first = np.repeat(np.cumsum(reps) - reps, reps)
    idx = np.repeat(lo, reps) + np.arange(int(reps.sum())) - first
    return idx, reps


def fifo_segments(
    entered: np.ndarray, left: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Match a FIFO queue's URLs in to URLs out, from its per-tick counts.

    URL number x (counting from 1) entered in the first tick by which ``entered`` adds up
    to x, and left in the first tick by which ``left`` does. Between two consecutive
    cumulative counts of either, every URL entered and left in the same ticks, so the
    URLs that left split into runs: (tick in, tick out, how many), in order. URLs still
    queued at the end are in no run. Summed over the runs, (tick out - tick in) x how
    many is the sum of the backlog over the ticks: Little's law holds exactly.
    """
    cum_in = np.cumsum(np.asarray(entered, dtype=np.int64))
    cum_out = np.cumsum(np.asarray(left, dtype=np.int64))
    if cum_out.size == 0 or cum_out[-1] <= 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    total = int(cum_out[-1])
    # The distinct cumulative counts of both, ascending: np.union1d, whose np.unique
    # would import numpy.ma (45 ms, a tenth of a whole `gym run`).
    points = np.sort(np.concatenate((cum_in[cum_in < total], cum_out)))
    points = points[(np.diff(points, prepend=0) > 0) & (points > 0)]
    weight = np.diff(points, prepend=0)
    tick_in = np.searchsorted(cum_in, points, side="left")
    tick_out = np.searchsorted(cum_out, points, side="left")
    return tick_in, np.maximum(tick_out, tick_in), weight


def _entered(left: np.ndarray, backlog: np.ndarray) -> np.ndarray:
    """What entered a queue each tick: what left it plus the change in its backlog."""
    entered: np.ndarray = left + np.diff(backlog, prepend=0)
    return entered


def _since(start: int, ticks: np.ndarray, values_ms: np.ndarray, weights: np.ndarray) -> Samples:
    """Samples of the URLs that arrived in tick ``start`` or later (the warm-up cut)."""
    keep = np.asarray(ticks) >= start
    return Samples.of(
        np.asarray(ticks)[keep], np.asarray(values_ms)[keep], np.asarray(weights)[keep]
    )
