"""The external DNS resolver: a concurrency-limited service without a queue."""

from __future__ import annotations

import numpy as np
import simpy

from gym.components.base import Component, Ledger, RatedComponent


class Resolver(RatedComponent):
    """Resolves at most its capacity per tick; lookups beyond it fail (``resolver_overload``,
    or ``resolver_unavailable`` while stalled). A slowdown by f divides capacity by f."""

    name = "resolver"
    causes = ("resolver_overload", "resolver_unavailable")

    def __init__(
        self,
        env: simpy.Environment,
        rng: np.random.Generator,
        ledger: Ledger,
        rps: float,
        upstream: Component,
    ) -> None:
        super().__init__(env, rng, ledger, rps)
        self.upstream = upstream

    def _advance(self, t0: int, t1: int) -> None:
        self.out[t0:t1] = self._take(self.upstream.out[t0:t1], t0, t1, "resolver")
