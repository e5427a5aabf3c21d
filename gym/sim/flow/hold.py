"""A loss station's ledger of the requests it really took
(:class:`~gym.sim.flow.loss.LossStation`): the slots they hold at the end of each tick
never exceed its slots."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gym.sim import erlang
from gym.sim.flow.base import IntArray

#: A request this likely to hold its slot still counts as holding it, in the ledger of a
#: station with random services (:meth:`StationHold._hold`).
SURE = 0.99


class StationHold:
    """The ledger's half of a loss station (``self`` is a
    :class:`~gym.sim.flow.loss.LossStation`)."""

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
        slots = float(self.slots)
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
        sure = self._holding if fixed else self._sure
        held_sure = held_now if fixed else erlang.offered_load(history, factors, sure)
        over = (held_sure[off:] > slots + 1e-9) & (taken > 0)
        if not over.any() and not full.any() and self._owed == 0:
            return taken, lost
        visit = np.flatnonzero(over | full | (taken > 0) | (lost > 0)).tolist()
        n = len(held_now)
        kernels = {f: k[: min(len(k), n)] for f, k in self._holding.items()}
        sures = {f: k[: min(len(k), n)] for f, k in sure.items()}
        short = max(len(k) for k in kernels.values()) <= 64
        # Short kernels (services of a few ticks) are updated in plain Python, which beats
        # numpy's per-call cost; long ones (a fill-up over minutes) with numpy slices.
        held: list[float] | np.ndarray = held_now.tolist() if short else held_now
        held_s: list[float] | np.ndarray = (
            held if fixed else (held_sure.tolist() if short else held_sure)
        )
        lists = {f: k.tolist() for f, k in kernels.items()} if short else {}
        sure_lists = {f: k.tolist() for f, k in sures.items()} if short else {}
        taken_l, lost_l, full_l, over_l = (
            taken.tolist(),
            lost.tolist(),
            full.tolist(),
            over.tolist(),
        )
        factor_l = factors[off:].tolist()
        firsts = {f: max(float(k[0]), 1e-12) for f, k in kernels.items()}
        sure_firsts = {f: max(float(k[0]), 1e-12) for f, k in sures.items()}
        owed, stirred = self._owed, False  # stirred: room given back may overfill later
        for i in visit:
            if not (full_l[i] or over_l[i] or stirred or owed):
                continue
            j = off + i
            f = factor_l[i]
            kernel = kernels[f]
            free = math.floor((slots - float(held[j])) / firsts[f] + 1e-9)  # room for takes
            if full_l[i]:
                lost_l[i] += taken_l[i]
                taken_l[i] = 0
                change = max(0, min(free, lost_l[i]))
            else:
                room = (
                    free
                    if fixed
                    else math.floor((slots - float(held_s[j])) / sure_firsts[f] + 1e-9)
                )
                if room < 0 and taken_l[i] > 0:
                    change = max(-taken_l[i], room)
                    if fixed:
                        owed -= change
                elif owed > 0 and lost_l[i] > 0 and free > 0:
                    change = min(owed, lost_l[i], free)
                    owed -= change
                else:
                    continue
            if change:
                stirred = stirred or change > 0
                taken_l[i] += change
                lost_l[i] -= change
                _add(held, j, change, kernel, lists.get(f))
                if not fixed:
                    _add(held_s, j, change, sures[f], sure_lists.get(f))
        self._owed = owed
        return np.array(taken_l, dtype=np.int64), np.array(lost_l, dtype=np.int64)


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
