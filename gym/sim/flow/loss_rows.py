"""A loss station's batch (:class:`~gym.sim.flow.loss.LossStation` with ``rows``): every
run's stretch worked out at once, to the last digit of each run's own (``_take_run``).

The stretches in which a run's station takes every arrival (or every one but a stall's),
most of them, are the same few array operations for every run; the Erlang part works out
every run's load, peakedness and loss at once, and runs what is each run's own (its
convolutions, its walk of busy slots where draws decide, its ledger, the fill-up cut)
run by run, on the run's :class:`~gym.sim.flow.base.RowView` where one run's code does it.
The steps the two share take ``pick``: ``...`` for one run, the rows of some runs of a
batch.
"""

from __future__ import annotations

import math
from types import EllipsisType
from typing import Any

import numpy as np

from gym.sim import erlang
from gym.sim.flow.base import Component, IntArray, per_row, running_max
from gym.sim.flow.walk import DrawnWalk, book_rows, step_rows
from gym.sim.grid import paced_most

#: The runs a step works on: ``...`` for one run's station, the rows of some runs of a
#: batch (a slice or their indices) for a batch's.
Pick = EllipsisType | slice | np.ndarray


class StationRows:
    """The batch's half of a loss station, and the steps one run's take shares with it
    (their methods need the station's attributes: ``self`` is a
    :class:`~gym.sim.flow.loss.LossStation`, with ``rows`` in the batch's)."""

    def _take_rows(self: Any, arriving: IntArray, t0: int, t1: int) -> IntArray:
        """:meth:`_take_run` for every run of a batch, to the last digit: the stretches in
        which a run's station takes every arrival (or every one but a stall's), most of
        them, worked out for all such runs at once; the others run by run."""
        upstream = self.upstream
        assert upstream is not None and self.rows is not None
        self._pass_on(upstream, arriving, t0, t1)
        lo = max(0, t0 - self._memory)
        factors = self.factors[lo:t1]
        never = self._never_full_rows(
            upstream.pace[..., lo:t1], upstream.depth[..., lo:t1], factors
        )
        never = never[:, t0 - lo :] | self._capped_rows(upstream, lo, t0, t1)
        self._bound(upstream, lo, t0, t1)
        easy = self._roomy_rows(never, lo, t1)  # every arrival taken, but in a stall's ticks
        taken = np.empty_like(arriving)
        if easy.any():
            pick: slice | np.ndarray = slice(None) if easy.all() else np.flatnonzero(easy)
            rates = self.rates[t0:t1]
            down = None if rates.all() else rates == 0
            expected = upstream.expected[..., t0:t1][pick]
            took = self._take_all(pick, arriving[pick], expected, down, t0, t1)
            taken[pick] = took
            if self.walk is not None:
                self._book_rows(pick, took, t0, t1)
        if not easy.all():
            hard = np.flatnonzero(~easy)
            taken[hard] = self._erlang_rows(hard, arriving[hard], never[hard], t0, t1, lo)
        return taken

    def _roomy_rows(self: Any, never: np.ndarray, lo: int, t1: int) -> np.ndarray:
        """Which runs of a batch take every arrival of the stretch but in a stall's ticks:
        those whose paced stream can fill no tick (``never``), and those whose slots exceed
        any load they can offer (:meth:`_roomy`)."""
        roomy: np.ndarray = np.all(never, axis=1)
        if not roomy.all():
            factors = self.factors[lo:t1]
            up = self.rates[lo:t1] > 0
            ask = ~roomy
            mean = np.where(up, self.upstream.expected[..., lo:t1][ask], 0.0)
            offered = np.maximum(mean, np.where(up, self.arrived[ask, lo:t1], 0))
            most = offered.max(axis=1) if offered.shape[1] else np.zeros(len(offered))
            roomy[ask] = [
                self._roomy_most(float(m), factors) if offered.shape[1] else True for m in most
            ]
        return roomy

    def _book_rows(self: Any, pick: slice | np.ndarray, took: IntArray, t0: int, t1: int) -> None:
        """Book the takes ``took`` of runs ``pick`` of a batch on their walks of busy
        slots: each run's drawn walk its own, fixed ones at once (:func:`book_rows`)."""
        walks, stretch = per_row(self.walk), self.factors[t0:t1]
        picked = range(self.rows) if isinstance(pick, slice) else pick.tolist()
        if isinstance(walks[0], DrawnWalk):
            for i, k in enumerate(picked):
                walks[k].book(took[i], stretch, t0)
        else:
            chosen = [walks[k] for k in picked]
            book_rows(chosen, self._walk_ends, list(picked), took, stretch, t0)

    def _erlang_rows(
        self: Any,
        rows: np.ndarray,
        arriving: IntArray,
        never: np.ndarray,
        t0: int,
        t1: int,
        lo: int,
    ) -> IntArray:
        """The Erlang part of :meth:`_take_run` for runs ``rows`` of a batch (their
        arrivals and ticks a paced stream cannot fill as rows), to the last digit: the
        figures worked out for them all at once, each run's convolutions, walk and ledger
        run by run."""
        upstream = self.upstream
        assert upstream is not None
        down = self.rates[t0:t1] == 0
        up = self.rates[lo:t1] > 0
        mean = np.where(up, upstream.expected[..., lo:t1][rows], 0.0)  # none start in a stall
        peakedness, loss = self._erlang_loss(rows, mean, arriving, never, down, t0, t1, lo)
        admitted = np.where(down, 0.0, upstream.expected[..., t0:t1][rows] * (1.0 - loss))
        share = self._within_slots_rows(rows, admitted, t0, t1, lo)
        self._admit(rows, admitted, share, loss, down, t0, t1)
        if self.walk is not None:
            smooth = upstream.periodic[..., t0:t1][rows] | (peakedness < 1.0 - 1e-9)
            lost = self._step_rows(rows, arriving, down, never, smooth, loss, t0)
            taken = np.where(down, 0, arriving - lost)
        else:
            lost, taken = np.empty_like(arriving), np.empty_like(arriving)
            full = share < 1.0
            for i, k in enumerate(rows.tolist()):
                run = self.row(k)
                taken[i], lost[i] = run._lose(arriving[i], loss[i], down, full[i], t0, t1, lo)
        self._record(rows, arriving, taken, lost, loss, down, t0, t1)
        return taken

    def _within_slots_rows(
        self: Any, rows: np.ndarray, admitted: np.ndarray, t0: int, t1: int, lo: int
    ) -> np.ndarray:
        """:meth:`_within_slots` for runs ``rows`` of a batch (their expected admissions
        ``admitted`` as rows): 1 for every tick of a run whose slots hold its expected
        load, the cut run by run for the others."""
        share = np.ones(admitted.shape)
        history = self._admitted[rows, lo:t1]
        history[:, t0 - lo :] = admitted
        held = _offered(history, self.factors[lo:t1], self._holding)
        filling = (held[:, t0 - lo :] > self.slots * (1.0 + 1e-9)).any(axis=1)
        for i in np.flatnonzero(filling).tolist():  # the fill-up's cut, run by run
            run = self.row(int(rows[i]))
            share[i] = run._within_slots(admitted[i], t0, t1, lo)
        return share

    def _step_rows(
        self: Any,
        rows: np.ndarray,
        arriving: IntArray,
        down: np.ndarray,
        never: np.ndarray,
        smooth: np.ndarray,
        loss: np.ndarray,
        t0: int,
    ) -> IntArray:
        """The URLs each of runs ``rows`` of a batch turns away, walked on its busy slots:
        each run's drawn walk its own, fixed ones together (:func:`step_rows`)."""
        walks, picked = per_row(self.walk), rows.tolist()
        if not isinstance(walks[0], DrawnWalk):
            chosen = [walks[k] for k in picked]
            ends, factors = self._walk_ends, self.factors
            return step_rows(chosen, ends, picked, arriving, down, never, smooth, loss, factors, t0)
        lost = np.empty_like(arriving)
        for i, k in enumerate(picked):
            lost[i] = walks[k].step(
                arriving[i], down, never[i], smooth[i], loss[i], self.factors, t0
            )
        return lost

    def _pass_on(self: Any, upstream: Component, arriving: IntArray, t0: int, t1: int) -> None:
        """Record the arrivals of ticks [t0, t1) and the stream they come in, as passed on
        from ``upstream`` (its jitter with this station's spread of service times), one
        run's or every run's."""
        self.arrived[..., t0:t1] = arriving
        self.dispersion[..., t0:t1] = upstream.dispersion[..., t0:t1]
        if self._spread:
            own = self._spread * self.factors[t0:t1]
            self.jitter[..., t0:t1] = np.hypot(upstream.jitter[..., t0:t1], own)
        else:  # hypot(x, 0) is |x|
            np.abs(upstream.jitter[..., t0:t1], out=self.jitter[..., t0:t1])
        if self.fixed_time:
            self.pace[..., t0:t1] = upstream.pace[..., t0:t1]
            self.depth[..., t0:t1] = upstream.depth[..., t0:t1]
            self.periodic[..., t0:t1] = upstream.periodic[..., t0:t1]

    def _take_all(
        self: Any,
        pick: Pick,
        got: IntArray,
        expected: np.ndarray,
        down: np.ndarray | None,
        t0: int,
        t1: int,
    ) -> IntArray:
        """Take every arrival ``got`` of runs ``pick`` but those of the ticks ``down`` of a
        stall (None: no tick), and record it (``expected``: their expected arrivals)."""
        overload, unavailable = self.causes[:2]
        at = (pick, slice(t0, t1))
        if down is None:
            took: IntArray = got.copy()
            self.expected[at] = expected
            self._admitted[at] = expected
            self.processed[at] = got
            self.failed[unavailable][at] = 0
            self.loss_share[at] = 0.0
            self.failed[overload][at] = 0
            self.loss_expected[at] = 0.0
            return took
        took = np.where(down, 0, got)
        self.loss_expected[at] = np.where(down, 1.0, 0.0)
        self.expected[at] = np.where(down, 0.0, expected)
        self._admitted[at] = self.expected[at]
        self.processed[at] = took
        self.failed[unavailable][at] = np.where(down, got, 0)
        self.loss_share[at] = np.where(down, 1.0, 0.0)
        self.failed[overload][at] = 0
        return took

    def _erlang_loss(
        self: Any,
        pick: Pick,
        mean: np.ndarray,
        arriving: IntArray,
        never: np.ndarray,
        down: np.ndarray,
        t0: int,
        t1: int,
        lo: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The peakedness of the stream of runs ``pick`` and Erlang's loss in each of their
        ticks, on the modified offered load of ``mean`` (their expected arrivals from tick
        ``lo``, none in a stall): none where ``down`` or ``never``."""
        upstream, off = self.upstream, t0 - lo
        factors = self.factors[lo:t1]
        load = _offered(mean, factors, self._kernels)
        # The stream's dispersion, weighted as the load is, and the occupancy's peakedness.
        spread = mean * upstream.dispersion[..., lo:t1][pick]
        irregular = _offered(spread, factors, self._kernels)
        with np.errstate(invalid="ignore", divide="ignore"):
            dispersion = np.where(load > 0, irregular / load, 1.0)[..., off:]
        # A paced stream scattered by random times on the way looks more Poisson over the
        # window a slot is held.
        window = self.service.mean_ms / 1000.0 * self.factors[t0:t1]
        jitter = upstream.jitter[..., t0:t1][pick]
        dispersion += (1.0 - dispersion) * erlang.jittered(window, jitter)
        peakedness = 1.0 + (dispersion - 1.0) * self.kappa
        loss = np.zeros(arriving.shape)
        # Every tick with traffic expected, not only those with arrivals: the expected
        # admissions must carry the loss on an empty tick too.
        expected = upstream.expected[..., t0:t1][pick]
        ask = ((arriving > 0) | (expected > 0)) & ~down & ~never
        regular = self._regular(pick, mean, t0, t1, lo)
        if ask.any():
            # Each tick's loss on its own (erlang_b_peaked works every element out alone).
            loss[ask] = erlang.erlang_b_peaked(
                self.slots, load[..., off:][ask], peakedness[ask], regular[ask]
            )
        return peakedness, loss

    def _regular(self: Any, pick: Pick, mean: np.ndarray, t0: int, t1: int, lo: int) -> np.ndarray:
        """A periodic stream's load from its period, in each of its ticks of runs ``pick``
        (NaN where it is not periodic): smooth where counts of 0, 1 and 2 per tick scatter
        it, with the same memory of the services begun before (``mean``: their expected
        arrivals from tick ``lo``)."""
        upstream, off = self.upstream, t0 - lo
        periodic = upstream.periodic[..., lo:t1][pick]
        if not periodic[..., off:].any():
            return np.full((*mean.shape[:-1], t1 - t0), np.nan)
        up = self.rates[lo:t1] > 0
        per_tick = upstream.pace[..., lo:t1][pick] * self.ledger.tick_ms / 1000.0
        steady = np.where(up & periodic, per_tick, mean)
        smooth = _offered(steady, self.factors[lo:t1], self._kernels)[..., off:]
        regular: np.ndarray = np.where(periodic[..., off:], smooth, np.nan)
        return regular

    def _admit(
        self: Any,
        pick: Pick,
        admitted: np.ndarray,
        share: np.ndarray,
        loss: np.ndarray,
        down: np.ndarray,
        t0: int,
        t1: int,
    ) -> None:
        """Record what runs ``pick`` are expected to admit of their expected arrivals
        ``admitted`` after Erlang's ``loss``, the ``share`` of them their slots hold, and
        the expected share of each tick's arrivals they turn away."""
        self._admitted[pick, t0:t1] = admitted * share
        self.loss_expected[pick, t0:t1] = np.where(down, 1.0, 1.0 - (1.0 - loss) * share)

    def _record(
        self: Any,
        pick: Pick,
        arriving: IntArray,
        taken: IntArray,
        lost: IntArray,
        loss: np.ndarray,
        down: np.ndarray,
        t0: int,
        t1: int,
    ) -> None:
        """Record the Erlang part of a stretch of runs ``pick``: what they took, what they
        turned away as overload (or all, unavailable, where ``down``), and the share of each
        tick's arrivals (Erlang's ``loss`` where none came)."""
        overload, unavailable = self.causes[:2]
        at = (pick, slice(t0, t1))
        self.expected[at] = self._admitted[at]
        self.processed[at] = taken
        self.failed[unavailable][at] = np.where(down, arriving, 0)
        self.failed[overload][at] = np.where(down, 0, lost)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.loss_share[at] = np.where(
                down, 1.0, np.where(arriving > 0, lost / np.maximum(arriving, 1), loss)
            )

    def _never_full_rows(
        self: Any, pace: np.ndarray, depth: np.ndarray, factors: np.ndarray
    ) -> np.ndarray:
        """:meth:`_never_full` for each run of a batch (a row of ``pace`` and ``depth``
        each), the same figures: the shortcuts row by row, the rest at once."""
        rows, n = pace.shape
        out = np.zeros((rows, n), dtype=bool)
        if not self.fixed_time or not n:
            return out
        top, bottom = pace.max(axis=1).tolist(), pace.min(axis=1).tolist()
        deep, shallow = depth.max(axis=1).tolist(), depth.min(axis=1).tolist()
        some = np.isfinite(pace).any(axis=1).tolist()
        long, short = float(factors.max()), float(factors.min())
        per_s = self.service.mean_ms / 1000.0
        general = []
        for k in range(rows):
            if math.isfinite(top[k]) and bottom[k] >= 0.0:
                if all(map(math.isfinite, (deep[k], shallow[k], long, short))):
                    most = deep[k] + top[k] * (per_s * long) - 1e-9
                    if math.isfinite(most) and self.slots >= math.floor(most):
                        out[k] = True
                        continue
                    least = shallow[k] + bottom[k] * (per_s * short) - 1e-9
                    if math.isfinite(least) and self.slots < math.floor(least):
                        continue
            elif not some[k]:
                continue
            general.append(k)
        if general:
            reach = max(1, min(n, self._memory))
            fastest = running_max(pace[general], reach)
            deepest = running_max(depth[general], reach)
            longest = running_max(factors, reach)
            window = self.service.mean_ms / 1000.0 * longest
            with np.errstate(invalid="ignore"):
                most_in = paced_most(fastest, deepest, window)
            out[general] = np.isfinite(most_in) & (self.slots >= most_in)
        return out

    def _capped_rows(self: Any, upstream: Component, lo: int, t0: int, t1: int) -> np.ndarray:
        """:meth:`_capped` for each run of a batch: a run without a bound (every ``cap``
        inf) has none capped, as the formula below gives it."""
        assert self.rows is not None
        if not self.fixed_time:
            return np.zeros((self.rows, t1 - t0), dtype=bool)
        cap = upstream.cap[..., lo:t1]
        if not np.isfinite(cap).any():
            return np.zeros((self.rows, t1 - t0), dtype=bool)
        reach = max(1, min(t1 - lo, self._memory))
        most = running_max(cap, reach)
        shortest = -running_max(-upstream.cap_s[..., lo:t1], reach)
        longest = running_max(self.factors[lo:t1], reach) * (self.service.mean_ms / 1000.0)
        capped: np.ndarray = (most <= self.slots) & (shortest >= longest * (1.0 - 1e-9))
        return capped[:, t0 - lo :]


def _offered(
    arrivals: np.ndarray, factors: np.ndarray, kernels: dict[float, np.ndarray]
) -> np.ndarray:
    """:func:`gym.sim.erlang.offered_load` of one run's ``arrivals``, or of each of their
    rows (one run's each): the same convolutions, row by row, in the same order."""
    if arrivals.ndim == 1:
        return erlang.offered_load(arrivals, factors, kernels)
    n = arrivals.shape[1]
    load = np.zeros(arrivals.shape)
    for factor, kernel in kernels.items():
        mine = np.where(factors == factor, arrivals, 0).astype(np.float64)
        for k in np.flatnonzero(mine.any(axis=1)).tolist():
            load[k] += erlang.convolve(mine[k], kernel)[:n]
    return load
