"""A loss station's ledger of the requests it really took
(:class:`~gym.sim.flow.loss.LossStation`): the slots they hold at the end of each tick
never exceed its slots."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gym.sim import erlang
from gym.sim.flow.base import IntArray, steps

#: A request this likely to hold its slot still counts as holding it, in the ledger of a
#: station with random services (:meth:`StationHold._hold`).
SURE = 0.99

#: What the ledger walks for one kind of kernel: the slots held at each tick's end (a list
#: where the kernels are short), the kernels cut to the stretch, as lists where they are
#: short, and each kernel's first tick (at least 1e-12).
Held = tuple[
    list[float] | np.ndarray, dict[float, np.ndarray], dict[float, list[float]], dict[float, float]
]


class StationHold:
    """The ledger's half of a loss station (``self`` is a
    :class:`~gym.sim.flow.loss.LossStation`, or one run of a batch of them)."""

    def _lose(
        self: Any,
        arriving: IntArray,
        loss: np.ndarray,
        down: np.ndarray,
        full: np.ndarray,
        t0: int,
        t1: int,
        lo: int,
    ) -> tuple[IntArray, IntArray]:
        """One run's takes and losses where no walk counts its busy slots: Erlang's loss
        ``loss`` of its arrivals in whole URLs (the fraction carried to the next stretch),
        none taken where ``down``, then kept to its slots by :meth:`_hold`."""
        lost, self._lost_carry = _whole_losses(self._lost_carry, arriving * loss)
        taken = np.where(down, 0, arriving - lost)
        held: tuple[IntArray, IntArray] = self._hold(taken, lost, full, t0, t1, lo)
        return held

    def _hold(
        self: Any, taken: IntArray, lost: IntArray, full: np.ndarray, t0: int, t1: int, lo: int
    ) -> tuple[IntArray, IntArray]:
        """The ledger of the requests really taken: the slots they hold at the end of each
        tick (each tick's takes weighted by the holding kernel) never exceed ``slots``.

        Where the expected load fills the station (``full``: the fill-up
        :meth:`_within_slots` finds, which Erlang's formula does not see) a tick takes what
        its arrivals need of the free slots, and the rest are turned away. Elsewhere the
        loss is Erlang's on the expected load, spread over the ticks in proportion to their
        arrivals; a tick whose random count overfills the slots has its excess turned away
        too. That excess is a loss Erlang's average already counts, so it is owed back:
        later ticks turn away that many fewer where the slots have room for them. The
        totals stay Erlang's, and the station holds at most its slots (with fixed services
        longer than a tick, exactly: 100 slots filled by 50 writes/s take exactly 100)."""
        off = t0 - lo
        factors = self.factors[lo:t1]
        history = self.processed[lo:t1].astype(np.float64)
        # A full tick's takes are decided below, from the room the others leave.
        history[off:] = np.where(full, 0, taken)
        held_now = erlang.offered_load(history, factors, self._holding)
        # A tick whose random count overfills the slots is cut to them. With fixed
        # services the weighted takes are the busy slots. With random ones they are not (a
        # take is made only where an earlier request has ended, which the chance each
        # still holds its slot does not know): cutting to whole free slots of them let
        # one slot of 1 s exponential services take one request in 20 s (loss 0.73 where
        # Erlang B is 1/3). So random services are cut on the requests all but sure to
        # hold their slots still (a chance of at least ``SURE``): a station filling up
        # from its random counts (100 slots of 10-minute writes) is cut as a fixed one
        # is, and a busy station in steady load is left to Erlang's formula. Those cuts
        # are not owed back: no random count is that far above Erlang's average load.
        fixed = self.fixed_time
        held_sure = held_now if fixed else erlang.offered_load(history, factors, self._sure)
        over = (held_sure[off:] > float(self.slots) + 1e-9) & (taken > 0)
        if not over.any() and not full.any() and self._owed == 0:
            return taken, lost
        # Short kernels (services of a few ticks) are updated in plain Python, which beats
        # numpy's per-call cost; long ones (a fill-up over minutes) with numpy slices.
        short = min(max(len(k) for k in self._holding.values()), len(held_now)) <= 64
        now = _held(held_now, self._holding, short)
        sure = now if fixed else _held(held_sure, self._sure, short)
        visit = np.flatnonzero(over | full | (taken > 0) | (lost > 0)).tolist()
        taken_l, lost_l = taken.tolist(), lost.tolist()
        full_l, over_l = full.tolist(), over.tolist()
        factor_l = factors[off:].tolist()
        self._owed = self._hold_ticks(
            visit, off, taken_l, lost_l, full_l, over_l, factor_l, now, sure
        )
        return np.array(taken_l, dtype=np.int64), np.array(lost_l, dtype=np.int64)

    def _hold_ticks(
        self: Any,
        visit: list[int],
        off: int,
        taken: list[int],
        lost: list[int],
        full: list[bool],
        over: list[bool],
        factors: list[float],
        now: Held,
        sure: Held,
    ) -> int:
        """:meth:`_hold`'s walk over the ticks ``visit`` (``off`` ticks into ``now`` and
        ``sure``), changing ``taken`` and ``lost`` in place; the URLs still owed after it."""
        held, kernels, lists, firsts = now
        held_s, sures, sure_lists, sure_firsts = sure
        slots, fixed = float(self.slots), self.fixed_time
        owed: int = self._owed
        stirred = False  # stirred: room given back may overfill later
        for i in visit:
            if not (full[i] or over[i] or stirred or owed):
                continue
            j = off + i
            f = factors[i]
            free = math.floor((slots - float(held[j])) / firsts[f] + 1e-9)  # room for takes
            if full[i]:
                lost[i] += taken[i]
                taken[i] = 0
                change = max(0, min(free, lost[i]))
            else:
                room = free
                if not fixed:
                    room = math.floor((slots - float(held_s[j])) / sure_firsts[f] + 1e-9)
                if room < 0 and taken[i] > 0:
                    change = max(-taken[i], room)
                    if fixed:
                        owed -= change
                elif owed > 0 and lost[i] > 0 and free > 0:
                    change = min(owed, lost[i], free)
                    owed -= change
                else:
                    continue
            if change:
                stirred = stirred or change > 0
                taken[i] += change
                lost[i] -= change
                _add(held, j, change, kernels[f], lists.get(f))
                if not fixed:
                    _add(held_s, j, change, sures[f], sure_lists.get(f))
        return owed


def _whole_losses(carry: float, expected: np.ndarray) -> tuple[IntArray, float]:
    """Expected losses ``expected`` (per tick) in whole URLs, counted on from the fraction
    ``carry`` not yet a whole URL; and the fraction left."""
    cum = np.floor(carry + np.cumsum(expected) + 1e-9)
    lost = steps(cum)
    if len(cum):
        carry = min(max(carry + float(expected.sum()) - float(cum[-1]), 0.0), 1.0 - 1e-12)
    return lost, carry


def _held(held: np.ndarray, holding: dict[float, np.ndarray], short: bool) -> Held:
    """The ledger's figures for the slots ``held`` at each tick's end under the kernels
    ``holding`` (:data:`Held`): lists where the kernels are ``short``."""
    n = len(held)
    kernels = {f: k[: min(len(k), n)] for f, k in holding.items()}
    lists = {f: k.tolist() for f, k in kernels.items()} if short else {}
    firsts = {f: max(float(k[0]), 1e-12) for f, k in kernels.items()}
    return (held.tolist() if short else held), kernels, lists, firsts


def _add(
    held: list[float] | np.ndarray, j: int, change: int, kernel: np.ndarray, row: list[float] | None
) -> None:
    """Add ``change`` takes at tick ``j`` to the slots ``held`` at each tick's end: in plain
    Python along ``row`` (a short kernel as a list), else with a numpy slice."""
    reach = min(len(kernel), len(held) - j)
    if row is not None:
        for d in range(reach):
            held[j + d] += change * row[d]
    else:
        held[j : j + reach] += change * kernel[:reach]
