"""The ``fleet`` kind: replicas with service slots, fed by one queue.

Its jobs start and run in the waiting room of the queue in front of it
(:class:`~gym.sim.request.stations.WaitingRoom`, built by :mod:`gym.sim.request.queue`); a
URL passes through here once its job is done. A crash takes replicas down there.
"""

from __future__ import annotations

from gym.core.text import Unit
from gym.models import CrashFault
from gym.sim.record import Tally
from gym.sim.request.base import Rule, Run, Url
from gym.sim.request.stations import WaitingRoom
from gym.sim.rounded import fleet_slots, where
from gym.system.topology import Node, Topology


class FleetRule(Rule):
    """A fleet: a URL reaches it with its service done, and goes straight on."""

    def __init__(self, run: Run, node: Node, causes: tuple[str, ...]) -> None:
        super().__init__(run, node, causes, extra=("requeued",))
        self.crash_cause = causes[0]
        self.room: WaitingRoom  # set by the queue in front of it

    def visit(self, url: Url) -> None:
        self.passed(url)

    def crash(self, fault: CrashFault, start: int, end: int | None) -> None:
        self.room.crash_at(fault, start, end)

    def tally(self) -> Tally:
        run, room = self.run, self.room
        tally = self.log.tally(run.capacity(room.fleet_rates), rate=run.rates(room.fleet_rates))
        tally.extra["live"] = room.live(run.n)
        return tally


RULE = FleetRule


def rounding(node: Node, _graph: Topology, _tick_ms: int, _unit: Unit) -> list[str]:
    """A fleet's replicas' round(rps_per_replica x service time) slots."""
    p = node.params
    field = where(node, "rps_per_replica")
    return fleet_slots(field, node.name, p.rps_per_replica, p.service, p.replicas)


ROUNDING = rounding
