"""A component kind written in one module, as docs/architecture.md describes: a rate
limiter that lets through at most ``rps`` per second and turns the rest away.

Its node model, its cost, its causes, its flow rule (per-tick counts) and its request
rule (what one URL meets there) are all here; registering it is one line in
``gym.system.kinds.REGISTRY``, its flow rule one ``gym.sim.flow.rules.register("limiter",
FLOW)`` and its request rule one ``gym.sim.request.register("limiter", LimiterRule)`` (a
shipped kind is its name in ``gym.system.kinds.SHIPPED``: the engines find its modules).
``tests/test_topology.py`` registers it for one test and runs a graph through both
engines.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import simpy
from pydantic import Field

from gym.core.streams import stream
from gym.models.common import InputModel, Rate
from gym.sim.flow.base import Build, RatedComponent
from gym.sim.flow.rules import FlowRule
from gym.sim.record import Tally
from gym.sim.request.base import Rule, Run, Url
from gym.system.kinds.base import Kind
from gym.system.topology import Node


class LimiterParams(InputModel):
    rps: Rate = Field(description="Requests per second it lets through.")


class LimiterNode(LimiterParams):
    kind: Literal["limiter"] = Field(description="Node kind.")


class Limiter(RatedComponent):
    """Flow: each tick lets through its whole-URL quota of what arrives; the rest fail."""

    name = "limiter"
    causes = ("rejected", "unavailable")

    def __init__(self, env: simpy.Environment, rng: np.random.Generator, ledger: Any, rps: float):
        super().__init__(env, rng, ledger, rps)
        self.upstream: Any = None

    def _advance(self, t0: int, t1: int) -> None:
        self.out[t0:t1] = self._take(self.upstream.out[t0:t1], t0, t1)
        self.pass_on_stream(t0, t1, self.upstream)
        # What it sends on is paced at its rate: no more than its quota expected per tick.
        self.expected[t0:t1] = np.minimum(self.expected[t0:t1], self.capacity[t0:t1])


class LimiterRule(Rule):
    """Request: a token bucket one tick deep refilled at ``rps``; a URL that finds no token
    is turned away (``<node>_rejected``; ``<node>_unavailable`` while stalled)."""

    def __init__(self, run: Run, node: Node, causes: tuple[str, ...]) -> None:
        super().__init__(run, node, causes)
        self.rate = float(node.params.rps)
        self.depth = max(1.0, self.rate * run.tick_s)
        self.tokens = self.depth
        self.at = 0.0
        self.stalls = 0
        self.factor = 1.0
        self.rate_log: list[tuple[int, float]] = [(0, self.rate)]

    def _now_rate(self) -> float:
        return 0.0 if self.stalls else self.rate / self.factor

    def visit(self, url: Url) -> None:
        run, log = self.run, self.log
        now = run.kernel.now
        k = run.k(now)
        self.tokens = min(self.depth, self.tokens + (now - self.at) * self._now_rate())
        self.at = now
        log.arrived[k] += 1
        rejected, unavailable = log.failed
        if self.stalls or self.tokens < 1.0:
            log.failed[unavailable if self.stalls else rejected][k] += 1
            return  # failed here
        self.tokens -= 1.0
        log.processed[k] += 1
        log.out[k] += 1
        self.passed(url)  # on its way, at once

    def change(self, tick: int, stall: int = 0, factor: float = 1.0) -> None:
        now = self.run.kernel.now
        self.tokens = min(self.depth, self.tokens + (now - self.at) * self._now_rate())
        self.at = now
        self.stalls += stall
        self.factor *= factor
        self.rate_log.append((tick, self._now_rate()))

    def tally(self) -> Tally:
        run = self.run
        return self.log.tally(run.capacity(self.rate_log), rate=run.rates(self.rate_log))


def _flow(build: Build, node: Node) -> Limiter:
    return Limiter(build.env, stream(build.seed, node.name), build.ledger, node.params.rps)


#: Its flow rule (connected as most kinds are: to the one node feeding it).
FLOW = FlowRule(_flow)


def _hint(_graph: Any, component: str, cause: str, _feeding: Any, _worst: int) -> str | None:
    """What the run's explanation says of what it turned away (None: the general words)."""
    if not cause.endswith("rejected"):
        return None
    return f"A higher rps at {component} lets more through; what it turns away is gone."


KIND = Kind(
    name="limiter",
    summary="Lets through at most rps per second; turns the rest away.",
    node=LimiterNode,
    units=lambda _p, _c: 0,
    causes=("rejected", "unavailable"),
    faults=("stall", "slowdown"),
    hint=_hint,  # the explanation's words for what it lost (optional, as every hook)
)
