"""The page store: object storage taking at most ``rps`` writes per second."""

from __future__ import annotations

import numpy as np
import simpy

from gym.components.base import Component, Ledger, RatedComponent
from gym.models import PageStoreConfig


class PageStore(RatedComponent):
    """Writes at most its capacity per tick; the rest fail (``store_overload``, or
    ``store_unavailable`` while stalled). A written page is served."""

    name = "page_store"
    causes = ("store_overload", "store_unavailable")

    def __init__(
        self,
        env: simpy.Environment,
        rng: np.random.Generator,
        ledger: Ledger,
        config: PageStoreConfig,
    ) -> None:
        super().__init__(env, rng, ledger, config.rps)
        self.upstream: Component | None = None  # the resolver or the async writer

    def _advance(self, t0: int, t1: int) -> None:
        assert self.upstream is not None
        self.served[t0:t1] = self._take(self.upstream.out[t0:t1], t0, t1, "store")
