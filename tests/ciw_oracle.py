"""The same network in Ciw as a gym graph design: the oracle of ``tests/test_oracle.py``.

Ciw (an open-source queueing-network simulator nobody here wrote, a test extra) runs
customers through nodes of c servers and a finite waiting room, routed by probabilities. A
gym graph maps onto it station by station:

- a **queue and the fleet it feeds**: one node of the fleet's slots (replicas x
  round(rps_per_replica x mean service)), a waiting room of the queue's buffer and the
  fleet's service times (the queue's drain is taken as not binding: the designs checked
  drain far faster than their fleet serves);
- a **write buffer and its store**: one node of the store's slots and a waiting room of the
  buffer (the buffer holds what the store cannot take, first in, first out, and hands it
  on as the store has room), the store's service times;
- a **cache, a service or a store** alone: a node of its slots and no waiting room (Erlang
  loss);
- an **edge's share**: Ciw's routing probability; a cache's hits and a service's finish
  share leave the network there, as does all a node with no edge out passes on; an edge
  with a **delay**: a node of unlimited servers whose service is the delay.

The source's Poisson load arrives at the stations it feeds, by its edges' shares. What is
compared per station (the gym node named for it: the queue, the write buffer, the loss
station): the share of arrivals turned away, what it served per second, and the waits
before service (mean and 99th percentile), all after a warm-up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gym.models import Scenario, ServiceTime
from gym.sim.grid import station_slots
from gym.system.graph import GraphDesign

#: The kinds whose node is a station of its own (servers and, for a queue or a write
#: buffer, the waiting room in front of the node it hands on to).
FRONTS = ("queue", "write_buffer")
LOSS = ("cache", "service", "store")


@dataclass
class Station:
    """One Ciw node: the gym node it is named for, the node that serves (a queue's fleet,
    a write buffer's store, else itself), its servers, waiting room and service."""

    name: str
    server: str
    servers: float
    room: float
    service: ServiceTime | None  # None: a delay node (``delay_s``)
    finish: float = 0.0
    delay_s: float = 0.0
    routes: list[tuple[int, float]] = field(default_factory=list)


@dataclass(frozen=True)
class Figures:
    """What a station did after the warm-up, over ``seconds``."""

    arrived: int
    lost: int
    served: int
    waits_ms: np.ndarray
    seconds: float

    @property
    def loss(self) -> float:
        return self.lost / self.arrived if self.arrived else 0.0

    @property
    def throughput(self) -> float:
        return self.served / self.seconds

    @property
    def mean_wait_ms(self) -> float:
        return float(self.waits_ms.mean()) if len(self.waits_ms) else 0.0

    @property
    def p99_wait_ms(self) -> float:
        return float(np.percentile(self.waits_ms, 99)) if len(self.waits_ms) else 0.0


def stations(design: GraphDesign) -> tuple[list[Station], dict[str, float]]:
    """The Ciw nodes of ``design``, routed, and the source's arrival share at each (by the
    station's name)."""
    nodes = design.graph.nodes
    edges = design.graph.edges
    out: list[Station] = []
    home: dict[str, int] = {}  # gym node -> its station's index
    for name, spec in nodes.items():
        if spec.kind in FRONTS:
            (server,) = [e.target for e in edges if e.source == name]
            out.append(_station(name, server, nodes[server], room=float(spec.buffer)))
            home[name] = home[server] = len(out) - 1
        elif spec.kind in LOSS and name not in home:
            out.append(_station(name, name, spec, room=0.0))
            home[name] = len(out) - 1
    arrivals: dict[str, float] = {}
    for e in edges:
        source = nodes[e.source]
        if source.kind == "source":
            target = out[home[e.target]].name
            arrivals[target] = arrivals.get(target, 0.0) + e.share
            continue
        if source.kind in FRONTS:
            continue  # within its station
        here = out[home[e.source]]
        go = home[e.target]
        if e.delay_s:
            out.append(Station(f"delay:{e.source}->{e.target}", "", math.inf, math.inf, None))
            out[-1].delay_s = e.delay_s
            out[-1].routes.append((go, 1.0))
            go = len(out) - 1
        here.routes.append((go, e.share * (1.0 - here.finish)))
    return out, arrivals


def _station(name: str, server: str, spec: Any, room: float) -> Station:
    """A station whose servers are ``spec``'s (a fleet's replicas' slots, a loss station's
    slots), with ``room`` waiting places in front."""
    service: ServiceTime = spec.service
    if spec.kind == "fleet":
        servers = spec.replicas * station_slots(spec.rps_per_replica, service.mean_ms)
    else:
        servers = station_slots(spec.rps, service.mean_ms)
    finish = {"cache": "hit_ratio", "service": "finish_share"}.get(spec.kind)
    share = float(getattr(spec, finish)) if finish else 0.0
    return Station(name, server, float(servers), room, service, finish=share)


def _ciw_service(ciw: Any, service: ServiceTime | None, delay_s: float) -> Any:
    """Ciw's distribution of a service time, in seconds."""
    if service is None:
        return ciw.dists.Deterministic(value=delay_s)
    mean = service.mean_ms / 1000.0
    if service.dist == "exponential":
        return ciw.dists.Exponential(rate=1.0 / mean)
    if service.dist == "deterministic":
        return ciw.dists.Deterministic(value=mean)
    sigma2 = math.log(1.0 + service.cv_value**2)  # lognormal: the underlying normal's
    return ciw.dists.Lognormal(mean=math.log(mean) - sigma2 / 2.0, sd=math.sqrt(sigma2))


def run(
    design: GraphDesign, scenario: Scenario, seed: int, warmup_s: float = 0.0
) -> dict[str, Figures]:
    """Ciw's run of ``design`` under ``scenario`` (its base load, Poisson, for its
    duration), per station by name, and ``"network"``: arrivals and what left served."""
    import ciw

    built, arrivals = stations(design)
    n = len(built)
    routing = [[0.0] * n for _ in range(n)]
    for i, s in enumerate(built):
        for j, p in s.routes:
            routing[i][j] += p
    rate = scenario.base_rps
    network = ciw.create_network(
        arrival_distributions=[
            ciw.dists.Exponential(rate=rate * arrivals[s.name]) if s.name in arrivals else None
            for s in built
        ],
        service_distributions=[_ciw_service(ciw, s.service, s.delay_s) for s in built],
        number_of_servers=[s.servers if math.isinf(s.servers) else int(s.servers) for s in built],
        queue_capacities=[s.room if math.isinf(s.room) else int(s.room) for s in built],
        routing=routing,
    )
    ciw.seed(seed)
    sim = ciw.Simulation(network, node_class=_loss_node(ciw))
    sim.lost = []  # (node, time) of each customer lost at a full node it was sent on to
    sim.simulate_until_max_time(scenario.duration_s)
    return _figures(sim.get_all_records(), sim.lost, built, warmup_s, scenario.duration_s)


def _loss_node(ciw: Any) -> type:
    """Ciw's node with the gym's loss: a customer served here that finds the node it goes
    on to full is lost there (counted in ``simulation.lost``), where Ciw would hold it at
    its server, blocking it, until there is room."""

    class LossNode(ciw.Node):  # type: ignore[misc, name-defined]
        def block_individual(self, individual: Any, next_node: Any) -> None:
            self.simulation.lost.append((next_node.id_number, self.now))
            individual.destination = -1
            self.release(individual, self.simulation.nodes[-1])

    return LossNode


def _figures(
    records: list[Any],
    lost: list[tuple[int, float]],
    built: list[Station],
    warmup_s: float,
    end_s: float,
) -> dict[str, Figures]:
    """Per station: its arrivals after ``warmup_s`` (served, turned away from outside, or
    lost on the way in), and its waits; ``"network"``: each customer's end."""
    seconds = end_s - warmup_s
    kept = [r for r in records if r.arrival_date >= warmup_s]
    inside = [node for node, at in lost if at >= warmup_s]
    out: dict[str, Figures] = {}
    for i, s in enumerate(built, start=1):
        if s.service is None:
            continue
        mine = [r for r in kept if r.node == i]
        served = [r for r in mine if r.record_type == "service"]
        turned = len(mine) - len(served) + inside.count(i)
        out[s.name] = Figures(
            arrived=len(served) + turned,
            lost=turned,
            served=len(served),
            waits_ms=np.array([r.waiting_time * 1000.0 for r in served]),
            seconds=seconds,
        )
    rejected = sum(1 for r in kept if r.record_type == "rejection")
    ended = sum(1 for r in kept if r.record_type == "service" and r.destination == -1)
    left = ended - len(inside)
    out["network"] = Figures(rejected + ended, rejected + len(inside), left, np.zeros(0), seconds)
    return out
