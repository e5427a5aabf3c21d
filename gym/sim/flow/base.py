"""One component shape for the whole pipeline.

Every component is built from its validated config, a SimPy environment, an explicit
``numpy.random.Generator`` and the run's :class:`Ledger`. It keeps per-tick integer
tallies (arrived, capacity, processed, out, served, failed by cause, backlog) and moves
URLs with :meth:`Component.advance`, which covers every tick since it last ran.

Time is driven by SimPy, in ticks. Between two timeline events nothing outside the
pipeline changes, so the engine does not wake components every tick: an event
process (a load stage, a fault) first brings every component up to the present
(``Ledger.sync``), in pipeline order, and then changes the state it owns. Each
component's own timeline processes (a stall, a slowdown, a crash) live on the
component that suffers them.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self, TypeVar

import numpy as np
import simpy

from gym.models import SlowdownFault, StallFault
from gym.sim.record import Tally

if TYPE_CHECKING:
    from gym.models import Scenario
    from gym.sim.timeline import Timeline
    from gym.system.topology import Topology

IntArray = np.ndarray  # int64 per-tick tallies


class _NoDraws:
    """The generator of a component that draws nothing (a junction, a delayed edge): one
    for every run, so any draw from it is an error, not a tie between runs."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"a component that draws nothing asked its generator for {name}")


NO_DRAWS: Any = _NoDraws()


@dataclass
class Ledger:
    """Shared facts of one run: the tick grid and how to bring everyone up to date."""

    n_ticks: int
    tick_ms: int
    sync: Callable[[int], None] = field(default=lambda _t: None)

    def zeros(self, extra: int = 0, rows: int | None = None) -> IntArray:
        """Per-tick int64 zeros: one run's (``rows`` None), or one row per run of a batch."""
        n = self.n_ticks + extra
        return np.zeros(n if rows is None else (rows, n), dtype=np.int64)


def thinned(dispersion: IntArray, kept: float | np.ndarray) -> IntArray:
    """The dispersion of a stream after each URL is kept with chance ``kept`` (a cache hit
    taking a URL out, a body found stored): variance kept^2 I n + kept (1 - kept) n over a
    mean of kept n, so I' = kept I + 1 - kept; thinning makes any stream more Poisson."""
    return kept * dispersion + (1.0 - kept)


def running_max(x: np.ndarray, width: int) -> np.ndarray:
    """out[i] = max(x[i - width + 1 .. i]) (fewer at the start): by doubling, O(n log width)
    vectorized. The maximum over a power-of-two window p is built from two of p/2; any
    width is covered by two overlapping windows of the largest p <= width."""
    out = np.asarray(x, dtype=np.float64).copy()
    if width <= 1 or out.shape[-1] <= 1:
        return out
    span = 1
    while span * 2 <= width:  # along the last axis: rows of a batch each on their own
        shifted = out[..., :-span]
        out[..., span:] = np.maximum(out[..., span:], shifted)
        span *= 2
    rest = width - span
    if rest > 0:
        out[..., rest:] = np.maximum(out[..., rest:], out[..., :-rest].copy())
    return out


def tick_quota(rate_per_s: float, tick_ms: int, n: int, carry: float) -> tuple[IntArray, float]:
    """Whole URLs a rate allows in each of ``n`` ticks, with the fraction carried over.

    Capacity per tick is rate x tick; only whole URLs can move, so the fraction is
    carried to the next tick (unused whole capacity is not banked). Over k ticks the
    total is floor(carry + k x rate x tick), exact for integer rates.
    """
    per_tick = rate_per_s * tick_ms / 1000.0
    if n <= 0:
        return np.zeros(0, dtype=np.int64), carry
    if carry == 0.0 and per_tick.is_integer() and 0.0 <= per_tick * n < 2.0**52:
        # A whole number per tick and nothing carried: floor(per_tick x k + 1e-9) is
        # per_tick x k exactly (every figure below 2^52 is a float), so every tick gets
        # per_tick and nothing is carried on.
        return np.full(n, int(per_tick), dtype=np.int64), 0.0
    # floor(carry + per_tick x k + 1e-9) for k = 1..n, in one buffer.
    cum = counting(n) * per_tick
    cum += carry
    cum += 1e-9
    np.floor(cum, out=cum)
    quota = steps(cum)
    new_carry = carry + per_tick * n - float(cum[-1])
    return quota, min(max(new_carry, 0.0), 1.0 - 1e-12)


_COUNTING = np.arange(1, 4097, dtype=np.float64)


def counting(n: int) -> np.ndarray:
    """1.0, 2.0, ..., n (a shared read-only array: slice it, do not write to it)."""
    global _COUNTING
    counts = _COUNTING  # (read once: another thread may grow it meanwhile)
    if len(counts) < n:
        counts = np.arange(1, max(n, 2 * len(counts)) + 1, dtype=np.float64)
        counts.flags.writeable = False
        _COUNTING = counts
    return counts[:n]


_COUNTING.flags.writeable = False


def steps(cum: np.ndarray) -> IntArray:
    """The whole steps of a non-decreasing cumulative count of whole numbers (floats):
    ``np.diff(cum, prepend=0.0).astype(np.int64)`` without the concatenation."""
    out = np.empty(len(cum), dtype=np.int64)
    if len(cum):
        out[0] = cum[0]
        np.subtract(cum[1:], cum[:-1], out=out[1:], casting="unsafe")
    return out


class Component:
    """Base of every pipeline component: per-tick tallies and the advance contract."""

    name: str = "component"
    #: Failure causes this component can record.
    causes: tuple[str, ...] = ()
    #: Whether URLs can still be inside at the end of a run (a queue, a fleet, a buffer);
    #: the run record lists those in ``in_flight_end``.
    holds_work: bool = False
    #: Whether what it sends on are new URLs it made (a links node's: links found on
    #: pages), which a lookup tells from the rest: its kind's
    #: (:attr:`gym.system.kinds.base.Kind.creates`), set by the engine as it builds it.
    creates: bool = False

    def __init__(
        self,
        env: simpy.Environment,
        rng: np.random.Generator | PerRow,
        ledger: Ledger,
        rows: int | None = None,
    ) -> None:
        self.env = env
        # One run's generator; in a batch each run's (a PerRow: one run's code reads its
        # own through a RowView, as it reads every per-run value of a batch).
        self.rng: np.random.Generator = rng  # type: ignore[assignment]
        self.ledger = ledger
        #: None for one run's component (1-D arrays per tick); else the runs of a batch it
        #: advances together: per-tick arrays with a row per run (the capacity and rate,
        #: which the timeline sets alike for every run, stay 1-D).
        self.rows = rows
        shape = ledger.n_ticks if rows is None else (rows, ledger.n_ticks)
        self.arrived = ledger.zeros(rows=rows)  # work reaching the input this tick
        self.capacity = ledger.zeros()  # whole URLs it could take this tick
        self.processed = ledger.zeros(rows=rows)  # work it took this tick
        self.out = ledger.zeros(rows=rows)  # passed on downstream this tick
        self.served = ledger.zeros(rows=rows)  # finished here, successfully, this tick
        self.backlog = ledger.zeros(rows=rows)  # held at the end of this tick
        self.rates = np.zeros(ledger.n_ticks)  # capacity per second in force each tick
        # How irregular the stream sent on in each tick is: the variance of its counts over
        # short windows per URL (1 for Poisson, 0 for a paced stream). Erlang loss at the
        # stations downstream depends on it (:func:`gym.sim.erlang.erlang_b_peaked`).
        self.dispersion = np.ones(shape)
        # The spread (standard deviation, s) of the random times the stream's URLs went
        # through since it was last paced (a fleet's service, a lookup): it scatters a paced stream
        # toward Poisson over windows shorter than it (gym.sim.erlang.jittered).
        self.jitter = np.zeros(shape)
        # The URLs expected to be sent on in each tick given the pipeline's state: the
        # counts without the chance in Poisson arrivals and cache hits. A loss station's
        # offered load is built from it; Erlang's formula brings the chance back, once.
        self.expected = np.zeros(shape)
        # The rate of the token bucket that paced this stream, if one did (inf if none): no
        # window of w seconds holds more than about pace x w of its URLs, so a station with
        # more slots than that never turns one away (gym.sim.grid.paced_most).
        self.pace = np.full(shape, np.inf)
        self.depth = np.ones(shape)  # the bucket's tokens: a burst it allows
        # Whether the stream is strictly periodic at ``pace`` (a bucket that always binds,
        # or a whole number of evenly spaced arrivals per tick): D/D/c loss applies.
        self.periodic = np.zeros(shape, dtype=bool)
        # A bound a station with fixed service times puts on what it takes: no window of
        # ``cap_s`` seconds holds more than ``cap`` of its URLs (all of them would hold a
        # slot at the window's end). inf where nothing bounds the stream so.
        self.cap = np.full(shape, np.inf)
        self.cap_s = np.zeros(shape)
        # Ticks that ended with URLs waiting and the start quota of the fleet this component
        # feeds used up (only a queue feeding a fleet sets it): the fleet's bucket spaced
        # that tick's starts exactly.
        self.fleet_bound = np.zeros(shape, dtype=bool)
        self.failed = {cause: ledger.zeros(rows=rows) for cause in self.causes}
        self.t = 0  # ticks advanced so far
        self._reserved = 0  # ticks whose capacity is fixed already

    def binomial(self, n: IntArray, p: float) -> IntArray:
        """Binomial(n, p) draws from each run's generator (its row of ``n``)."""
        return binomial(self.rng, n, p)

    def row(self, k: int) -> Component:
        """Run ``k`` of a batched component; one run's component is its own."""
        return self if self.rows is None else view_of(self, k)

    def alone(self) -> list[Self]:
        """Each run's component, as in a run of its own: this one for one run, each row's
        :class:`RowView` for a batch (one run's code on each run's state)."""
        return [self] if self.rows is None else [view_of(self, k) for k in range(self.rows)]

    def named(self, name: str, causes: tuple[str, ...]) -> Component:
        """This component as node ``name`` of a topology, recording ``causes`` (the same
        causes as its class, in its order, under the node's names). Before any advance."""
        assert self.t == 0 and len(causes) == len(self.causes)
        self.name = name
        self.causes = causes
        # The same (still zero) arrays, under the node's names.
        self.failed = dict(zip(causes, self.failed.values(), strict=True))
        return self

    def pass_on_stream(self, t0: int, t1: int, source: Component, lag: int = 0) -> None:
        """Send on ``source``'s stream as it is over ticks [t0, t1) (as it was ``lag``
        ticks earlier, for a delayed edge): what a loss station downstream needs besides
        the counts (a component that changes the stream sets its own after this)."""
        a, b = t0 - lag, t1 - lag
        self.expected[..., t0:t1] = source.expected[..., a:b]
        self.dispersion[..., t0:t1] = source.dispersion[..., a:b]
        self.jitter[..., t0:t1] = source.jitter[..., a:b]
        self.pace[..., t0:t1] = source.pace[..., a:b]
        self.depth[..., t0:t1] = source.depth[..., a:b]
        self.periodic[..., t0:t1] = source.periodic[..., a:b]
        self.cap[..., t0:t1] = source.cap[..., a:b]
        self.cap_s[..., t0:t1] = source.cap_s[..., a:b]

    # -- the contract -------------------------------------------------------------------
    def advance(self, t1: int) -> None:
        """Move URLs over ticks [self.t, t1)."""
        if t1 > self.t:
            self.reserve(t1)
            self._advance(self.t, t1)
            self.t = t1

    def _advance(self, t0: int, t1: int) -> None:
        raise NotImplementedError

    def reserve(self, t1: int) -> None:
        """Fix this component's capacity for the ticks up to ``t1`` (idempotent)."""
        if t1 > self._reserved:
            self.capacity[self._reserved : t1] = self._quota(t1 - self._reserved)
            self._reserved = t1

    def _quota(self, n: int) -> IntArray:
        return np.zeros(n, dtype=np.int64)

    def in_flight(self) -> int:
        """URLs held by this component after the last advanced tick."""
        return int(self.backlog[self.t - 1]) if self.t > 0 else 0

    def in_flight_end(self) -> int:
        """URLs still inside at the end of the run (the run record's figure)."""
        return self.in_flight()

    def tally(self) -> Tally:
        """This component's per-tick counts for the run record (a component with more to
        report, such as a queue's buffer size, adds it here)."""
        return Tally.of(self)


class RatedComponent(Component):
    """A component with a rate capacity that stalls and slowdowns act on."""

    def __init__(
        self,
        env: simpy.Environment,
        rng: np.random.Generator | PerRow,
        ledger: Ledger,
        rate: float,
        rows: int | None = None,
    ) -> None:
        super().__init__(env, rng, ledger, rows=rows)
        self.base_rate = rate
        self._stalls = 0
        self._slowdowns: list[float] = []
        self._carry = 0.0

    @property
    def rate(self) -> float:
        """Current capacity per second: 0 while stalled, divided by active slowdowns."""
        if self._stalls:
            return 0.0
        rate = self.base_rate
        for factor in self._slowdowns:
            rate /= factor
        return rate

    def _quota(self, n: int) -> IntArray:
        self.rates[self._reserved : self._reserved + n] = self.rate
        quota, self._carry = tick_quota(self.rate, self.ledger.tick_ms, n, self._carry)
        return quota

    def stall(self, fault: StallFault, start: int, end: int) -> Generator[simpy.Event, None, None]:
        """Capacity 0 from tick ``start`` to tick ``end``."""
        yield self.env.timeout(start)
        self.ledger.sync(start)
        for part in self.faulted():
            part._stalls += 1
        yield self.env.timeout(end - start)
        self.ledger.sync(end)
        for part in self.faulted():
            part._stalls -= 1

    def slowdown(
        self, fault: SlowdownFault, start: int, end: int
    ) -> Generator[simpy.Event, None, None]:
        """Capacity divided by the factor from tick ``start`` to tick ``end``."""
        yield self.env.timeout(start)
        self.ledger.sync(start)
        for part in self.faulted():
            part._slowdowns.append(fault.factor)
        yield self.env.timeout(end - start)
        self.ledger.sync(end)
        for part in self.faulted():
            part._slowdowns.remove(fault.factor)

    def faulted(self) -> list[RatedComponent]:
        """What a fault on this component acts on: itself (and any stations inside it)."""
        return [self]

    def _take(self, arriving: IntArray, t0: int, t1: int) -> IntArray:
        """Take what capacity allows of ``arriving`` over ticks [t0, t1) and record it; the
        rest fail as unavailable (its second cause) where capacity was 0, else as overload
        (its first)."""
        cap = self.capacity[t0:t1]
        taken: IntArray = np.minimum(arriving, cap)
        lost = arriving - taken
        down = cap == 0
        self.arrived[..., t0:t1] = arriving
        self.processed[..., t0:t1] = taken
        overload, unavailable = self.causes[:2]
        self.failed[unavailable][..., t0:t1] = np.where(down, lost, 0)
        self.failed[overload][..., t0:t1] = np.where(down, 0, lost)
        return taken


@dataclass
class Build:
    """What building a node's component needs from the run."""

    env: simpy.Environment
    ledger: Ledger
    seed: int
    scenario: Scenario
    timeline: Timeline
    graph: Topology


def connect_upstream(
    component: Component, inputs: Sequence[Component], outputs: Sequence[Component]
) -> None:
    """The usual connection: the one component feeding this one is its upstream."""
    if inputs:
        component.upstream = inputs[0]  # type: ignore[attr-defined]


# -- batches ---------------------------------------------------------------------------
# A batch advances the runs of one design and scenario under several seeds together. A
# kind with a batched component (``rows`` set) holds one row per run in each per-tick
# array and pays its per-stretch Python work once for all of them; a kind without one has
# a component per run (the engine's ``Each``). Where the two meet, each sees the other as
# it expects: a run's component reads row k of a batched one through a :class:`RowView`,
# and a batched one reads the components of every run as rows through :class:`Stacked`.


class PerRow(list):  # type: ignore[type-arg]
    """One value per run of a batched component (a generator, a walk, a carried fraction):
    its :class:`RowView` for run k reads and writes item k."""


def per_row(value: object) -> PerRow:
    """A batched component's per-run values (annotated as one run's, which its RowViews
    give one run's code)."""
    assert isinstance(value, PerRow)
    return value


def binomial(rng: np.random.Generator | PerRow, n: IntArray, p: float) -> IntArray:
    """Binomial(n, p) draws from one run's generator, or from each run's (a :class:`PerRow`)
    for its row of ``n``: the draws each run makes alone."""
    if isinstance(rng, PerRow):
        return np.stack([g.binomial(n[k], p) for k, g in enumerate(rng)])
    return rng.binomial(n, p)


def each_run(rng: np.random.Generator | PerRow) -> list[tuple[Any, np.random.Generator]]:
    """Each run: the index of its row of a component's per-tick arrays (``...`` for one
    run's, whose arrays are 1-D) and its generator."""
    if isinstance(rng, PerRow):
        return list(enumerate(rng))
    return [(..., rng)]


def poisson(rng: np.random.Generator | PerRow, mean: np.ndarray) -> IntArray:
    """Poisson(mean) draws from one run's generator, or from each run's for its row of
    ``mean``."""
    if isinstance(rng, PerRow):
        return np.stack([g.poisson(mean[k]) for k, g in enumerate(rng)])
    return rng.poisson(mean)


def row_value(value: object, k: int) -> object:
    """What a batched component's attribute ``value`` is for run ``k``."""
    if isinstance(value, np.ndarray):
        return value[k] if value.ndim == 2 else value
    if isinstance(value, PerRow):
        return value[k]
    if isinstance(value, Stacked):
        return value.parts[k]
    if isinstance(value, Component) and value.rows is not None:
        return value.row(k)
    if isinstance(value, list) and value and isinstance(value[0], Component):
        # A junction's inputs, a splitter's ports: each run's, in a list of its own (to
        # read: what is added to it is not the batch's).
        return [row_value(v, k) for v in value]
    if isinstance(value, dict) and any(
        isinstance(v, np.ndarray) and v.ndim == 2 for v in value.values()
    ):
        return {key: v[k] for key, v in value.items()}
    return value


class RowView:
    """Run ``k`` of a batched component, as that run's own component: its per-tick arrays
    are the component's row k, its per-run values item k, and its methods the class's,
    working on that row (one run's code, as it runs in a run of its own). Advancing and
    reserving capacity are the batch's: they act on every run at once."""

    def __getattribute__(self, name: str) -> object:
        own = object.__getattribute__(self, "__dict__")
        if name in own or name.startswith("__"):
            return object.__getattribute__(self, name)
        if name == "rows":  # one run's component
            return None
        of = own["_of"]
        if name in of.__dict__:
            return row_value(of.__dict__[name], own["_k"])
        return object.__getattribute__(self, name)

    def __setattr__(self, name: str, value: object) -> None:
        own = object.__getattribute__(self, "__dict__")
        of, k = own["_of"], own["_k"]
        current = of.__dict__.get(name)
        if isinstance(current, PerRow) or (isinstance(current, np.ndarray) and current.ndim == 2):
            current[k] = value
        else:
            raise AttributeError(f"{name!r} is the batch's, not one run's, in {of.name}")

    def whole(self) -> Component:
        """The batched component this is one run of."""
        of: Component = object.__getattribute__(self, "__dict__")["_of"]
        return of

    def advance(self, t1: int) -> None:
        object.__getattribute__(self, "__dict__")["_of"].advance(t1)

    def reserve(self, t1: int) -> None:
        object.__getattribute__(self, "__dict__")["_of"].reserve(t1)


_VIEWS: dict[type, type] = {}
C = TypeVar("C", bound=Component)


def view_of(component: C, k: int) -> C:
    """Run ``k`` of batched ``component`` (a :class:`RowView` of its class)."""
    cls = type(component)
    view = _VIEWS.get(cls)
    if view is None:
        view = _VIEWS[cls] = type(f"{cls.__name__}Row", (RowView, cls), {})
    row: C = object.__new__(view)
    own = object.__getattribute__(row, "__dict__")
    own["_of"], own["_k"] = component, k
    return row


class Stacked:
    """The components of one node in each run of a batch (a kind without a batched
    component), read by a batched one as rows: ``stacked.out[..., t0:t1]`` is every run's
    ``out[t0:t1]``, one row each."""

    def __init__(self, parts: Sequence[Component]) -> None:
        self.parts = list(parts)
        self.rows = len(self.parts)

    def __getattr__(self, name: str) -> _Rows:
        return _Rows([getattr(p, name) for p in self.parts])

    def of(self) -> Component:
        """One run's component (what kind it is, and its settings)."""
        return self.parts[0]


class _Rows:
    def __init__(self, arrays: list[np.ndarray]) -> None:
        self.arrays = arrays

    def __getitem__(self, key: tuple[object, slice]) -> np.ndarray:
        assert isinstance(key, tuple) and key[0] is Ellipsis and len(key) == 2
        return np.stack([a[key[1]] for a in self.arrays])


def one_of(component: object) -> object:
    """A component as one run's (for what kind it is): one of a :class:`Stacked`'s."""
    return component.of() if isinstance(component, Stacked) else component
