"""The DNS + seen-URL cache: a hit is served at once, a miss goes on to the resolver."""

from __future__ import annotations

import numpy as np
import simpy

from gym.components.base import Ledger, LossStation, thinned
from gym.models import ServiceTime


class Cache(LossStation):
    """Looks up what finds a free slot (Erlang loss; the rest fail: ``cache_overload``, or
    ``cache_unavailable`` while stalled); hits among the lookups are Binomial(n, hit_ratio)."""

    name = "cache"
    causes = ("cache_overload", "cache_unavailable")

    def __init__(
        self,
        env: simpy.Environment,
        rng: np.random.Generator,
        ledger: Ledger,
        hit_ratio: float,
        lookups_rps: float,
        service: ServiceTime,
    ) -> None:
        super().__init__(env, rng, ledger, lookups_rps, service)
        self.hit_ratio = hit_ratio

    def _advance(self, t0: int, t1: int) -> None:
        assert self.upstream is not None
        looked_up = self._take(self.upstream.out[t0:t1], t0, t1)
        hits = self.rng.binomial(looked_up, self.hit_ratio)
        self.served[t0:t1] = hits
        self.out[t0:t1] = looked_up - hits
        self.dispersion[t0:t1] = thinned(self.dispersion[t0:t1], 1.0 - self.hit_ratio)
        self.expected[t0:t1] *= 1.0 - self.hit_ratio
