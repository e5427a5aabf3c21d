"""The ``fleet`` kind: replicas that start the jobs the queue in front of them hands out
(its services).

A service started in tick k finishes in tick k + L, L = the service time in ticks (at
least 1). Starts are limited to live replicas x rps_per_replica per second, so a
replica never holds more than rps_per_replica x service time services in flight.
Starts are spread evenly over the live replicas; when c of the n live replicas crash,
c/n of the services in flight (rounded down) are on them and fail (``crash_loss``), or
go back to the head of its queue if the node says ``on_crash: requeue``.

A fleet not declared ``paced`` (a graph design's, by default) of a mean service time of a
tick or more (:attr:`Fleet.slotted`) starts no more than its slots have free instead: live
replicas x round(rps_per_replica x service) slots, each held for the service time (c
parallel servers, as in the request engine). Fixed times hold a slot on an exact schedule;
random ones (:attr:`Fleet.drawn`) for a time drawn per start from the fleet's own stream
(:meth:`Fleet.start_in`), so the number that ends in a tick is as random as c such
servers make it and a finite queue before them fills as often as it does in theory.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import simpy

from gym.core.streams import stream, substream
from gym.core.text import Unit
from gym.models import CrashFault, ServiceTime
from gym.sim import waiting
from gym.sim.flow.base import (
    Build,
    Component,
    IntArray,
    Ledger,
    PerRow,
    connect_upstream,
    tick_quota,
)
from gym.sim.flow.fluid import Network
from gym.sim.flow.graph_latency import Estimate, Model, Rows, share, spread
from gym.sim.grid import (
    ramp_openings,
    start_depth,
    station_slots,
)
from gym.sim.record import Tally
from gym.sim.rounded import service_ticks, where
from gym.sim.timeline import hold_ticks
from gym.system.kinds.fleet import FleetParams
from gym.system.topology import Node, Topology

if TYPE_CHECKING:
    from gym.sim.record import RunRecord


class Fleet(Component):
    """Replicas x rps_per_replica starts/s, each service taking the service mean."""

    name = "fleet"
    causes = ("crash_loss",)
    holds_work = True

    def __init__(
        self,
        env: simpy.Environment,
        rng: np.random.Generator | PerRow,
        ledger: Ledger,
        config: FleetParams,
        rows: int | None = None,
    ) -> None:
        super().__init__(env, rng, ledger, rows=rows)
        self.replicas = config.replicas
        self.rps_per_replica = config.rps_per_replica
        self.requeue_on_crash = config.on_crash == "requeue"
        self.hold_ticks = hold_ticks(config.service.mean_ms, ledger.tick_ms)
        self.down = 0
        self.upstream: Component | None = None  # the queue that feeds it, set by the engine
        self.live = ledger.zeros()  # live replicas during each tick
        self.requeued = ledger.zeros(rows=rows)  # jobs in flight sent back to its queue
        ticks = config.service.mean_ms / ledger.tick_ms
        # A fixed service time shifts the start stream as it is; random ones scatter it (the
        # stations downstream see how much, over the time they hold a slot).
        self.fixed_time = config.service.dist == "deterministic"
        # A fleet declared paced with fixed or nearly fixed times
        # has its starts metered through a bucket in both engines; else it is c parallel
        # servers.
        self.paced = config.starts_paced
        self.spread = config.service.cv_value * config.service.mean_ms / 1000.0  # s, std
        self._carry = 0.0
        # An unpaced fleet of fixed times is c parallel servers, as in the request engine:
        # what it starts in a tick is what its slots have free (its queue's
        # :meth:`~gym.sim.flow.queue.Queue._to_slots`), not a rate's quota, so where URLs
        # wait its starts repeat its ends one service time later, the pattern the backlog
        # froze (the stations downstream meet it again every service time). Services
        # shorter than a tick keep the rate's quota (a slot starts several a tick).
        self.slotted = not self.paced and ticks >= 1.0 - 1e-9
        # Random times, c parallel servers: each start's service time is drawn, and
        # its slot frees, and its service ends, in the tick drawn: one array for both.
        self.drawn = config.drawn(ledger.tick_ms)
        self.service = config.service
        self._draws: np.random.Generator | None = None  # its holds and orders (drawn)
        self._block, self._pos = np.zeros(0), 0  # service ends drawn, not yet taken (_ends)
        # Services finishing in each tick (a drawn hold may end any time after the run).
        pad = ledger.n_ticks + 1 if self.drawn else self.hold_ticks
        self._due = ledger.zeros(pad, rows=rows)
        self._last = ledger.n_ticks + pad - 1  # the pad's last tick
        self.slots_per_replica = station_slots(config.rps_per_replica, config.service.mean_ms)
        # Slots open during each tick (reserved with the quota; each run's, where replicas
        # back from a crash open theirs one by one, as each run draws).
        self.slots = ledger.zeros(rows=rows if self.slotted else None)
        # Replicas back from a crash, one by one: the tick, and its slots open by each tick
        # from it.
        self._returned: list[tuple[int, IntArray]] = []
        self._ramp_rng: np.random.Generator | None = None
        # A start holds its slot for the service time, not the rounded service ticks: it
        # frees it ``hold`` ticks later, or for the fraction of a tick beyond them (in
        # units of 2^-LATE_BITS) one tick later: a share of each tick's starts, the rest
        # of a whole start carried (in whole numbers: the same in any stride).
        self.hold = int(ticks + 1e-9)
        self.late = round((ticks - self.hold) * (1 << LATE_BITS)) if self.slotted else 0
        # Slots freed each tick.
        self.frees = self._due if self.drawn else ledger.zeros(self.hold + 2, rows=rows)
        self._late_carry = 0
        if rows is not None and self.slotted:  # each run's own (its RowView's to use)
            for name in ("_draws", "_block", "_pos", "_returned", "_ramp_rng", "_late_carry"):
                value = getattr(self, name)
                each = (value if name != "_returned" else [] for _ in range(rows))
                setattr(self, name, PerRow(each))

    @property
    def up(self) -> int:
        return self.replicas - self.down

    def _quota(self, n: int) -> IntArray:
        quota, self._carry = tick_quota(
            self.up * self.rps_per_replica, self.ledger.tick_ms, n, self._carry
        )
        a, b = self._reserved, self._reserved + n
        self.live[a:b] = self.up
        self.rates[a:b] = self.up * self.rps_per_replica
        if self.slotted:
            self.slots[..., a:b] = self.up * self.slots_per_replica
            # Replicas back from a crash open their slots one by one, as the request
            # engine's do (gym.sim.grid.ramp_openings): those not open yet in each tick.
            for run in self.alone():  # (each run's slots and returns)
                for tick, opened in run._returned:
                    ticks = np.arange(max(a, tick), b)
                    ticks = ticks[ticks - tick < len(opened)]
                    if len(ticks):
                        run.slots[ticks] -= opened[-1] - opened[ticks - tick]
        return quota

    def held(self, t0: int) -> int:
        """The slots services begun before tick ``t0`` hold through it (those freeing one in
        it, at its instant, leave it to a start of that tick)."""
        return int(self.frees[t0 + 1 : None if self.drawn else t0 + self.hold + 2].sum())

    def book(self, t0: int, starts: IntArray) -> None:
        """Book the slots ``starts`` (from tick ``t0``) free, as :meth:`book_one` does
        tick by tick."""
        if self.drawn:
            self.start_drawn(np.repeat(np.arange(t0, t0 + len(starts)), starts))
            return
        if not self.late:
            self.frees[t0 + self.hold : t0 + self.hold + len(starts)] += starts
            return
        cum = self._late_carry + np.cumsum(starts * self.late)
        whole = cum >> LATE_BITS
        later = np.diff(whole, prepend=0)
        self._late_carry = int(cum[-1]) - (int(whole[-1]) << LATE_BITS) if len(cum) else 0
        at = t0 + self.hold
        self.frees[at : at + len(starts)] += starts - later
        self.frees[at + 1 : at + 1 + len(starts)] += later

    def book_one(self, tick: int, starts: int) -> None:
        """Book the slots ``starts`` started in ``tick`` free (not a drawn fleet's:
        :meth:`start_drawn`)."""
        later = 0
        if self.late:
            self._late_carry += starts * self.late
            later = self._late_carry >> LATE_BITS
            self._late_carry -= later << LATE_BITS
        self.frees[tick + self.hold] += starts - later
        self.frees[tick + self.hold + 1] += later

    def start_drawn(self, began: IntArray) -> None:
        """Start a drawn fleet's services, one in each tick of ``began`` (none waiting
        for a slot: those that end in the tick they began free theirs for nobody)."""
        if len(began):
            ticks = np.minimum(began + self._ends(len(began)).astype(np.int64), self._last)
            lo = int(ticks.min())
            self._due[lo : int(ticks.max()) + 1] += np.bincount(ticks - lo)

    def start_in(self, tick: int, n: int) -> int:
        """Start ``n`` of a drawn fleet's services in ``tick``, each at an instant within
        it and for a service time drawn from its distribution (:meth:`_ends`), and book
        the tick each ends (and frees its slot) in (those ending after the run, in the
        pad's last tick). How many end in ``tick`` itself: a slot free again there."""
        offsets = np.minimum(self._ends(n).astype(np.int64), self._last - tick)
        top = int(offsets.max())
        if top <= 4 * n + 64:  # ends close together: count them at once
            self._due[tick : tick + top + 1] += np.bincount(offsets)
        else:  # spread far apart (long services): one by one, not a count per tick between
            np.add.at(self._due, tick + offsets, 1)
        return int(np.count_nonzero(offsets == 0))

    def _ends(self, n: int) -> np.ndarray:
        """When ``n`` services end, in ticks from the start of the tick they begin in: an
        instant within it (uniform) plus a service time, drawn in blocks from the fleet's
        own stream and taken in order.

        An instant within the tick, uniform, also for a service that takes a slot freed in
        the tick: a service that always began where the one before it ended in the same
        tick would be late in the tick more often than not, and a slot served a little
        less than its rate (1% at 2.5 ticks a service)."""
        if self._pos + n > len(self._block):
            rng = self._drawn_rng()
            size = max(_BLOCK, n)
            fresh = rng.random(size)
            fresh += waiting.service_ms(self.service, rng.random(size)) / self.ledger.tick_ms
            self._block = np.concatenate((self._block[self._pos :], fresh))
            self._pos = 0
        ends = self._block[self._pos : self._pos + n]
        self._pos += n
        return ends

    def _drawn_rng(self) -> np.random.Generator:
        """A drawn fleet's generator for its holds and orders, its own stream's."""
        if self._draws is None:
            assert isinstance(self.rng, np.random.Generator)  # (a drawn fleet is per run)
            self._draws = substream(self.rng, "holds")
        return self._draws

    def shuffled(self, *counts: int) -> IntArray:
        """Events of a tick in a random order (from the fleet's own stream): ``counts[k]``
        of kind k each, as their kinds."""
        kinds = np.repeat(np.arange(len(counts)), counts)
        order: IntArray = kinds[self._drawn_rng().permutation(len(kinds))]
        return order

    def _advance(self, t0: int, t1: int) -> None:
        # One run's arrays, or a row per run of a batch ([..., a:b] is either's ticks).
        assert self.upstream is not None
        up = self.upstream
        starts = up.out[..., t0:t1]
        self.arrived[..., t0:t1] = starts
        self.processed[..., t0:t1] = starts
        if not self.drawn:  # (a drawn service's end is booked with its start: start_in)
            self._due[..., t0 + self.hold_ticks : t1 + self.hold_ticks] += starts
        done = self._due[..., t0:t1]
        self.out[..., t0:t1] = done
        first = max(t0, self.hold_ticks)  # the first tick whose services began in the run
        if t1 > first and not self.drawn:  # (a drawn fleet's stream: _drawn_stream)
            lag = self.hold_ticks
            began_at = slice(first - lag, t1 - lag)
            began = self.processed[..., began_at]
            finished = done[..., first - t0 :]
            expected = up.expected[..., began_at]
            if (finished == began).all():  # no crash took any: the share that survived is 1
                self.expected[..., first:t1] = expected
            else:  # (x / x is 1 exactly: a run no crash took from keeps its figures)
                survived = np.where(began > 0, finished / np.maximum(began, 1), 1.0)
                self.expected[..., first:t1] = expected * survived
            self.dispersion[..., first:t1] = up.dispersion[..., began_at]
            self.jitter[..., first:t1] = self.spread
            if self.fixed_time and not self.paced:
                # An unpaced fleet, c parallel servers: where URLs waited for its slots, each
                # slot took the next as it freed, so its starts repeat its ends one service
                # time before, a pattern frozen since the backlog formed, as irregular as
                # its stream was then (taken as Poisson), not evenly spaced.
                bound = up.fleet_bound[..., began_at]
                self.dispersion[..., first:t1][bound] = 1.0
            if self.fixed_time and self.paced:
                # Starts are paced by live replicas x rps_per_replica (the request engine's
                # start bucket); a fixed service time keeps the spacing.
                # An evenly spaced stream slower than the bucket passes it unchanged.
                bucket = self.live[began_at] * self.rps_per_replica
                pace = up.pace[..., began_at]
                slower = pace <= bucket
                tokens = start_depth(bucket, self.ledger.tick_ms)
                # Strictly periodic: a periodic stream passed unchanged, or the bucket's own
                # rate where URLs waited for it all tick.
                by_bucket = up.fleet_bound[..., began_at]
                if not slower.any():  # the bucket paces every tick (a Poisson source's)
                    self.pace[..., first:t1] = bucket
                    self.depth[..., first:t1] = tokens
                    self.periodic[..., first:t1] = by_bucket
                else:
                    self.pace[..., first:t1] = np.where(slower, pace, bucket)
                    self.depth[..., first:t1] = np.where(slower, up.depth[..., began_at], tokens)
                    passed = slower & up.periodic[..., began_at]
                    self.periodic[..., first:t1] = passed | (by_bucket & ~slower)
        change = starts - done - self.failed[self.causes[0]][..., t0:t1]
        change -= self.requeued[..., t0:t1]
        held = np.cumsum(change, axis=-1)
        if t0 > 0:
            held += self.backlog[..., t0 - 1 : t0]
        self.backlog[..., t0:t1] = held
        if self.drawn:
            self._drawn_stream(t0, t1)

    def _drawn_stream(self, t0: int, t1: int) -> None:
        """What a drawn fleet sends on, as the stations downstream see it. A service drawn
        in tick k is in flight at the end of floor(u + S) ticks, u its instant in the tick
        and S its time in ticks, which is S on average: so the services in flight at a
        tick's end are, on average, its ends over a service time's ticks (Little's law),
        and the ends expected in a tick are those in flight when it began over the mean
        service time in ticks (as c random servers end, exactly for exponential times)."""
        busy = np.empty(self.backlog[..., t0:t1].shape)
        busy[..., 0] = self.backlog[..., t0 - 1] if t0 > 0 else 0
        busy[..., 1:] = self.backlog[..., t0 : t1 - 1]
        self.expected[..., t0:t1] = busy * (self.ledger.tick_ms / self.service.mean_ms)
        self.dispersion[..., t0:t1] = 1.0
        self.jitter[..., t0:t1] = 0.0

    def crash(
        self, fault: CrashFault, start: int, end: int | None
    ) -> Generator[simpy.Event, None, None]:
        """``fault.replicas`` replicas go down at ``start`` and come back at ``end``."""
        yield self.env.timeout(start)
        self.ledger.sync(start)
        crashed = min(fault.replicas, self.up)
        if crashed:
            self._lose_in_flight(start, crashed)
            self.down += crashed
            # Replicas still opening their slots go down first, as the request engine
            # takes the lowest-numbered live ones (those back from the earliest crash):
            # their slots not open yet are gone with them.
            self._returned = self._ramping(start, crashed)
        if end is None:
            return
        yield self.env.timeout(end - start)
        self.ledger.sync(end)
        self.down -= crashed
        if crashed and self.slotted:
            for run in self.alone():
                run._return(end, crashed)

    def _ramping(self, start: int, crashed: int) -> list[tuple[int, IntArray]]:
        """The replicas still opening their slots at ``start`` but the ``crashed`` first
        (each run's, in a batch: their openings are its own draws)."""
        if self.rows is not None and self.slotted:
            return PerRow(run._ramping(start, crashed) for run in self.alone())
        ramping = [(t, o) for t, o in self._returned if t + len(o) > start]
        return ramping[crashed:]

    def _return(self, end: int, crashed: int) -> None:
        """``crashed`` replicas back at ``end`` (one run's): the ticks from then in which
        each of their slots opens, the same draws as the request engine's; then how many
        are open in each."""
        if self._ramp_rng is None:
            self._ramp_rng = substream(self.rng, "ramp")
        spr, tick_s = self.slots_per_replica, self.ledger.tick_ms / 1000.0
        for _ in range(crashed):  # one entry a replica
            at = ramp_openings(self._ramp_rng, spr, self.rps_per_replica)
            opened = np.cumsum(np.bincount((at / tick_s).astype(np.int64)))
            self._returned.append((end, opened))

    def _lose_in_flight(self, tick: int, crashed: int) -> None:
        """Take the crashed replicas' share of the services in flight at ``tick`` (in
        each run of a batch: its services in flight are its own)."""
        for run in self.alone():
            run._lose_run(tick, crashed)

    def _lose_run(self, tick: int, crashed: int) -> None:
        """:meth:`_lose_in_flight` in one run (of a batch: on its row's view)."""
        pending = self._due[tick : None if self.drawn else tick + self.hold_ticks]
        total = int(pending.sum())
        lost_total = total * crashed // self.up
        if lost_total == 0:
            return
        if self.drawn:  # which of its services were on the crashed replicas: any, at random
            lost = self._drawn_rng().multivariate_hypergeometric(pending, lost_total)
        else:
            lost = _apportion(pending, lost_total, crashed, self.up)
        pending -= lost
        if self.slotted and not self.drawn:  # (a drawn fleet's are its pending ends)
            # Their slots are gone with their replicas: no longer held, nor freed later.
            holding = self.frees[tick : tick + self.hold + 2]
            holding -= _apportion(holding, min(lost_total, int(holding.sum())), crashed, self.up)
        if self.requeue_on_crash:
            self.requeued[tick] += lost_total
            queue = self.upstream
            assert queue is not None and hasattr(queue, "requeue")
            queue.requeue(tick, lost_total)
        else:
            self.failed[self.causes[0]][tick] += lost_total

    def in_flight_end(self) -> int:
        """Services started and due after the last tick."""
        return int(self._due[self.t :].sum())

    def tally(self) -> Tally:
        return Tally.of(self, live=self.live, requeued=self.requeued)


#: Service ends a drawn fleet draws at a time (:meth:`Fleet._ends`).
_BLOCK = 4096

#: The fraction of a tick a slotted fleet's service runs beyond whole ticks, in units of
#: 2^-LATE_BITS of a tick (whole numbers, so a stride's booking is the same as a tick's).
LATE_BITS = 20


def finished(tally: Tally, params: FleetParams, tick_ms: int) -> tuple[np.ndarray, np.ndarray]:
    """Of what a fleet started in each tick, how many finished (or were requeued) and the
    share: those started a service time (whole ticks) before each tick's ends, or, for a
    drawn fleet (:attr:`Fleet.drawn`), whose ends are scattered, what no crash took in a
    service time after (:func:`crash_kept`)."""
    n = len(tally.processed)
    lag = hold_ticks(params.service.mean_ms, tick_ms)
    if params.drawn(tick_ms):
        live = tally.extra.get("live", np.full(n, params.replicas))
        kept = crash_kept(live, lag)
        return tally.processed * kept, kept
    done = np.zeros(n)
    done[: max(0, n - lag)] = (tally.out + tally.served)[lag:]
    return done, share(done, tally.processed, 1.0)


def crash_kept(live: np.ndarray, lag: int) -> np.ndarray:
    """The share of a start in each tick that no crash took in the ``lag`` ticks after it
    (a crash takes down / up before of what is in flight), from the live replicas each tick."""
    live = np.asarray(live, dtype=np.float64)
    ratio = np.ones(len(live))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio[1:] = np.where(live[:-1] > 0, np.minimum(1.0, live[1:] / live[:-1]), 1.0)
    logs = np.concatenate(([0.0], np.cumsum(np.log(np.maximum(ratio, 1e-300)))))
    k = np.arange(len(live))
    kept: np.ndarray = np.exp(logs[np.minimum(k + lag, len(live) - 1) + 1] - logs[k + 1])
    return kept


def _apportion(pending: IntArray, total: int, crashed: int, up: int) -> IntArray:
    """``total`` of ``pending`` (per tick) apportioned over its ticks by the share
    ``crashed / up``: each tick's share rounded down, the rest to the ticks with the
    largest remainders (earliest first on ties)."""
    exact = pending * crashed / up
    lost = np.floor(exact).astype(np.int64)
    rest = total - int(lost.sum())
    if rest > 0:
        order = np.argsort(-(exact - lost), kind="stable")[:rest]
        lost[order] += 1
    capped: IntArray = np.minimum(lost, pending)
    return capped


def build(b: Build, node: Node) -> Fleet:
    return Fleet(b.env, stream(b.seed, node.name), b.ledger, node.params)


def batch(builds: Sequence[Build], node: Node) -> Fleet:
    """One fleet for the runs of a batch, a row each, each run's own generator (a slotted
    fleet's slots, starts and draws each run's own: its queue books them run by run, on
    each run's view)."""
    b = builds[0]
    rngs = PerRow(stream(x.seed, node.name) for x in builds)
    return Fleet(b.env, rngs, b.ledger, node.params, rows=len(builds))


connect = connect_upstream


def fluid(
    node: Node,
    topology: Topology,
    record: RunRecord,
    net: Network,
    rate: np.ndarray,
    scv: np.ndarray,
    tick_s: float,
) -> tuple[np.ndarray, np.ndarray]:
    """What a fleet sends on in the fluid network (:mod:`gym.sim.flow.fluid`): what it
    started, one service time (whole ticks) later, less what its counts lost to a crash;
    its departures' SCV by Whitt's linking equation over its slots (one server at the
    fleet's rate when its starts are paced)."""
    name, p, n = node.name, node.params, len(rate)
    tally = record.components[name]
    net.rate[name], net.scv[name] = rate, scv
    live = tally.extra.get("live", np.full(n, p.replicas)).astype(np.float64)
    paced = p.starts_paced
    slots = live * station_slots(p.rps_per_replica, p.service.mean_ms)
    net.slots[name] = slots
    mu = 1000.0 / p.service.mean_ms
    servers = np.ones(n) if paced else np.maximum(slots, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.clip(np.where(slots > 0, rate / tick_s / (slots * mu), 1.0), 0.0, 1.0)
    cs2 = p.service.cv_value**2
    departed = 1.0 + (1.0 - rho**2) * (scv - 1.0) + rho**2 * (cs2 - 1.0) / np.sqrt(servers)
    lag = hold_ticks(p.service.mean_ms, record.timeline.tick_ms)
    _, survived = finished(tally, p, record.timeline.tick_ms)
    if p.on_crash == "requeue":
        survived = np.ones(n)  # what a crash takes goes back to the queue
    sent = np.concatenate((np.zeros(min(lag, n)), rate[: max(0, n - lag)]))
    sent *= np.concatenate((np.ones(min(lag, n)), np.clip(survived, 0, 1)[: max(0, n - lag)]))
    shifted = np.concatenate((np.ones(min(lag, n)), departed[: max(0, n - lag)]))
    return sent, np.maximum(shifted, 0.0)


class FleetLatency(Model):
    """Its service time; a start in tick k finishes in tick k + L (the flow engine's whole
    ticks), so what did not finish then was lost to a crash (or put back in its queue)."""

    def __init__(self, est: Estimate, name: str) -> None:
        super().__init__(est, name)
        p = self.node.params
        self.service: ServiceTime = p.service
        self.done, done = finished(self.tally, p, est.tick_ms)
        self.requeue = p.on_crash == "requeue"
        # A requeued job goes back to its queue: it is not lost, it comes back (the walk).
        self.kept = np.ones(est.n) if self.requeue else done
        self.back = 1.0 - done if self.requeue else np.zeros(est.n)
        self.finishes = np.zeros(est.n)
        self.queue = est.topology.inputs(name)[0].source

    def draw(self, k: np.ndarray, u: np.ndarray) -> np.ndarray:
        return waiting.service_ms(self.service, u)

    def rows(self, start: int) -> Rows:
        return spread(start, self.done, *waiting.service_grid(self.service))


#: Its latency in the flow engine's estimate (:mod:`gym.sim.flow.graph_latency`).
LATENCY = FleetLatency
#: What it sends on in the fluid network (:mod:`gym.sim.flow.fluid`).
FLUID = fluid


def rounding(node: Node, _graph: Topology, tick_ms: int, unit: Unit) -> list[str]:
    """A fleet's service time held whole ticks (not where each is drawn)."""
    p = node.params
    if p.drawn(tick_ms):
        return []  # each service time drawn (FleetParams.drawn): not rounded
    field = where(node, "service.mean_ms")
    job = (node.names or {}).get("job", "service")  # what one is called (its design's word)
    return service_ticks(field, job, p.service.mean_ms, tick_ms, unit)


ROUNDING = rounding
