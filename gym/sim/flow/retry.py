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
tried again (in flight at the end of the run). One run's station, or a batch's (each run
its own row and generator: the draws each makes alone).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy

from gym.sim.flow.base import NO_DRAWS, Component, IntArray, Ledger, PerRow, each_run

if TYPE_CHECKING:
    from gym.models import RetryPolicy
    from gym.sim.flow.loss import LossStation


class RetryFeed(Component):
    """A station's input: what its upstream sends plus the retries due each tick."""

    name = "retry_feed"

    def __init__(
        self,
        env: simpy.Environment,
        ledger: Ledger,
        upstream: Component,
        tries: int,
        rows: int | None = None,
    ) -> None:
        super().__init__(env, NO_DRAWS, ledger, rows=rows)
        self.upstream = upstream
        #: Arrivals per tick of try 2, 3, ... (index 0 is the first retry).
        self.due = [ledger.zeros(rows=rows) for _ in range(tries - 1)]

    def _advance(self, t0: int, t1: int) -> None:
        up = self.upstream
        fresh = up.out[..., t0:t1]
        due = sum((d[..., t0:t1] for d in self.due), np.zeros_like(fresh))
        self.out[..., t0:t1] = fresh + due
        # Retries come back spread by their jitter: counted as Poisson, added to the stream.
        expected = up.expected[..., t0:t1]
        mean = expected + due
        with np.errstate(invalid="ignore", divide="ignore"):
            weighted = up.dispersion[..., t0:t1] * expected + due
            self.dispersion[..., t0:t1] = np.where(mean > 0, weighted / mean, 1.0)
        self.expected[..., t0:t1] = mean
        self.jitter[..., t0:t1] = up.jitter[..., t0:t1]
        retrying = due > 0
        self.pace[..., t0:t1] = np.where(retrying, np.inf, up.pace[..., t0:t1])
        self.depth[..., t0:t1] = up.depth[..., t0:t1]
        self.periodic[..., t0:t1] = up.periodic[..., t0:t1] & ~retrying
        self.fleet_bound[..., t0:t1] = False


class Retries:
    """The retry policy of one loss station in the flow engine."""

    def __init__(
        self, station: LossStation, policy: RetryPolicy, rng: np.random.Generator | PerRow
    ) -> None:
        assert station.upstream is not None
        self.station = station
        self.policy = policy
        self.rng = rng  # (each run's, in a batch)
        ledger, rows = station.ledger, station.rows
        self.tick_s = ledger.tick_ms / 1000.0
        self.feed = RetryFeed(station.env, ledger, station.upstream, policy.attempts, rows)
        station.upstream = self.feed
        self.retried = ledger.zeros(rows=rows)
        self.arriving = ledger.zeros(rows=rows)  # later tries arriving each tick
        #: The shortest wait in ticks: failures of a stretch of ticks no longer than it
        #: come back after the stretch, so the engine advances in strides of at most it.
        self.min_ticks = max(1, math.floor(policy.backoff_s * (1.0 - policy.jitter) / self.tick_s))

    def settle(self, t0: int, t1: int) -> None:
        """After the station took ticks [t0, t1): send each failure with tries left back
        after its wait, and count only the last tries' failures as failed."""
        st, feed = self.station, self.feed
        fresh = feed.upstream.out[..., t0:t1]
        later = [d[..., t0:t1] for d in feed.due]
        self.arriving[..., t0:t1] = sum(later, np.zeros_like(fresh))
        st.arrived[..., t0:t1] = fresh  # first tries; later ones are in ``retries``
        overload, unavailable = st.causes[:2]
        lost = st.failed[overload][..., t0:t1] + st.failed[unavailable][..., t0:t1]
        retried = np.zeros_like(fresh)
        for k, rng in each_run(self.rng):
            self._send_back(rng, k, fresh[k], [d[k] for d in later], lost[k], retried[k], t0)
        self.retried[..., t0:t1] = retried
        # A tick is down or not: its failures are all of one cause.
        down = st.failed[unavailable][..., t0:t1] > 0
        st.failed[unavailable][..., t0:t1] -= np.where(down, retried, 0)
        st.failed[overload][..., t0:t1] -= np.where(down, 0, retried)
        before = st.backlog[..., t0 - 1, None] if t0 > 0 else 0
        st.backlog[..., t0:t1] = before + np.cumsum(retried - self.arriving[..., t0:t1], axis=-1)

    def _send_back(
        self,
        rng: np.random.Generator,
        k: Any,
        fresh: IntArray,
        later: list[IntArray],
        lost: IntArray,
        retried: IntArray,
        t0: int,
    ) -> None:
        """Run ``k``'s failures in ticks t0...: which try each was, and when those with
        tries left come back (counted in ``retried``, one run's row, in place)."""
        policy, due = self.policy, [d[k] for d in self.feed.due]
        n = self.station.ledger.n_ticks
        for i in np.flatnonzero(lost).tolist():
            by_try = np.array([fresh[i], *(d[i] for d in later)], dtype=np.int64)
            failed = rng.multivariate_hypergeometric(by_try, int(lost[i]))
            for j, count in enumerate(failed[:-1].tolist()):  # try j + 1 failed; j + 2 due
                if not count:
                    continue
                wait = policy.wait_s(j + 1) * rng.uniform(
                    1.0 - policy.jitter, 1.0 + policy.jitter, count
                )
                ticks = np.maximum(self.min_ticks, np.rint(wait / self.tick_s))
                at = t0 + i + ticks.astype(np.int64)
                np.add.at(due[j], at[at < n], 1)
                retried[i] += count

    def extra(self) -> dict[str, IntArray]:
        """The later tries arriving and the failures to be tried again, per tick (each
        run's row, in a batch: a dict of arrays a run's view reads its row of)."""
        return {"retries": self.arriving, "retried": self.retried}
