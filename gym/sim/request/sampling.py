"""Service-time samplers for the request engine: draws in batches, hands them out one by one."""

from __future__ import annotations

import math

import numpy as np

from gym.models import ServiceTime

_BATCH = 8192


class Sampler:
    """Service times in seconds from a :class:`ServiceTime`, from an explicit generator."""

    def __init__(self, service: ServiceTime, rng: np.random.Generator) -> None:
        self.mean_s = service.mean_ms / 1000.0
        self.dist = service.dist
        self.rng = rng
        cv = service.cv_value
        self._sigma = math.sqrt(math.log1p(cv * cv)) if self.dist == "lognormal" else 0.0
        self._mu = math.log(self.mean_s) - self._sigma**2 / 2
        self._batch: list[float] = []

    def __call__(self) -> float:
        if self.dist == "deterministic":
            return self.mean_s
        if not self._batch:
            if self.dist == "exponential":
                draws = self.rng.exponential(self.mean_s, size=_BATCH)
            else:
                draws = self.rng.lognormal(self._mu, self._sigma, size=_BATCH)
            self._batch = draws[::-1].tolist()
        return self._batch.pop()
