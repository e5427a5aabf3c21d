"""The ``lookup`` kind: a set of the URLs seen so far, a loss station whose lookups skip what
was seen before (the kind's skip causes, tested in order); the new URLs go on when their
lookup ends. Links reach it in batches (:meth:`LookupRule.batch`)."""

from __future__ import annotations

from gym.core.streams import stream
from gym.core.text import Unit
from gym.sim.request.base import Run, Url
from gym.sim.request.loss import LossRule
from gym.sim.request.stations import LossSlots
from gym.sim.rounded import loss_slots
from gym.system.topology import Node, Topology


class LookupRule(LossRule):
    """A set of the URLs seen, sharded by URL hash (each shard a loss station of its own)."""

    def __init__(self, run: Run, node: Node, causes: tuple[str, ...]) -> None:
        p = node.params
        super().__init__(run, node, causes, rate=p.rps, service=p.service)
        self.tests = [
            [(cause, share) for cause, share in p.skips(links=links).items() if share]
            for links in (False, True)
        ]
        for cause in p.skips():
            self.log.skipped[cause] = [0] * (run.n + 1)
        # A lookup of the hot key goes to shard 0, any other to a shard at random.
        per_shard = p.rps * p.busiest()
        what = causes[0].removesuffix("_overload")
        self.shards = (
            [
                LossSlots(per_shard, p.service, stream(run.seed, f"{node.name}/shard{i}"), what)
                for i in range(p.shards)
            ]
            if p.shards > 1
            else [self.station]
        )
        self.hot = p.hot_key_share
        self.rng_shard = stream(run.seed, f"{node.name}/hash")
        self.hashes: list[float] = []

    def look_up(self, now: float, links: bool = False) -> float | None:
        """One lookup at ``now`` (of a link found on a page, or of a seed): its end time
        if the URL is new and goes on, else None (failed, skipped, or still being looked
        up when the run ends)."""
        run, log = self.run, self.log
        k = int(now * run.per_s + 1e-9)
        log.arrived[k] += 1
        tests = self.tests[links]
        station = self.station
        if len(self.shards) > 1:
            if not self.hashes:
                self.hashes = self.rng_shard.random(8192).tolist()
            u = self.hashes.pop()
            if u < self.hot:
                station = self.shards[0]
            else:
                u = (u - self.hot) / (1.0 - self.hot)  # uniform again, over the shards
                station = self.shards[min(int(u * len(self.shards)), len(self.shards) - 1)]
        cause = station.admit(now)
        if cause:
            # A lost lookup of a URL already seen loses nothing: skipped as seen.
            if tests and tests[0][0] == "seen_url" and self._draw() < tests[0][1]:
                log.skipped["seen_url"][k] += 1
                return None
            log.failed[cause][k] += 1
            return None
        log.processed[k] += 1
        end = station.occupy(now)
        for skip, share in tests:
            if self._draw() < share:
                log.skipped[skip][k] += 1
                return None
        if end >= run.end_s:  # still being looked up when the run ends
            return None
        return end

    def visit(self, url: Url) -> None:
        run = self.run
        now = run.kernel.now
        end = self.look_up(now)
        if end is None:
            return
        run.sample(self.name, url, end - now)
        run.kernel.schedule(end - now, self._out, url)

    def change(self, tick: int, stall: int = 0, factor: float = 1.0) -> None:
        super().change(tick, stall, factor)  # the set's capacity, as the flow engine's
        if len(self.shards) > 1:
            for shard in self.shards:
                shard.stalls += stall
                shard.factor *= factor

    def batch(self, count: int) -> None:
        """``count`` links arrive now: each is looked up, and each new one starts its walk
        from here when its lookup ends."""
        run = self.run
        kernel = run.kernel
        now = kernel.now
        tick = int(now * run.per_s + 1e-9)
        measured = now >= run.warmup_s
        for _ in range(count):
            end = self.look_up(now, links=True)
            if end is not None:
                url = Url(now, tick, measured)
                run.sample(self.name, url, end - now)
                url.end = end
                # Started as SimPy starts a process: an urgent step now, which then
                # waits until the lookup ends.
                kernel.urgent(self._started, url)

    def _started(self, url: Url) -> None:
        kernel = self.run.kernel
        end, url.end = url.end, 0.0
        kernel.schedule(end - kernel.now, self._left, url)

    def _left(self, url: Url) -> None:
        """A link's lookup ends: it leaves here (its walk starts here, not passing the
        tees of this node)."""
        run = self.run
        self.log.out[int(run.kernel.now * run.per_s + 1e-9)] += 1
        self.onward(url)


RULE = LookupRule


def rounding(node: Node, _graph: Topology, _tick_ms: int, _unit: Unit) -> list[str]:
    """Each shard's round(rate x service time) slots, the busiest taking its share (the
    hot key's, and an even part of the rest)."""
    return loss_slots(node, "request", shards=node.params.shards, share=node.params.busiest())


ROUNDING = rounding
