"""What a cache, an external service and a store share: a loss station (slots and no
queue, Erlang loss) that finishes a share of what it answers, and retries what it fails
when its node has a retry policy (a service's calls, a store's writes)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gym.core.streams import stream
from gym.core.text import Unit
from gym.sim.record import Tally
from gym.sim.request.base import Rule, Run, Url
from gym.sim.request.stations import LossSlots
from gym.sim.rounded import loss_slots
from gym.system.topology import Node, Topology


class LossRule(Rule):
    """Slots and no queue: a request that finds every slot busy fails, or waits out its
    retry policy's backoff and tries again.

    ``finish``: the share of what it answers that is finished here (a cache's hits, a
    service's ``finish_share``); everything is finished at a node without outgoing edges.
    A store behind a write buffer is *gated*: the buffer took its slot for the write."""

    def __init__(
        self,
        run: Run,
        node: Node,
        causes: tuple[str, ...],
        *,
        rate: float,
        service: Any,
        finish: float = 0.0,
        saved: str | None = None,
    ) -> None:
        extra = ((saved,) if saved else ()) + (("retries", "retried") if node.retry else ())
        super().__init__(run, node, causes, extra=extra)
        self.retry = node.retry  # a retry policy for what fails here, or None
        self.attempts = node.retry.attempts if node.retry is not None else 1
        what = causes[0].removesuffix("_overload")
        self.station = LossSlots(rate, service, stream(run.seed, f"{node.name}/service"), what)
        self.finish = finish
        self.saved = saved
        self.rng = stream(run.seed, node.name)
        self.uniforms: list[float] = []
        self.terminal = False
        self.gated = False
        self.resumed: Callable[[], None] | None = None  # told when a stall ends (a buffer)
        self.rate_log: list[tuple[int, float]] = [(0, rate)]

    def connect(self, inputs: Sequence[Rule], outputs: Sequence[Rule]) -> None:
        # ``gated``: set by a write buffer in front of it (which meters what it sends).
        self.terminal = not outputs

    def visit(self, url: Url) -> None:
        run, log = self.run, self.log
        now = run.kernel.now
        k = int(now * run.per_s + 1e-9)
        log.arrived[k] += 1
        if self.gated:  # the write buffer took this write's slot
            self._taken(url, now, k, url.end)
            return
        cause = self.station.admit(now)
        if cause:
            if self.attempts > 1:
                url.tries = 1
                self._wait(url, k)
                return
            log.failed[cause][k] += 1
            return
        self._taken(url, now, k, self.station.occupy(now))

    def _wait(self, url: Url, k: int) -> None:
        """Wait (backoff x multiplier^(tries - 1), with jitter) and try again."""
        self.log.extra["retried"][k] += 1
        policy = self.retry
        jitter = self.rng.uniform(1.0 - policy.jitter, 1.0 + policy.jitter)
        self.run.kernel.schedule(policy.wait_s(url.tries) * jitter, self._again, url)

    def _again(self, url: Url) -> None:
        run, log = self.run, self.log
        now = run.kernel.now
        k = int(now * run.per_s + 1e-9)
        log.extra["retries"][k] += 1
        cause = self.station.admit(now)
        url.tries += 1
        if cause:
            if url.tries < self.attempts:
                self._wait(url, k)
                return
            log.failed[cause][k] += 1
            return
        self._taken(url, now, k, self.station.occupy(now))

    def _taken(self, url: Url, now: float, k: int, end: float) -> None:
        """A slot holds the request from ``now`` to ``end``."""
        run, log = self.run, self.log
        log.processed[k] += 1
        finished = self.terminal
        saved = False
        if self.finish and self._draw() < self.finish:
            finished, saved = True, bool(self.saved)
        if end >= run.end_s:  # still in service when the run ends
            return
        run.sample(self.name, url, end - now)
        if finished:
            ke = int(end * run.per_s + 1e-9)
            if saved:
                log.extra[str(self.saved)][ke] += 1
            log.served[ke] += 1
            run.sample("end_to_end", url, end - url.t)
            return
        run.kernel.schedule(end - now, self._out, url)

    def _out(self, url: Url) -> None:
        run = self.run
        self.log.out[int(run.kernel.now * run.per_s + 1e-9)] += 1
        self.passed(url)

    def _draw(self) -> float:
        """The next uniform draw of its own stream (drawn in batches)."""
        if not self.uniforms:
            self.uniforms = self.rng.random(8192).tolist()
        return self.uniforms.pop()

    def change(self, tick: int, stall: int = 0, factor: float = 1.0) -> None:
        self.station.stalls += stall
        self.station.factor *= factor
        self.rate_log.append((tick, self.station.capacity))
        if stall < 0 and self.resumed is not None:
            self.resumed()

    def tally(self) -> Tally:
        run = self.run
        rates = run.rates(self.rate_log)
        tally = self.log.tally(run.capacity(self.rate_log), rate=rates)
        if self.saved:  # a service reports its rate, as the flow engine's does
            tally.extra["rate"] = rates
        return tally


def loss_rounding(node: Node, _graph: Topology, _tick_ms: int, _unit: Unit) -> list[str]:
    """A loss station's round(rate x service time) slots. Each loss station's
    ``ROUNDING``."""
    return loss_slots(node, "request")
