"""A fleet: replicas x rps_per_replica starts per second, each taking the service time;
fed by a queue. A crashed replica's work in flight fails (``<node>_crash_loss``) or goes
back to the head of the queue."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from gym.models import FetchersConfig
from gym.models.common import Rate, ServiceTime
from gym.system.kinds.base import Kind, NodeChange, Seen

if TYPE_CHECKING:
    from gym.models import Catalog
    from gym.system.topology import Node, Topology


class FleetParams(FetchersConfig):
    """A fleet's parameters (the crawler's fetchers, in general words)."""

    replicas: int = Field(description="Number of replicas (workers).", gt=0, le=100_000)
    rps_per_replica: Rate = Field(description="Requests per second one replica can start.")
    service: ServiceTime = Field(
        default_factory=lambda: ServiceTime(mean_ms=250.0),
        description=(
            "How long one job takes (default 250 ms). A replica holds rps_per_replica x "
            "mean service time jobs in flight."
        ),
    )
    on_crash: Literal["fail", "requeue"] = Field(
        "fail",
        description=(
            "What happens to the jobs in flight on a replica when it crashes: they fail "
            "(cause <node>_crash_loss) or go back to the head of the queue feeding it."
        ),
    )
    paced: bool = Field(
        False,
        description=(
            "Meter the starts through a token bucket at live replicas x rps_per_replica, "
            "a twentieth of a tick's starts deep (true: as the crawler's fetchers run), "
            "rather than start a waiting job the moment a slot frees (false: c parallel "
            "servers). It applies to service times of cv below 0.5, fixed or nearly fixed, "
            "whose starts would otherwise stay in step; more variable ones are never paced."
        ),
    )

    @property
    def starts_paced(self) -> bool:
        """Whether the engines pace its starts through a bucket at live replicas x
        rps_per_replica: declared ``paced``, with fixed or nearly fixed service times
        (:attr:`~gym.models.common.ServiceTime.nearly_fixed`), as the flow engine's
        per-tick quota paces them. Otherwise its slots are c parallel servers (an M/D/c
        queue with fixed times), a free slot starting the next waiting job at once."""
        return self.paced and self.service.nearly_fixed

    def drawn(self, tick_ms: int) -> bool:
        """Whether the flow engine draws each of its service times (the request engine
        draws every one): random times, a tick or more on average, in slots that are c
        parallel servers (not paced). Shorter random times are served at a quota a tick."""
        random = self.service.dist != "deterministic"
        return random and not self.starts_paced and self.service.mean_ms / tick_ms >= 1 - 1e-9


class FleetNode(FleetParams):
    """A fleet node in a graph design."""

    kind: Literal["fleet"] = Field(description="Node kind.")


def _check(node: Node, graph: Topology) -> list[tuple[str, str]]:
    """A fleet takes its work from exactly one queue, which hands out to it alone."""
    where = f"graph.nodes.{node.name}"
    inputs = graph.inputs(node.name)
    if len(inputs) != 1:
        return [(where, f"a fleet takes its work from exactly one queue (it has {len(inputs)})")]
    feeder = graph.node(inputs[0].source)
    if inputs[0].delay_s:
        return [
            (
                where,
                f"the edge from {feeder.name} has a delay; a queue hands out to its fleet at once",
            )
        ]
    if feeder.kind != "queue":
        return [(where, "a fleet takes its work from one queue: put one in front of it")]
    if len(graph.outputs(feeder.name)) > 1:
        return [
            (
                where,
                f"the queue {feeder.name} in front of it feeds other nodes too; a queue "
                "hands out to one fleet",
            )
        ]
    return []


def _allowed(p: Any, c: Catalog) -> list[tuple[str, str]]:
    """A rate per replica the catalog's fetcher units can give."""
    most = c.fetchers.max_rps_per_replica
    if p.rps_per_replica <= most:
        return []
    return [
        (
            "rps_per_replica",
            f"{p.rps_per_replica:g} is more than one replica can give (the catalog allows "
            f"at most {most:g}/s per replica); add replicas instead",
        )
    ]


def _scale(units: int, c: Catalog) -> dict[str, Any]:
    """What ``units`` fleet units give: one replica each, at the catalog's fastest."""
    return {"replicas": units, "rps_per_replica": c.fetchers.max_rps_per_replica}


def _hint(
    _graph: Topology, component: str, cause: str, _feeding: dict[str, str], _worst: int
) -> str | None:
    """A fleet that lost work in a crash: a spare replica, or requeueing it."""
    if not cause.endswith("crash_loss"):
        return None
    return (
        "More replicas (N+1: one beyond the load's need) keep the rest below "
        f"saturation while one is down; with on_crash: requeue on {component}, the work "
        "in flight on it goes back to its feeder instead of failing."
    )


def _changes(seen: Seen) -> list[NodeChange]:
    """``on_crash: requeue`` on a fleet that lost work in a crash."""
    if seen.node.get("on_crash", "fail") != "fail" or not seen.lost_by("crash_loss"):
        return []
    return [
        NodeChange(
            f"{seen.name}.on_crash=requeue",
            f"requeue a crashed replica's work at {seen.name} instead of failing it",
            sets={"on_crash": "requeue"},
        )
    ]


KIND = Kind(
    name="fleet",
    summary="replicas x rps_per_replica starts per second, fed by a queue; replicas crash.",
    node=FleetNode,
    units=lambda p, _c: p.replicas,
    scale=_scale,
    causes=("crash_loss",),
    holds_work=True,
    faults=("crash",),
    check=_check,
    allowed=_allowed,
    hint=_hint,
    changes=_changes,
)
