"""A loss station's batch (:class:`~gym.sim.flow.loss.LossStation` with ``rows``): every
run's stretch worked out at once, to the last digit of each run's own (``_take_run``).

The stretches in which a run's station takes every arrival (or every one but a stall's),
most of them, are the same few array operations for every run; the Erlang part works out
every run's load, peakedness and loss at once, and runs what is each run's own (its
convolutions, its walk of busy slots where draws decide, its ledger, the fill-up cut)
run by run, on the run's :class:`~gym.sim.flow.base.RowView` where one run's code does it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gym.sim import erlang
from gym.sim.flow.base import Component, IntArray, RatedComponent, per_row, running_max, steps
from gym.sim.flow.walk import DrawnWalk, book_rows, step_rows
from gym.sim.grid import paced_most


class StationRows:
    """The batch's half of a loss station (its methods need the station's attributes:
    ``self`` is a :class:`~gym.sim.flow.loss.LossStation` with ``rows``)."""

    def _take_rows(self: Any, arriving: IntArray, t0: int, t1: int) -> IntArray:
        """:meth:`_take_run` for every run of a batch, to the last digit: the stretches in
        which a run's station takes every arrival (or every one but a stall's), most of
        them, worked out for all such runs at once; the others run by run."""
        if self.gated:  # every run's: behind a write buffer, it takes what it is sent
            assert self.upstream is not None
            self.pass_on_stream(t0, t1, self.upstream)
            sent: IntArray = RatedComponent._take(self, arriving, t0, t1)
            return sent
        upstream = self.upstream
        assert upstream is not None and self.rows is not None
        rows = self.rows
        self.arrived[:, t0:t1] = arriving
        rates = self.rates[t0:t1]
        stalled = not rates.all()
        lo = max(0, t0 - self._memory)
        factors = self.factors[lo:t1]
        self.dispersion[:, t0:t1] = upstream.dispersion[..., t0:t1]
        if self._spread:
            own = self._spread * self.factors[t0:t1]
            self.jitter[:, t0:t1] = np.hypot(upstream.jitter[..., t0:t1], own)
        else:
            np.abs(upstream.jitter[..., t0:t1], out=self.jitter[:, t0:t1])
        if self.fixed_time:
            self.pace[:, t0:t1] = upstream.pace[..., t0:t1]
            self.depth[:, t0:t1] = upstream.depth[..., t0:t1]
            self.periodic[:, t0:t1] = upstream.periodic[..., t0:t1]
        never = self._never_full_rows(
            upstream.pace[..., lo:t1], upstream.depth[..., lo:t1], factors
        )
        never = never[:, t0 - lo :] | self._capped_rows(upstream, lo, t0, t1)
        self._bound(upstream, lo, t0, t1)
        roomy = never.all(axis=1)
        if not roomy.all():
            up = self.rates[lo:t1] > 0
            ask = ~roomy
            mean = np.where(up, upstream.expected[..., lo:t1][ask], 0.0)
            offered = np.maximum(mean, np.where(up, self.arrived[ask, lo:t1], 0))
            most = offered.max(axis=1) if offered.shape[1] else np.zeros(len(offered))
            roomy[ask] = [
                self._roomy_most(float(m), factors) if offered.shape[1] else True for m in most
            ]
        taken = np.empty_like(arriving)
        easy = roomy  # every arrival taken, but in a stall's ticks
        if easy.any():
            pick: slice | np.ndarray = slice(None) if easy.all() else np.flatnonzero(easy)
            expected = upstream.expected[..., t0:t1][pick]
            got = arriving[pick]
            overload, unavailable = self.causes[:2]
            if not stalled:
                took = got.copy()
                self.expected[pick, t0:t1] = expected
                self._admitted[pick, t0:t1] = expected
                self.processed[pick, t0:t1] = got
                self.failed[unavailable][pick, t0:t1] = 0
                self.loss_share[pick, t0:t1] = 0.0
                self.failed[overload][pick, t0:t1] = 0
                self.loss_expected[pick, t0:t1] = 0.0
            else:
                down = rates == 0
                took = np.where(down, 0, got)
                self.loss_expected[pick, t0:t1] = np.where(down, 1.0, 0.0)
                self.expected[pick, t0:t1] = np.where(down, 0.0, expected)
                self._admitted[pick, t0:t1] = self.expected[pick, t0:t1]
                self.processed[pick, t0:t1] = took
                self.failed[unavailable][pick, t0:t1] = np.where(down, got, 0)
                self.loss_share[pick, t0:t1] = np.where(down, 1.0, 0.0)
                self.failed[overload][pick, t0:t1] = 0
            taken[pick] = took
            if self.walk is not None:
                walks, stretch = per_row(self.walk), self.factors[t0:t1]
                picked = range(rows) if isinstance(pick, slice) else pick.tolist()
                if isinstance(walks[0], DrawnWalk):
                    for i, k in enumerate(picked):
                        walks[k].book(took[i], stretch, t0)
                else:
                    chosen = [walks[k] for k in picked]
                    book_rows(chosen, self._walk_ends, list(picked), took, stretch, t0)
        if not easy.all():
            hard = np.flatnonzero(~easy)
            taken[hard] = self._erlang_rows(hard, arriving[hard], never[hard], t0, t1, lo)
        return taken

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
        overload, unavailable = self.causes[:2]
        factors = self.factors[lo:t1]
        rates = self.rates[t0:t1]
        down = rates == 0
        up = self.rates[lo:t1] > 0
        off = t0 - lo
        expected_up = upstream.expected[..., lo:t1][rows]
        mean = np.where(up, expected_up, 0.0)  # no service starts in a stall
        load = _offered_rows(mean, factors, self._kernels)
        spread = mean * upstream.dispersion[..., lo:t1][rows]
        irregular = _offered_rows(spread, factors, self._kernels)
        with np.errstate(invalid="ignore", divide="ignore"):
            dispersion = np.where(load > 0, irregular / load, 1.0)[:, off:]
        window = self.service.mean_ms / 1000.0 * self.factors[t0:t1]
        dispersion += (1.0 - dispersion) * erlang.jittered(
            window, upstream.jitter[..., t0:t1][rows]
        )
        peakedness = 1.0 + (dispersion - 1.0) * self.kappa
        n = t1 - t0
        loss = np.zeros((len(rows), n))
        expected_now = expected_up[:, off:]
        ask = ((arriving > 0) | (expected_now > 0)) & ~down & ~never
        regular = np.full((len(rows), n), np.nan)
        periodic = upstream.periodic[..., lo:t1][rows]
        if periodic[:, off:].any():
            # As one run works it out where its stream is periodic (elsewhere NaN, as a
            # run without a periodic tick leaves it).
            per_tick = upstream.pace[..., lo:t1][rows] * self.ledger.tick_ms / 1000.0
            steady = np.where(up & periodic, per_tick, mean)
            smooth = _offered_rows(steady, factors, self._kernels)[:, off:]
            regular = np.where(periodic[:, off:], smooth, np.nan)
        if ask.any():
            # Each tick's loss on its own (erlang_b_peaked works every element out alone).
            loss[ask] = erlang.erlang_b_peaked(
                self.slots, load[:, off:][ask], peakedness[ask], regular[ask]
            )
        admitted = np.where(down, 0.0, expected_now * (1.0 - loss))
        share = np.ones((len(rows), n))
        history = self._admitted[rows, lo:t1]
        history[:, off:] = admitted
        held = _offered_rows(history, factors, self._holding)
        filling = (held[:, off:] > self.slots * (1.0 + 1e-9)).any(axis=1)
        for i in np.flatnonzero(filling).tolist():  # the fill-up's cut, run by run
            run = self.row(int(rows[i]))
            share[i] = run._within_slots(admitted[i], t0, t1, lo)
        self._admitted[rows, t0:t1] = admitted * share
        self.loss_expected[rows, t0:t1] = np.where(down, 1.0, 1.0 - (1.0 - loss) * share)
        if self.walk is not None:
            walks = per_row(self.walk)
            smooth_rows = upstream.periodic[..., t0:t1][rows] | (peakedness < 1.0 - 1e-9)
            picked = rows.tolist()
            if isinstance(walks[0], DrawnWalk):
                lost = np.empty_like(arriving)
                for i, k in enumerate(picked):
                    lost[i] = walks[k].step(
                        arriving[i], down, never[i], smooth_rows[i], loss[i], self.factors, t0
                    )
            else:
                lost = step_rows(
                    [walks[k] for k in picked],
                    self._walk_ends,
                    picked,
                    arriving,
                    down,
                    never,
                    smooth_rows,
                    loss,
                    self.factors,
                    t0,
                )
            taken = np.where(down, 0, arriving - lost)
        else:
            expected = arriving * loss
            carries = per_row(self._lost_carry)
            lost = np.empty_like(arriving)
            taken = np.empty_like(arriving)
            full = share < 1.0
            for i, k in enumerate(rows.tolist()):
                carry = carries[k]
                cum = np.floor(carry + np.cumsum(expected[i]) + 1e-9)
                lost[i] = steps(cum)
                if len(cum):
                    carry = carry + float(expected[i].sum()) - float(cum[-1])
                    carries[k] = min(max(carry, 0.0), 1.0 - 1e-12)
                run = self.row(k)
                took = np.where(down, 0, arriving[i] - lost[i])
                taken[i], lost[i] = run._hold(took, lost[i], full[i], t0, t1, lo)
        self.expected[rows, t0:t1] = self._admitted[rows, t0:t1]
        self.processed[rows, t0:t1] = taken
        self.failed[unavailable][rows, t0:t1] = np.where(down, arriving, 0)
        self.failed[overload][rows, t0:t1] = np.where(down, 0, lost)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.loss_share[rows, t0:t1] = np.where(
                down, 1.0, np.where(arriving > 0, lost / np.maximum(arriving, 1), loss)
            )
        return taken

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


def _offered_rows(
    arrivals: np.ndarray, factors: np.ndarray, kernels: dict[float, np.ndarray]
) -> np.ndarray:
    """:func:`gym.sim.erlang.offered_load` of each row of ``arrivals`` (one run's each):
    the same convolutions, row by row, in the same order."""
    n = arrivals.shape[1]
    load = np.zeros(arrivals.shape)
    for factor, kernel in kernels.items():
        mine = np.where(factors == factor, arrivals, 0).astype(np.float64)
        for k in np.flatnonzero(mine.any(axis=1)).tolist():
            load[k] += erlang.convolve(mine[k], kernel)[:n]
    return load
