"""Retries with backoff at a loss station (a service's calls, a store's writes).

A request that finds every slot busy, or the station down, waits and tries again, up to
the policy's attempts: retry r waits backoff x multiplier^(r - 1), drawn evenly within
plus or minus the jitter, to the nearest whole tick (at least one). Only a request that
fails its last try counts as failed. The retries arrive at the station beside the fresh
requests (:class:`RetryFeed` adds them to its input stream), so they take capacity and
add to its demand: a tight policy under a stall multiplies the load (a retry storm).

Which tries a tick's failures were is a multivariate hypergeometric draw over the tick's
arrivals by try (the station turns requests away without regard to their try).

Ledger: ``arrived`` counts first tries only; ``retries`` the later tries arriving,
``retried`` the failures that will be tried again; ``backlog`` the requests waiting to be
tried again (in flight at the end of the run).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import simpy

from gym.sim.flow.base import Component, IntArray, Ledger

if TYPE_CHECKING:
    from gym.models import RetryPolicy
    from gym.sim.flow.loss import LossStation


class RetryFeed(Component):
    """A station's input: what its upstream sends plus the retries due each tick."""

    name = "retry_feed"

    def __init__(self, env: simpy.Environment, ledger: Ledger, upstream: Component, tries: int):
        super().__init__(env, np.random.default_rng(0), ledger)  # draws nothing
        self.upstream = upstream
        #: Arrivals per tick of try 2, 3, ... (index 0 is the first retry).
        self.due = [ledger.zeros() for _ in range(tries - 1)]

    def _advance(self, t0: int, t1: int) -> None:
        up = self.upstream
        due = sum((d[t0:t1] for d in self.due), np.zeros(t1 - t0, dtype=np.int64))
        self.out[t0:t1] = up.out[t0:t1] + due
        # Retries come back spread by their jitter: counted as Poisson, added to the stream.
        mean = up.expected[t0:t1] + due
        with np.errstate(invalid="ignore", divide="ignore"):
            weighted = up.dispersion[t0:t1] * up.expected[t0:t1] + due
            self.dispersion[t0:t1] = np.where(mean > 0, weighted / mean, 1.0)
        self.expected[t0:t1] = mean
        self.jitter[t0:t1] = up.jitter[t0:t1]
        retrying = due > 0
        self.pace[t0:t1] = np.where(retrying, np.inf, up.pace[t0:t1])
        self.depth[t0:t1] = up.depth[t0:t1]
        self.periodic[t0:t1] = up.periodic[t0:t1] & ~retrying
        self.fleet_bound[t0:t1] = False


class Retries:
    """The retry policy of one loss station in the flow engine."""

    def __init__(self, station: LossStation, policy: RetryPolicy, rng: np.random.Generator) -> None:
        assert station.upstream is not None
        self.station = station
        self.policy = policy
        self.rng = rng
        ledger = station.ledger
        self.tick_s = ledger.tick_ms / 1000.0
        self.feed = RetryFeed(station.env, ledger, station.upstream, policy.attempts)
        station.upstream = self.feed
        self.retried = ledger.zeros()
        self.arriving = ledger.zeros()  # later tries arriving each tick
        #: The shortest wait in ticks: failures of a stretch of ticks no longer than it
        #: come back after the stretch, so the engine advances in strides of at most it.
        self.min_ticks = max(1, math.floor(policy.backoff_s * (1.0 - policy.jitter) / self.tick_s))

    def settle(self, t0: int, t1: int) -> None:
        """After the station took ticks [t0, t1): send each failure with tries left back
        after its wait, and count only the last tries' failures as failed."""
        st, feed, policy = self.station, self.feed, self.policy
        n = st.ledger.n_ticks
        fresh = feed.upstream.out[t0:t1]
        later = [d[t0:t1] for d in feed.due]
        self.arriving[t0:t1] = sum(later, np.zeros(t1 - t0, dtype=np.int64))
        st.arrived[t0:t1] = fresh  # first tries; later ones are in ``retries``
        overload, unavailable = st.causes[:2]
        lost = st.failed[overload][t0:t1] + st.failed[unavailable][t0:t1]
        retried = np.zeros(t1 - t0, dtype=np.int64)
        for i in np.flatnonzero(lost):
            by_try = np.array([fresh[i], *(d[i] for d in later)], dtype=np.int64)
            failed = self.rng.multivariate_hypergeometric(by_try, int(lost[i]))
            for k, count in enumerate(failed[:-1]):  # try k + 1 failed; try k + 2 is due
                if not count:
                    continue
                wait = policy.wait_s(k + 1) * self.rng.uniform(
                    1.0 - policy.jitter, 1.0 + policy.jitter, int(count)
                )
                ticks = np.maximum(self.min_ticks, np.rint(wait / self.tick_s))
                at = t0 + i + ticks.astype(np.int64)
                np.add.at(feed.due[k], at[at < n], 1)
                retried[i] += int(count)
        self.retried[t0:t1] = retried
        # A tick is down or not: its failures are all of one cause.
        down = st.failed[unavailable][t0:t1] > 0
        st.failed[unavailable][t0:t1] -= np.where(down, retried, 0)
        st.failed[overload][t0:t1] -= np.where(down, 0, retried)
        before = int(st.backlog[t0 - 1]) if t0 > 0 else 0
        st.backlog[t0:t1] = before + np.cumsum(retried - self.arriving[t0:t1])

    def extra(self) -> dict[str, IntArray]:
        return {"retries": self.arriving, "retried": self.retried}
