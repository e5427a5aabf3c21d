"""Unit arithmetic every kind prices with: whole units of a catalog, and what cache units
reach. Imports no kind, so a kind's declaration can use it."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gym.models import Catalog

#: The most cache units a hit ratio is looked for in.
MAX_CACHE_UNITS = 60


def cache_hit_ratio(units: int, catalog: Catalog) -> float:
    """Hit ratio ``units`` cache units reach: the first the base, each further halves misses."""
    return 1.0 - (1.0 - catalog.cache.base_hit_ratio) / float(2 ** (units - 1))


def cache_units(hit_ratio: float, catalog: Catalog) -> int | None:
    """Fewest cache units that reach ``hit_ratio``; None if no number of units does."""
    miss_wanted = 1.0 - hit_ratio
    base_miss = 1.0 - catalog.cache.base_hit_ratio
    for units in range(1, MAX_CACHE_UNITS + 1):
        # Compare miss ratios (relative tolerance for decimal inputs such as 0.96).
        if base_miss / float(2 ** (units - 1)) <= miss_wanted * (1 + 1e-9):
            return units
    return None


def units_for(amount: float, per_unit: float) -> int:
    """Units that provide ``amount``: whole units, at least one (a component that is there
    costs a unit, however little it does), with a relative tolerance for decimal inputs."""
    return max(1, math.ceil(amount / per_unit * (1 - 1e-12)))
