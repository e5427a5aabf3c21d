"""Latency: samples per component and end to end, and their mean and percentiles in ms.

The request engine measures every URL; the flow engine estimates from its per-tick
counts, every design alike (:mod:`gym.sim.flow.graph_latency`). Both hand over
:class:`Samples`, so statistics, tables, per-window columns and JSON are computed the
same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np

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
