"""The busy slots of a station with fixed services of at least a tick, walked tick by tick
(:class:`~gym.sim.flow.loss.LossStation`): counts of requests really held, not an Erlang
formula on an expected load."""

from __future__ import annotations

import math

import numpy as np

from gym.core.streams import substream
from gym.sim import erlang
from gym.sim.flow.base import IntArray, Ledger


class SlotWalk:
    """A take holds its slot from its instant in its tick for the service time, so it ends
    in the tick a whole number of service ticks later or, with the chance of the fraction
    of a tick beyond them, in the next (a take at a uniform instant of its tick: a tick's
    takes are split between the two by a binomial draw from a stream of the station's
    own; a fixed split, the remainder carried, makes the busy slots steadier than a
    station's, and 50 slots of 15 ms then lost 0.68 of what they do). The busy slots at a
    tick's start and the ends within it are then counts, and so are the tick's arrivals.

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

    The station never holds more than its slots, and a sliver of a service beyond whole
    ticks holds a slot into the next tick for that share of its takes, not for all. Over a
    steady stretch of Poisson arrivals this is the station itself, Erlang's B at its load;
    from empty it fills as a station does (100 slots of 10-minute writes take exactly
    100), and nothing is owed at a run's end.
    """

    def __init__(self, slots: int, mean_ms: float, ledger: Ledger, rng: np.random.Generator):
        self.slots = slots
        self.mean_ms = mean_ms
        self.tick_ms = ledger.tick_ms
        self.rng = rng  # the station's: its own draws come from a stream within it
        self.busy = 0  # slots held at the end of the last tick walked
        self.ends = np.zeros(ledger.n_ticks + 1, dtype=np.int64)  # services ending each tick
        self.carry = 0.5  # a periodic stream's loss not yet a whole URL (rounded, not floored)
        self._spans: dict[float, tuple[int, float]] = {}  # factor -> whole ticks, fraction
        self._draws: np.random.Generator | None = None  # the tick's loss (made when needed)
        self._splits: np.random.Generator | None = None  # the takes' ends (made when needed)

    def span(self, factor: float) -> tuple[int, float]:
        """The service under slowdown ``factor``: whole ticks, and the fraction of a tick
        beyond them (the chance a take at a uniform instant of its tick ends a tick later)."""
        span = self._spans.get(factor)
        if span is None:
            ticks = self.mean_ms * factor / self.tick_ms
            whole = math.floor(ticks + 1e-9)
            late = ticks - whole
            if late < 1e-9:
                late = 0.0
            elif late > 1.0 - 1e-9:
                whole, late = whole + 1, 0.0
            span = self._spans[factor] = (whole, late)
        return span

    def _split(self) -> np.random.Generator:
        """The stream that splits takes between the two ticks they may end in."""
        if self._splits is None:
            self._splits = substream(self.rng, "walk split")
        return self._splits

    def book(self, taken: IntArray, factors: np.ndarray, t0: int) -> None:
        """Book ticks ``t0...``'s takes (every arrival taken) to end a service time later,
        and walk the busy count past them: as :meth:`step` books them, to the last URL
        (the same draws, in the same order)."""
        first = float(factors[0])
        if (factors == first).all():
            whole_1, late_1 = self.span(first)
            whole = np.full(len(taken), whole_1, dtype=np.int64)
            late = np.full(len(taken), late_1)
        else:
            spans = [self.span(float(f)) for f in factors]
            whole = np.array([w for w, _ in spans], dtype=np.int64)
            late = np.array([f for _, f in spans])
        later = np.zeros(len(taken), dtype=np.int64)
        split = (taken > 0) & (late > 0.0)
        if split.any():
            later[split] = self._split().binomial(taken[split], late[split])
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
        busy, carry = self.busy, self.carry
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
                later = int(self._split().binomial(take, late)) if late else 0
                if j + whole < n:
                    ends[j + whole] += take - later
                if j + whole + 1 < n:
                    ends[j + whole + 1] += later
        self.busy, self.carry = busy, carry
        return lost
