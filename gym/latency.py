"""Latency: samples per component and end to end, and their mean and percentiles in ms.

The request engine measures every URL; the flow engine estimates from its per-tick
counts (see ``estimate_flow``). Both hand over :class:`Samples`, so statistics, tables,
per-window columns and JSON are computed the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gym.components.fetchers import fetch_ticks
from gym.models import Design, Scenario

if TYPE_CHECKING:
    from gym.record import RunRecord

PERCENTILES = (50, 95, 99)


@dataclass(frozen=True)
class LatencyStats:
    """Mean and percentiles of a latency, in milliseconds, over ``count`` URLs."""

    mean: float
    p50: float
    p95: float
    p99: float
    count: int

    def to_json(self) -> dict[str, float | int]:
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


@dataclass(frozen=True)
class Samples:
    """Latencies in ms, each with the tick it belongs to and a weight (URLs it stands for)."""

    ticks: np.ndarray
    values_ms: np.ndarray
    weights: np.ndarray

    @classmethod
    def of(cls, ticks: object, values_ms: object, weights: object | None = None) -> Samples:
        t = np.asarray(ticks, dtype=np.int64)
        v = np.asarray(values_ms, dtype=float)
        w = np.ones(len(v)) if weights is None else np.asarray(weights, dtype=float)
        keep = w > 0
        return cls(t[keep], v[keep], w[keep])

    def stats(self) -> LatencyStats | None:
        return LatencyStats.of(self.values_ms, self.weights)

    def per_window(self, ticks_per_window: int, n_windows: int) -> tuple[np.ndarray, np.ndarray]:
        """Mean and 99th percentile per window (NaN where no URL counts)."""
        mean = np.full(n_windows, np.nan)
        p99 = np.full(n_windows, np.nan)
        window = self.ticks // ticks_per_window
        order = np.lexsort((self.values_ms, window))
        w_sorted, v_sorted, wt_sorted = window[order], self.values_ms[order], self.weights[order]
        bounds = np.searchsorted(w_sorted, np.arange(n_windows + 1))
        for i in range(n_windows):
            a, b = bounds[i], bounds[i + 1]
            if b > a:
                v, wt = v_sorted[a:b], wt_sorted[a:b]
                total = wt.sum()
                mean[i] = float((v * wt).sum() / total)
                cw = np.cumsum(wt)
                p99[i] = float(v[min(int(np.searchsorted(cw, 0.99 * total)), v.size - 1)])
        return mean, p99


def estimate_flow(
    record: RunRecord, design: Design, scenario: Scenario, warmup_s: float = 0.0
) -> dict[str, Samples]:
    """The flow engine's latency estimate, from its per-tick counts.

    Queues (the frontier, the async writer) are first in, first out: the URLs that
    entered in tick k leave in the first tick by which the queue has handed out as many
    URLs as had entered up to the middle of tick k. Their wait is the difference, in
    ticks (0 when they leave in the tick they came). When the hand-out rate is steady
    this equals backlog / rate; unlike that ratio, it stays right when the rate changes
    (after a crash) or is 0 for a while (a stall). URLs still queued at the end are left
    out. Fetches take the fetch time; the cache, the resolver and the store have no queue
    in the flow engine, so their latency is their mean service time (the resolver's
    multiplied by any slowdown in force). End to end: frontier wait + fetch + lookup for
    hits, + resolver + writer wait + store write for misses, over served URLs, by the
    tick they finished. The tails come from the queues only: the flow engine has no
    service-time variability (the request engine does).
    """
    tl = record.timeline
    c = record.components
    start = min(tl.to_tick(warmup_s), tl.n_ticks)
    frontier = c["frontier"]
    entered = frontier.arrived + frontier.extra["requeued"] - frontier.failed["frontier_overflow"]
    front_wait, front_left = _fifo_wait_ms(entered, frontier.processed, tl.tick_ms)
    ticks = np.arange(tl.n_ticks)[start:]
    out: dict[str, Samples] = {}
    out["frontier"] = Samples.of(ticks, front_wait[start:], (entered * front_left)[start:])
    fetch = design.fetchers.service.mean_ms
    lookup = design.cache.service.mean_ms
    store = design.page_store.service.mean_ms
    out["fetchers"] = _constant(ticks, fetch, c["fetchers"].processed[start:])
    out["cache"] = _constant(ticks, lookup, c["cache"].processed[start:])
    resolver = c["resolver"]
    rate = resolver.extra["rate"]
    res_ms = scenario.resolver.service.mean_ms * np.where(
        rate > 0, scenario.resolver.rps / np.maximum(rate, 1e-12), 1.0
    )
    out["resolver"] = Samples.of(ticks, res_ms[start:], resolver.processed[start:])

    # Frontier wait of the URLs finishing at the cache in tick j: they left the frontier
    # one fetch earlier.
    lag = fetch_ticks(fetch, tl.tick_ms)
    waited = np.concatenate([np.zeros(lag), front_wait])[: tl.n_ticks]
    upstream = waited + fetch + lookup
    values = [upstream]
    weights = [c["cache"].served.astype(float)]
    miss = upstream + res_ms + store
    if "async_writer" in c:
        w = c["async_writer"]
        held = (w.extra["held_in"] - w.failed["writer_overflow"]).astype(float)
        hold_ms, flushed = _fifo_wait_ms(
            w.extra["held_in"] - w.failed["writer_overflow"], w.extra["flushed"], tl.tick_ms
        )
        held = held * flushed
        direct = (w.arrived - w.extra["held_in"]).astype(float)
        out["async_writer"] = Samples.of(
            np.concatenate([ticks, ticks]),
            np.concatenate([np.zeros(tl.n_ticks - start), hold_ms[start:]]),
            np.concatenate([direct[start:], held[start:]]),
        )
        values += [miss, miss + hold_ms]
        weights += [direct, held]
    else:
        values.append(miss)
        weights.append(c["page_store"].served.astype(float))
    out["page_store"] = _constant(ticks, store, c["page_store"].processed[start:])
    out["end_to_end"] = Samples.of(
        np.concatenate([ticks] * len(values)),
        np.concatenate([v[start:] for v in values]),
        np.concatenate([w[start:] for w in weights]),
    )
    return {name: samples for name, samples in out.items() if samples.weights.size}


def _fifo_wait_ms(
    entered: np.ndarray, left: np.ndarray, tick_ms: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per tick of entry, the wait of a FIFO queue's URLs (the middle one's), in ms, and
    whether they had left by the end (those still queued are left out of the stats)."""
    cum_in = np.cumsum(entered)
    cum_out = np.cumsum(left)
    middle = cum_in - entered / 2.0
    leave = np.searchsorted(cum_out, middle, side="left")
    gone = leave < len(entered)
    ticks = np.arange(len(entered))
    wait = np.where(gone, leave - ticks, 0).clip(min=0)
    return wait * float(tick_ms), gone


def _constant(ticks: np.ndarray, ms: float, counts: np.ndarray) -> Samples:
    return Samples.of(ticks, np.full(len(ticks), ms), counts)
