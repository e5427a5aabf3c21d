"""The busy slots of a station with fixed services of at least a tick, walked tick by tick
(:class:`~gym.sim.flow.loss.LossStation`): counts of requests really held, not an Erlang
formula on an expected load."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from gym.core.streams import substream
from gym.models import ServiceTime
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

    def __init__(self, slots: int, service: ServiceTime, ledger: Ledger, rng: np.random.Generator):
        self.slots = slots
        self.mean_ms = service.mean_ms
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

    def _uniform(self) -> float:
        """One uniform draw for a tick's loss, from the station's stream ``walk``."""
        if self._draws is None:
            self._draws = substream(self.rng, "walk")
        return float(self._draws.random())

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
        count = len(arriving)
        stretch = factors[t0 : t0 + count]
        if count and self._quiet(arriving, down, never, smooth, stretch, t0):
            return np.zeros(count, dtype=np.int64)
        # The ends of this stretch and of the takes it books, as a list (numpy's scalar
        # reads and writes cost more than the rest of a tick), written back at the end.
        reach = self.span(float(stretch.max()))[0] + 2 if count else 0
        top = min(len(self.ends), t0 + count + reach)
        ends = self.ends[t0:top].tolist()
        n = top - t0
        slots = self.slots
        busy, carry = self.busy, self.carry
        lost = [0] * count
        even_shares = shares.tolist() if smooth.any() else []
        last, (whole, late) = 1.0, self.span(1.0)
        for i, (k, off, paced, even, factor) in enumerate(
            zip(
                arriving.tolist(),
                down.tolist(),
                never.tolist(),
                smooth.tolist(),
                stretch.tolist(),
                strict=True,
            )
        ):
            r = ends[i]
            take = 0 if off else k
            if take and not paced:
                free = slots - busy
                cut = 0
                if even:
                    cut, carry = _even_cut(carry, k * even_shares[i], k, r, free)
                elif k > free:
                    cut = int(erlang.walk_overshoot(k, r, free, self._uniform()))
                lost[i] = cut
                take = k - cut
            busy += take - r
            if take:
                if factor != last:
                    last, (whole, late) = factor, self.span(factor)
                later = int(self._split().binomial(take, late)) if late else 0
                if i + whole < n:
                    ends[i + whole] += take - later
                if i + whole + 1 < n:
                    ends[i + whole + 1] += later
        self.ends[t0:top] = ends
        self.busy, self.carry = busy, carry
        return np.array(lost, dtype=np.int64)

    def _quiet(
        self,
        arriving: IntArray,
        down: np.ndarray,
        never: np.ndarray,
        smooth: np.ndarray,
        stretch: np.ndarray,
        t0: int,
    ) -> bool:
        """Walk a stretch at once if no tick of it meets its slots full (:func:`_quiet_rows`
        for this one run); else change nothing: it is walked tick by tick."""
        one = _quiet_rows(
            [self],
            self.ends[None, :],
            [0],
            arriving[None, :],
            down,
            never[None, :],
            smooth[None, :],
            stretch,
            t0,
        )
        return bool(one[0])


def book_rows(
    walks: Sequence[SlotWalk],
    ends: np.ndarray,
    rows: list[int],
    taken: IntArray,
    factors: np.ndarray,
    t0: int,
) -> None:
    """:meth:`SlotWalk.book` for runs of a batch (``walks[i]`` books row i of ``taken``;
    its ends are row ``rows[i]`` of ``ends``), to the last URL: at once where a stretch of
    one slowdown ends its takes a whole number of ticks later (no draws: nothing ends a
    tick later), else run by run."""
    whole, late = walks[0].span(float(factors[0]))
    if late > 0.0 or not (factors == factors[0]).all():
        for walk, row in zip(walks, taken, strict=True):
            walk.book(row, factors, t0)
        return
    n = taken.shape[1]
    at = np.arange(t0, t0 + n) + whole
    ok = at < ends.shape[1]  # distinct ticks: one add each, as np.add.at makes them
    ends[np.ix_(rows, at[ok])] += taken[:, ok]
    took = taken.sum(axis=1).tolist()
    ended = ends[rows, t0 : t0 + n].sum(axis=1).tolist()
    for walk, a, b in zip(walks, took, ended, strict=True):
        walk.busy += int(a) - int(b)


#: Runs a batch walks tick by tick at once (:func:`step_rows`), at least: a tick of numpy
#: calls on short rows costs what 30-50 runs' ticks in plain Python do (the starter: 17.3
#: ms a run either way at 32 runs, 12.8 against 17.9 at 128, 33.4 against 21.2 at 8).
ROWS_AT_ONCE = 48


def step_rows(
    walks: Sequence[SlotWalk],
    ends: np.ndarray,
    rows: list[int],
    arriving: IntArray,
    down: np.ndarray,
    never: np.ndarray,
    smooth: np.ndarray,
    shares: np.ndarray,
    factors: np.ndarray,
    t0: int,
) -> IntArray:
    """:meth:`SlotWalk.step` for runs of a batch (``walks[i]`` walks row i of the
    per-tick arrays; its ends are row ``rows[i]`` of ``ends``), to the last URL: tick by
    tick for all of them at once (a tick's loss drawn run by run where a run's random
    order needs it), or run by run where they are fewer than :data:`ROWS_AT_ONCE` or a
    service ends a share of its takes a tick later (a draw each tick)."""
    count = arriving.shape[1]
    stretch = factors[t0 : t0 + count]
    spans = [walks[0].span(f) for f in stretch.tolist()]
    if len(walks) < ROWS_AT_ONCE or any(late for _, late in spans):
        return np.stack(
            [
                w.step(arriving[i], down, never[i], smooth[i], shares[i], factors, t0)
                for i, w in enumerate(walks)
            ]
        )
    if count:
        # The runs whose stretch meets no full tick, at once (SlotWalk._quiet for each).
        quiet = _quiet_rows(walks, ends, rows, arriving, down, never, smooth, stretch, t0)
        if quiet.all():
            return np.zeros(arriving.shape, dtype=np.int64)
        if quiet.any():
            lost = np.zeros(arriving.shape, dtype=np.int64)
            left = np.flatnonzero(~quiet)
            lost[left] = step_rows(
                [walks[i] for i in left.tolist()],
                ends,
                [rows[i] for i in left.tolist()],
                arriving[left],
                down,
                never[left],
                smooth[left],
                shares[left],
                factors,
                t0,
            )
            return lost
    return _walk_rows(walks, ends, rows, arriving, down, never, smooth, shares, spans, t0)


def _walk_rows(
    walks: Sequence[SlotWalk],
    ends: np.ndarray,
    rows: list[int],
    arriving: IntArray,
    down: np.ndarray,
    never: np.ndarray,
    smooth: np.ndarray,
    shares: np.ndarray,
    spans: list[tuple[int, float]],
    t0: int,
) -> IntArray:
    """:func:`step_rows`'s walk, tick by tick, of runs whose takes end a whole number of
    ticks later (``spans``: each tick's whole ticks and fraction)."""
    count = arriving.shape[1]
    reach = max(whole for whole, _ in spans) + 2
    top = min(ends.shape[1], t0 + count + reach)
    index = np.asarray(rows)
    # Tick by tick, each tick's figures of every run side by side (rows of these).
    ended = ends[index, t0:top].T.copy()
    busy = np.array([w.busy for w in walks], dtype=np.int64)
    carry = np.array([w.carry for w in walks], dtype=np.float64)
    even_at = smooth.T if smooth.any() else None
    lost = _walk_ticks(
        walks, spans, down, ended, busy, carry, arriving.T, never.T, even_at, shares.T
    )
    ends[index, t0:top] = ended.T
    for w, b, c in zip(walks, busy.tolist(), carry.tolist(), strict=True):
        w.busy, w.carry = b, c
    lost = lost.T
    return lost


def _walk_ticks(
    walks: Sequence[SlotWalk],
    spans: list[tuple[int, float]],
    down: np.ndarray,
    ended: np.ndarray,
    busy: np.ndarray,
    carry: np.ndarray,
    came: np.ndarray,
    paced: np.ndarray,
    even_at: np.ndarray | None,
    share_at: np.ndarray,
) -> IntArray:
    """:func:`_walk_rows`' ticks, a row each of every run's figures (``ended``, ``busy``
    and ``carry`` walked in place): the URLs each tick turns away, a row per tick."""
    slots, lost = walks[0].slots, np.zeros((len(spans), len(walks)), dtype=np.int64)
    for i, (off, (whole, _)) in enumerate(zip(down.tolist(), spans, strict=True)):
        r = ended[i]
        if off:
            busy -= r
            continue
        k = came[i]
        cutting = (k > 0) & ~paced[i]
        free = slots - busy
        even = cutting & even_at[i] if even_at is not None else None
        over = cutting & (k > free)
        if even is not None:
            over &= ~even
        cuts = even is not None and bool(even.any())
        if cuts or over.any():
            take = k.copy()
            if cuts and even is not None:
                # _even_cut for every run, kept where the run's stream is smooth.
                c = carry + k * share_at[i]
                least = k - r - np.maximum(free, 0)
                cut = np.minimum(np.maximum(np.maximum(np.floor(c), least), 0), k)
                np.copyto(carry, c - cut, where=even)
                whole_cut = np.where(even, cut, 0.0).astype(np.int64)
                lost[i] = whole_cut
                take -= whole_cut
            for j in np.flatnonzero(over).tolist():
                u = walks[j]._uniform()
                cut_j = int(erlang.walk_overshoot(int(k[j]), int(r[j]), int(free[j]), u))
                lost[i, j] = cut_j
                take[j] = k[j] - cut_j
        else:
            take = k
        busy += take - r
        if i + whole < len(ended):
            ended[i + whole] += take
    return lost


def _quiet_rows(
    walks: Sequence[SlotWalk],
    ends: np.ndarray,
    rows: list[int],
    arriving: IntArray,
    down: np.ndarray,
    never: np.ndarray,
    smooth: np.ndarray,
    stretch: np.ndarray,
    t0: int,
) -> np.ndarray:
    """Which runs of a batch meet no full tick in their stretch (slowdowns ``stretch``):
    those are walked at once here (every arrival taken but in a tick ``down``, no draw,
    the busy slots a cumulative sum, checked from the walk it gives) and the others left
    as they were, to be walked tick by tick. None qualifies where a service ends a share
    of its takes a tick later (a draw each tick) or within its own tick, nor a run with a
    smooth tick (a share of its arrivals lost even with slots free). The same figures
    either way."""
    count = arriving.shape[1]
    spans = {f: walks[0].span(f) for f in set(stretch.tolist())}
    if any(late or whole < 1 for whole, late in spans.values()):
        return np.zeros(len(walks), dtype=bool)
    at = np.arange(t0, t0 + count)  # the tick each tick's takes end in
    repeats = len(spans) > 1  # (one span: each tick's takes end in a tick of their own)
    if repeats:
        at += np.array([spans[f][0] for f in stretch.tolist()], dtype=np.int64)
    else:
        at += next(iter(spans.values()))[0]

    def add(a: np.ndarray, rows: Any, ticks: IntArray, values: IntArray) -> None:
        """``a[rows, ticks] += values``, each value added where a tick repeats."""
        if not repeats:
            a[rows, ticks] += values
        elif isinstance(rows, slice):
            np.add.at(a.T, ticks, values.T)
        else:
            np.add.at(a, (rows, ticks[None, :]), values)

    take = np.where(down, 0, arriving)
    index = np.asarray(rows)
    met = ends[index, t0 : t0 + count]  # (a copy: fancy indexing)
    inside = at < t0 + count
    add(met, slice(None), at[inside] - t0, take[:, inside])
    start = np.array([w.busy for w in walks], dtype=np.int64)
    busy = start[:, None] + np.cumsum(take - met, axis=1)
    before = np.empty_like(busy)
    before[:, 0] = start
    before[:, 1:] = busy[:, :-1]
    full = (take > 0) & ~never & (take > walks[0].slots - before)
    quiet: np.ndarray = ~(full.any(axis=1) | smooth.any(axis=1))
    if quiet.any():
        ok = at < ends.shape[1]
        mine = np.flatnonzero(quiet)
        add(ends, index[mine][:, None], at[ok], take[mine][:, ok])
        for i, b in zip(mine.tolist(), busy[mine, -1].tolist(), strict=True):
            walks[i].busy = int(b)
    return quiet


class DrawnWalk(SlotWalk):
    """The busy slots of a station with random services (exponential, lognormal) several
    ticks long on average (:data:`~gym.sim.flow.loss.DRAWN_TICKS`), walked tick by tick
    as :class:`SlotWalk` walks fixed ones: each arrival has its own instant in its tick
    and its own service time, drawn from streams of the station's own, and a take holds
    its slot until the tick that service ends in (within its own tick, for a short one).
    One instant and one service time are drawn for every arrival of a tick the station is
    up in, taken or not, in tick order: the same draws however the engine strides.

    A station filling from empty then fills as it does: the busy slots are counts, not
    Erlang's formula on a modified offered load, which lags a filling station (100 slots
    of 10 s exponential services lost 0.40 of the exact transient in a 10 s run)."""

    def __init__(self, slots: int, service: ServiceTime, ledger: Ledger, rng: np.random.Generator):
        super().__init__(slots, service, ledger, rng)
        self.dist = service.dist
        cv = service.cv_value
        self.sigma = math.sqrt(math.log1p(cv * cv)) if service.dist == "lognormal" else 0.0
        self.mean_ticks = service.mean_ms / ledger.tick_ms
        self._instants: np.random.Generator | None = None
        self._services: np.random.Generator | None = None

    def _offsets(self, counts: IntArray, factors: np.ndarray) -> IntArray:
        """Each arrival's end, in whole ticks after its own tick (0: within it), for
        ``counts`` arrivals a tick under slowdowns ``factors``."""
        total = int(counts.sum())
        if not total:
            return np.zeros(0, dtype=np.int64)
        if self._instants is None:
            self._instants = substream(self.rng, "walk instants")
            self._services = substream(self.rng, "walk services")
        assert self._services is not None
        instants = self._instants.random(total)
        if self.dist == "exponential":
            unit = self._services.standard_exponential(total)
        else:  # lognormal of mean 1, as the request engine draws it (mu = -sigma^2 / 2)
            sigma = self.sigma
            unit = np.exp(sigma * self._services.standard_normal(total) - sigma * sigma / 2)
        ticks = instants + unit * (self.mean_ticks * np.repeat(factors, counts))
        # A service past every tick of the run ends after it, whatever its length.
        return np.minimum(ticks, len(self.ends)).astype(np.int64)

    def _pre_book(self, counts: IntArray, offsets: IntArray, t0: int) -> tuple[IntArray, IntArray]:
        """Book every arrival to end its service time later: the tick each ends in, and
        the count of each tick's that end within it."""
        tick = np.repeat(np.arange(len(counts)), counts)
        at = tick + t0 + offsets
        later = (offsets > 0) & (at < len(self.ends))
        if later.any():
            np.add.at(self.ends, at[later], 1)
        same = np.bincount(tick[offsets == 0], minlength=len(counts))
        return at, same

    def book(self, taken: IntArray, factors: np.ndarray, t0: int) -> None:
        for a, b in _chunks(taken):
            offsets = self._offsets(taken[a:b], factors[a:b])
            _, same = self._pre_book(taken[a:b], offsets, t0 + a)
            ended = int(self.ends[t0 + a : t0 + b].sum()) + int(same.sum())
            self.busy += int(taken[a:b].sum()) - ended

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
        """As :meth:`SlotWalk.step`. Every arrival is booked first as if taken; a tick that
        turns some away takes their bookings back. In chunks of ticks of about
        :data:`CHUNK` arrivals (the same draws in the same order, in less memory)."""
        counts = np.where(down, 0, arriving)
        parts = [
            self._step(
                arriving[a:b],
                counts[a:b],
                down[a:b],
                never[a:b],
                smooth[a:b],
                shares[a:b],
                factors,
                t0 + a,
            )
            for a, b in _chunks(counts)
        ]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def _step(
        self,
        arriving: IntArray,
        counts: IntArray,
        down: np.ndarray,
        never: np.ndarray,
        smooth: np.ndarray,
        shares: np.ndarray,
        factors: np.ndarray,
        t0: int,
    ) -> IntArray:
        ends = self.ends
        n = len(ends)
        offsets = self._offsets(counts, factors[t0 : t0 + len(arriving)])
        at, same = self._pre_book(counts, offsets, t0)
        slots = self.slots
        busy, carry = self.busy, self.carry
        lost = np.zeros(len(arriving), dtype=np.int64)
        p = 0  # the first of this tick's arrivals in ``at`` and ``offsets``
        for i, (k, off, paced, even, quick) in enumerate(
            zip(
                arriving.tolist(),
                down.tolist(),
                never.tolist(),
                smooth.tolist(),
                same.tolist(),
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
                    cut, carry = _even_cut(carry, k * float(shares[i]), k, r, free)
                elif k > free:
                    u = self._uniform()
                    cut = int(erlang.walk_overshoot(k, r, free, u))
                    if cut and quick:
                        # Takes whose services end within this tick free their slots for
                        # the arrivals after them: counted with this tick's ends, in a
                        # random order (left out, 1 slot of one tick lost 12% too much,
                        # 10 slots of 1 tick 66%; counted, 4% and 15%).
                        early = int((offsets[p : p + k - cut] == 0).sum())
                        if early:
                            cut = int(erlang.walk_overshoot(k, r + early, free, u))
                if cut:
                    for x in range(p + k - cut, p + k):  # their bookings taken back
                        if offsets[x] == 0:
                            quick -= 1
                        elif at[x] < n:
                            ends[at[x]] -= 1
                lost[i] = cut
                take = k - cut
            busy += take - r - quick
            if not off:
                p += k
        self.busy, self.carry = busy, carry
        return lost


def _even_cut(carry: float, due: float, k: int, r: int, free: int) -> tuple[int, float]:
    """A smooth stream's loss in one tick of ``k`` arrivals and ``r`` ends with ``free``
    slots free: ``due`` (its share of them) added to the ``carry``, in whole URLs, and at
    least what the slots cannot hold (taken back from later ticks' shares); and the carry
    left."""
    carry += due
    cut = min(max(math.floor(carry), k - r - max(free, 0), 0), k)
    return cut, carry - cut


#: Arrivals a drawn walk draws for at once, at most (a tick with more is a chunk alone): a
#: store of 20,000 writes/s for an hour drew 72 million at once (2.9 GB).
CHUNK = 1 << 18


def _chunks(counts: IntArray) -> list[tuple[int, int]]:
    """Ticks [a, b) in order, each run of them with about CHUNK arrivals at most (a tick
    with more alone)."""
    n = len(counts)
    if not n:
        return []
    total = np.cumsum(counts)
    if int(total[-1]) <= CHUNK:
        return [(0, n)]
    out, a = [], 0
    while a < n:
        base = int(total[a - 1]) if a else 0
        b = int(np.searchsorted(total, base + CHUNK, side="right"))
        b = max(b, a + 1)
        out.append((a, b))
        a = b
    return out
