"""The numbers the engines' grid gives a design: concurrent slots of a station, the
start bucket's depth of a paced fleet, the most a paced stream brings in a window, the store slots a
write buffer may fill. Both engines use them; :mod:`gym.analysis.rounding` warns where
they move a figure the design states."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gym.models.common import NEARLY_FIXED_CV

#: Service times less variable than this (coefficient of variation) have their starts paced
#: in the request engine: nearly fixed times stay in step and would start in bursts.
PACED_BELOW_CV = NEARLY_FIXED_CV


#: The request engine's start bucket (a paced fleet's starts), as a share of one
#: tick's starts, at least one token: no window of w seconds starts more than
#: rate x w + that depth services (:func:`paced_most`).
PACING_DEPTH = 0.05


def start_depth(rate_per_s: Any, tick_ms: int) -> Any:
    """The request engine's start bucket depth at ``rate_per_s``: PACING_DEPTH of a
    tick's starts, at least one token (numbers or numpy arrays)."""
    return np.maximum(1.0, PACING_DEPTH * rate_per_s * tick_ms / 1000.0)


def paced_most(rate_per_s: Any, depth: Any, window_s: Any) -> Any:
    """The most URLs a paced stream can bring in any window of ``window_s`` (open at its
    start: a service that ends as another begins has freed its slot): a token bucket at
    ``rate_per_s`` holding ``depth`` tokens starts at most floor(depth + rate x window) in
    it; evenly spaced arrivals are a bucket one token deep (numbers or numpy arrays)."""
    return np.floor(depth + rate_per_s * window_s - 1e-9)


def flush_slots(flush_ceiling: float, slots: int) -> int:
    """The store slots the request engine's write buffer may fill: floor(ceiling x slots), at
    least one (else a store of one or two slots would never take a held write back)."""
    return max(1, math.floor(flush_ceiling * slots + 1e-9))


def station_slots(rate: float, mean_ms: float) -> int:
    """The request engine's concurrent slots for a station: round(rate x mean service
    time), at least one, so its capacity stays near what the design says."""
    return max(1, round(rate * mean_ms / 1000.0))


def ramp_openings(rng: Any, slots: int, rps_per_replica: float) -> Any:
    """When a replica back from a crash opens its ``slots`` (seconds after its return),
    in both engines (the same draws, from the fleet's stream ``ramp``): each at a uniform
    instant within ``slots / rps_per_replica``, so it ramps up at ``rps_per_replica`` on
    average. Not all at once: with URLs waiting they would start together and, with fixed
    times, end and start again together every service time, a burst the stations
    downstream would meet again and again. Nor evenly spaced: an evenly spaced stream's
    arrivals and its own ends interleave exactly at a fixed-time station downstream, a
    coincidence of the model that no real restart keeps (and that the flow engine's walk,
    which takes a tick's arrivals and ends in a random order, cannot see)."""
    return rng.uniform(0.0, slots / rps_per_replica, size=slots)
