"""The busy slots of a station with fixed services of at least a tick, walked tick by tick
(:class:`~gym.sim.flow.loss.LossStation`): counts of requests really held, not an Erlang
formula on an expected load."""

from __future__ import annotations

import math

import numpy as np

from gym.core.streams import substream
from gym.sim import erlang
from gym.sim.flow.base import IntArray, Ledger

#: A service's fraction of a tick is counted in these units: integers, so splitting a
#: stretch's takes between the ticks they end in comes out the same in one stride or many.
LATE_UNITS = 1 << 20


class SlotWalk:
    """A take holds its slot from its instant in its tick for the service time, so it ends
    in the tick a whole number of service ticks later or, for the fraction of the takes
    beyond them, in the next (a take at a uniform instant of its tick; the split is counted
    in whole URLs, the remainder carried). The busy slots at a tick's start and the ends
    within it are then counts, and so are the tick's arrivals.

    - Arrivals and ends in a **random order** (Poisson arrivals, ends of services begun at
      random instants): the tick turns away ``(M - free)+`` of its arrivals, ``M`` the
      highest point of the walk of +1 an arrival and -1 an end (Lindley), drawn from its
      law (:func:`~gym.sim.erlang.walk_overshoot`) with the station's own stream. A draw,
      not the mean: the mean would make the busy slots steadier than a station's are,
      and a steadier station loses less (4-7% less at 20 arrivals a tick).
    - A stream **smoother than Poisson** (``smooth``: strictly periodic, or paced and then
      thinned) does not come in a random order, and a random order would lose more than
      it does (10% more than D/D/c at 20 evenly spaced arrivals a tick; twice the request
      engine's loss behind a paced fleet and a cache): it loses its own figure,
      ``shares`` (D/D/c for a periodic stream, Hayward's Erlang B for a smooth one, from
      :mod:`gym.sim.erlang`), spread over its ticks with a carry, and at least what the
      slots cannot hold (what that adds is taken back from the figure's later losses).
    - ``never``: ticks a paced stream cannot fill, which lose nothing.

    The station never holds more than its slots, and a sliver of a service in a tick holds
    a sliver of a slot. Over a steady stretch this is the station itself, Erlang's B at its
    load; from empty it fills as a station does (100 slots of 10-minute writes take
    exactly 100), and nothing is owed at a run's end.
    """

    def __init__(self, slots: int, mean_ms: float, ledger: Ledger, rng: np.random.Generator):
        self.slots = slots
        self.mean_ms = mean_ms
        self.tick_ms = ledger.tick_ms
        self.rng = rng  # the station's: its own draws come from a stream within it
        self.busy = 0  # slots held at the end of the last tick walked
        self.ends = np.zeros(ledger.n_ticks + 1, dtype=np.int64)  # services ending each tick
        self.late = 0  # a URL's part (in 1 / LATE_UNITS) owed to the next tick's ends
        self.carry = 0.5  # a periodic stream's loss not yet a whole URL (rounded, not floored)
        self._spans: dict[float, tuple[int, int]] = {}  # factor -> whole ticks, fraction
        self._draws: np.random.Generator | None = None  # made at the first draw

    def span(self, factor: float) -> tuple[int, int]:
        """The service under slowdown ``factor``: whole ticks, and the fraction of a tick
        beyond them in 1 / LATE_UNITS."""
        span = self._spans.get(factor)
        if span is None:
            ticks = self.mean_ms * factor / self.tick_ms
            whole = math.floor(ticks + 1e-9)
            late = min(round((ticks - whole) * LATE_UNITS), LATE_UNITS)
            if late == LATE_UNITS:
                whole, late = whole + 1, 0
            span = self._spans[factor] = (whole, late)
        return span

    def book(self, taken: IntArray, factors: np.ndarray, t0: int) -> None:
        """Book ticks ``t0...``'s takes (every arrival taken) to end a service time later,
        and walk the busy count past them: as :meth:`step` books them, to the last URL."""
        first = float(factors[0])
        if (factors == first).all():
            whole_1, late_1 = self.span(first)
            whole = np.full(len(taken), whole_1, dtype=np.int64)
            late = np.full(len(taken), late_1, dtype=np.int64)
        else:
            spans = np.array([self.span(float(f)) for f in factors], dtype=np.int64)
            whole, late = spans[:, 0], spans[:, 1]
        wholes, parts = np.divmod(taken.astype(np.int64) * late, LATE_UNITS)
        owed = self.late + np.cumsum(parts)
        later = np.diff(np.cumsum(wholes) + owed // LATE_UNITS, prepend=0)
        self.late = int(owed[-1] % LATE_UNITS)
        ends = self.ends
        at = np.arange(t0, t0 + len(taken)) + whole
        ok = at < len(ends)
        np.add.at(ends, at[ok], (taken - later)[ok])
        ok = at + 1 < len(ends)
        np.add.at(ends, at[ok] + 1, later[ok])
        self.busy += int(taken.sum()) - int(ends[t0 : t0 + len(taken)].sum())

    def step(
        self,
        arriving: IntArray,
        down: np.ndarray,
        never: np.ndarray,
        smooth: np.ndarray,
        shares: np.ndarray,
        factors: np.ndarray,
        t0: int,
    ) -> IntArray:
        """The URLs turned away in each tick from ``t0`` on of ``arriving`` (none where
        ``down``: the caller fails those as unavailable, and no service starts)."""
        ends = self.ends
        n = len(ends)
        slots = self.slots
        busy, owed, carry = self.busy, self.late, self.carry
        lost = np.zeros(len(arriving), dtype=np.int64)
        last, (whole, late) = 1.0, self.span(1.0)
        for i, (k, off, paced, even, factor) in enumerate(
            zip(
                arriving.tolist(),
                down.tolist(),
                never.tolist(),
                smooth.tolist(),
                factors[t0 : t0 + len(arriving)].tolist(),
                strict=True,
            )
        ):
            j = t0 + i
            r = int(ends[j])
            take = 0 if off else k
            if take and not paced:
                free = slots - busy
                cut = 0
                if even:
                    carry += k * float(shares[i])
                    cut = min(max(math.floor(carry), k - r - max(free, 0), 0), k)
                    carry -= cut
                elif k > free:
                    if self._draws is None:
                        self._draws = substream(self.rng, "walk")
                    cut = int(erlang.walk_overshoot(k, r, free, float(self._draws.random())))
                lost[i] = cut
                take = k - cut
            busy += take - r
            if take:
                if factor != last:
                    last, (whole, late) = factor, self.span(factor)
                owed += take * late
                later, owed = divmod(owed, LATE_UNITS)
                if j + whole < n:
                    ends[j + whole] += take - later
                if j + whole + 1 < n:
                    ends[j + whole + 1] += later
        self.busy, self.late, self.carry = busy, owed, carry
        return lost
