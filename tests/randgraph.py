"""Random graph designs for cross-checking the two engines (issue 26).

:func:`draw` turns a generator seed into a :class:`Case`: a valid graph design (splits with
shares, joins, feedback loops with delays, every kind a graph may name) and a graph
scenario (a surge, every fault kind, Poisson or evenly spaced arrivals), sized from the
graph's own expected flows so that its nodes run from comfortable to overloaded.
:func:`compare` runs a case through both engines over a few simulation seeds and gives,
per quantity (each node's processed and failed totals, availability), both engines'
means and run-to-run standard deviations in points (percent) of the URLs offered.

The draws stay clear of the differences docs/model.md lists between the engines, each at
the line that avoids it, so what the cross-check finds is new. Re-measure the docs'
figure with ``python -m tests.randgraph --report 48``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import gym
from gym.models import Scenario
from gym.system.graph import GraphDesign

TICK_S = 0.01  # the runs' tick (the default, 10 ms)
SIM_SEEDS = (0, 1, 2)  # simulation seeds a case is averaged over
MAX_SURGE = 2.0  # the largest load multiplier a surge draws


@dataclass
class _Block:
    """A unit the graph is made of: one node, or a queue and its fleet, or a write buffer
    and its store. Edges reach its entry and leave its exit."""

    kind: str  # queue_fleet, queue, cache, service, buffered_store, store
    entry: str
    exit: str
    passes: float = 1.0  # share of what it takes that it sends on (ignoring losses)


@dataclass
class Case:
    """One drawn design and scenario, and what the draw put in it."""

    seed: int
    design: GraphDesign
    scenario: Scenario
    #: What the draw contains: kinds, service distributions, faults, "split", "join",
    #: "feedback", "delay", "surge", "deterministic_arrivals", "requeue".
    features: set[str] = field(default_factory=set)

    def describe(self) -> str:
        nodes = self.design.graph.nodes
        parts = [f"{n}:{getattr(s, 'kind')}" for n, s in nodes.items()]  # noqa: B009
        faults = [f"{f.kind}@{f.target}" for f in self.scenario.faults]
        return f"seed {self.seed}: {' '.join(parts)}; faults {faults or 'none'}"


def _service(rng: np.random.Generator, *, fixed_ms: list[float], random_ms: list[float]) -> Any:
    """A service time: fixed, exponential or lognormal."""
    dist = str(rng.choice(["deterministic", "exponential", "lognormal"], p=[0.4, 0.3, 0.3]))
    if dist == "deterministic":
        return {"dist": dist, "mean_ms": float(rng.choice(fixed_ms))}
    out: dict[str, Any] = {"dist": dist, "mean_ms": float(rng.choice(random_ms))}
    if dist == "lognormal":
        # Known gap (docs/model.md, "Nearly fixed random fetch times"): a lognormal of cv
        # below 0.5 is paced as a fixed time in the request engine and not in the flow
        # engine's loss streams; drawn from 0.5 up only.
        out["cv"] = round(float(rng.uniform(0.5, 1.5)), 2)
    return out


def _slots_rate(rng: np.random.Generator, capacity: float, service: dict[str, Any]) -> float:
    """The rate of a loss station of about ``capacity``/s whose slots (rate x mean) are a
    whole number, at least 4. Known gap (docs/model.md, "A few slots fed evenly spaced
    deterministic arrivals of a fraction per tick"): 1-3 slots behind evenly spaced
    arrivals lose 40% against 33%; stations get 4 slots at least."""
    mean_s = float(service["mean_ms"]) / 1000.0
    slots = max(4, round(capacity * mean_s))
    return round(slots / mean_s, 6)


def draw(seed: int) -> Case:
    """A valid random graph design and graph scenario from ``seed``."""
    rng = np.random.default_rng(seed)
    features: set[str] = set()
    n = int(rng.integers(2, 7))
    choices = ["queue_fleet", "queue", "cache", "service", "buffered_store", "store"]
    weights = np.array([0.3, 0.1, 0.18, 0.17, 0.12, 0.13])
    kinds = [str(k) for k in rng.choice(choices, size=n, p=weights / weights.sum())]
    blocks: list[_Block] = []
    for i, kind_name in enumerate(kinds, start=1):
        if kind_name == "queue_fleet":
            blocks.append(_Block(kind_name, f"q{i}", f"f{i}"))
        elif kind_name == "buffered_store":
            blocks.append(_Block(kind_name, f"wb{i}", f"db{i}"))
        else:
            prefix = {"queue": "q", "cache": "c", "service": "s", "store": "st"}[kind_name]
            blocks.append(_Block(kind_name, f"{prefix}{i}", f"{prefix}{i}"))
    # Edges between blocks: per block its (block it feeds, delay); the source's are
    # source_targets, without delays.
    out_edges: dict[int, list[tuple[int, float]]] = {i: [] for i in range(-1, n)}
    source_targets = [0]
    if n > 2 and rng.random() < 0.3:
        source_targets.append(int(rng.integers(1, n)))
        features.add("split")
    for i in range(n - 1):
        out_edges[i].append((i + 1, 0.0))  # the main path
        if i + 2 < n and rng.random() < 0.35:  # a skip forward: a split here, a join there
            out_edges[i].append((int(rng.integers(i + 2, n)), 0.0))
            features |= {"split", "join"}
    for i in range(n - 1):  # from a block with a way out (its main path), so loops end
        back = i + 1 if blocks[i].kind == "queue_fleet" else i  # a fleet may retry itself
        if back and rng.random() < 0.3:  # feedback with a delay
            j = int(rng.integers(0, back))
            delay = float(rng.choice([0.02, 0.05, 0.1, 0.25, 0.5]))
            out_edges[i].append((j, delay))
            features |= {"feedback", "split", "join"}
    for i in range(n):  # a delay on a forward edge
        for e, (to, d) in enumerate(out_edges[i]):
            if d == 0.0 and rng.random() < 0.15:
                out_edges[i][e] = (to, float(rng.choice([0.01, 0.05, 0.2])))
                features.add("delay")
    # Shares: every edge but the first 0.05-0.3 (a feedback edge too), the first the rest.
    shares: dict[int, list[float]] = {}
    for i in range(-1, n):
        targets = source_targets if i == -1 else [to for to, _ in out_edges[i]]
        if len(targets) <= 1:
            shares[i] = [1.0] * len(targets)
            continue
        rest = [round(float(rng.uniform(0.05, 0.3)), 3) for _ in targets[1:]]
        shares[i] = [round(1.0 - sum(rest), 3), *rest]

    for b in blocks:
        if b.kind == "cache":
            b.passes = 1.0 - round(float(rng.uniform(0.3, 0.95)), 3)
        elif b.kind == "service":
            b.passes = 1.0 - round(float(rng.choice([0.0, float(rng.uniform(0.05, 0.5))])), 3)
    # Expected arrivals per block at base load 1 (ignoring losses): x = s + T x.
    sent = np.zeros((n, n))
    offered = np.zeros(n)
    for m, to in enumerate(source_targets):
        offered[to] += shares[-1][m]
    for i in range(n):
        for m, (to, _) in enumerate(out_edges[i]):
            sent[to, i] += shares[i][m] * blocks[i].passes
    x = np.linalg.solve(np.eye(n) - sent, offered)

    base_rps = float(rng.choice([300, 500, 800, 1_200]))
    duration = float(rng.choice([6, 8]))
    nodes: dict[str, Any] = {"src": {"kind": "source"}}
    for i, b in enumerate(blocks):
        load = max(x[i] * base_rps, 1.0)
        rho = float(rng.uniform(0.5, 1.25))  # offered load / capacity, at base load
        cap = load / rho
        if b.kind == "queue_fleet":
            replicas = int(rng.integers(2, 7))
            svc = _service(rng, fixed_ms=[20, 50, 100, 250], random_ms=[20, 50, 100, 250])
            features.add(
                "fleet:" + ("deterministic" if svc["dist"] == "deterministic" else "random")
            )
            mean_s = svc["mean_ms"] / 1000.0
            # Whole slots per replica: the request engine rounds rps_per_replica x mean
            # to whole slots and the flow engine does not (docs/model.md, "Where the
            # engines' counts differ"), a capacity difference the rounding warning names.
            per = max(1, round(cap / replicas * mean_s))
            while per / mean_s > 4_000:  # the catalog's most per replica
                replicas += 1
                per = max(1, round(cap / replicas * mean_s))
            fleet_cap = replicas * per / mean_s
            drain = round(fleet_cap * float(rng.choice([0.9, 1.1, 1.5])), 3)
            # Known gap (docs/model.md, "A frontier buffer of a few URLs at full load",
            # and the request engine pacing a fixed-time fleet's starts as one server,
            # "a paced fleet's start bucket"): with a buffer of a few ticks the queue's
            # overflow follows its short-term waits, which differ; buffers hold 0.5 s up.
            nodes[b.entry] = {
                "kind": "queue",
                "drain_rps": drain,
                "buffer": int(max(100, drain * float(rng.uniform(0.5, 3.0)))),
            }
            nodes[b.exit] = {
                "kind": "fleet",
                "replicas": replicas,
                "rps_per_replica": round(per / mean_s, 6),
                "service": svc,
                "on_crash": str(rng.choice(["fail", "requeue"])),
            }
            if nodes[b.exit]["on_crash"] == "requeue":
                features.add("requeue")
        elif b.kind == "queue":
            drain = round(cap, 3)
            nodes[b.entry] = {
                "kind": "queue",
                "drain_rps": drain,
                "buffer": int(max(100, drain * float(rng.uniform(0.5, 3.0)))),
                "seen_fraction": round(float(rng.choice([0.0, rng.uniform(0.0, 0.2)])), 3),
            }
        elif b.kind in ("cache", "service", "store"):
            # Fixed services from a tenth of a tick to five ticks, with slivers of a tick
            # beyond whole ones (the flow engine walks the busy slots of those at least a
            # tick long; tests/test_loss_grid.py checks services up to 10 s against
            # theory). Known gap (docs/model.md, "Service times longer than the run's
            # resolution of interest"): the flow engine sends a station's take on in the
            # tick it is taken, the request engine when its service ends, so a run's last
            # service time reaches the nodes behind it in one and not the other (1 s
            # services in an 8 s run: 10 points). Random services up to 50 ms (a station
            # filling from empty with random services as long as the run is a known error
            # of the flow engine: docs/model.md, "Known error").
            svc = _service(
                rng, fixed_ms=[1, 2, 5, 10, 10.5, 20, 25, 50], random_ms=[2, 5, 10, 20, 50]
            )
            features.add(f"station:{svc['dist']}")
            node: dict[str, Any] = {"kind": b.kind, "rps": _slots_rate(rng, cap, svc)}
            node["service"] = svc
            if b.kind == "cache":
                node["hit_ratio"] = round(1.0 - b.passes, 3)
            elif b.kind == "service":
                node["finish_share"] = round(1.0 - b.passes, 3)
            else:
                # A graph's store has only the split layout now (a relational one was
                # accepted and ignored); the draw stays, so every later draw is the same.
                rng.choice(["split", "relational"])
                node["layout"] = "split"
            nodes[b.entry] = node
        elif b.kind == "buffered_store":
            # The store behind a buffer writes in a fixed time of one to five ticks (both
            # engines now flush held writes as the store's slots free).
            svc = {"dist": "deterministic", "mean_ms": float(rng.choice([10.0, 20.0, 50.0]))}
            # Known gap (docs/model.md, "The async writer with a buffer of a few ticks'
            # writes"): its split between direct and held writes is per tick in the flow
            # engine; buffers hold a second of the store's writes at least.
            # Known gap (docs/model.md, "The async writer with a buffer of a few ticks'
            # writes", and the flush once a tick): where the store's load is above the
            # flush ceiling, the request engine holds every write that finds the slots
            # busy (Erlang's share) and has little room to flush at a tick's start, the
            # flow engine holds only the excess over the tick's capacity: 4 slots offered
            # 3.7 Erlangs under a ceiling of 0.74 overflowed 5% of the run in the request
            # engine and nothing in the flow engine (generator seed 8 before this rule).
            # The store's load stays below its ceiling even in a surge (a stall or a
            # slowdown of the store fills the buffer), and buffers hold 3 s of the store's
            # writes at least: in a surge above the ceiling, the request engine held 1,421
            # writes and the flow engine 539, and 3 points of the run's URLs were still
            # held at the end in one and not the other (generator seed 13 before this).
            ceiling = round(float(rng.uniform(0.7, 1.0)), 2)
            peak = load * MAX_SURGE
            rate = _slots_rate(rng, peak / (ceiling * float(rng.uniform(0.5, 0.9))), svc)
            nodes[b.entry] = {
                "kind": "write_buffer",
                "buffer": int(rate * float(rng.uniform(3.0, 6.0))),
                "flush_ceiling": ceiling,
            }
            nodes[b.exit] = {"kind": "store", "rps": rate, "service": svc}

    edges: list[dict[str, Any]] = []
    for m, to in enumerate(source_targets):
        edges.append({"from": "src", "to": blocks[to].entry, "share": shares[-1][m]})
    for b in blocks:
        if b.entry != b.exit:
            edges.append({"from": b.entry, "to": b.exit})
    for i in range(n):
        for m, (to, delay) in enumerate(out_edges[i]):
            edge = {"from": blocks[i].exit, "to": blocks[to].entry, "share": shares[i][m]}
            if delay:
                edge["delay_s"] = delay
            edges.append(edge)
    design = GraphDesign.model_validate(
        {"name": f"random-{seed}", "graph": {"nodes": nodes, "edges": edges}}
    )
    for b in blocks:
        features.add(b.kind)

    scenario: dict[str, Any] = {
        "system": "graph",
        "duration_s": duration,
        "base_rps": base_rps,
        "arrivals": "deterministic" if rng.random() < 0.25 else "poisson",
    }
    if scenario["arrivals"] == "deterministic":
        features.add("deterministic_arrivals")
    if rng.random() < 0.5:
        start = float(rng.integers(1, int(duration) // 2))
        scenario["load"] = [
            {"at_s": 0, "multiplier": 1.0},
            {"at_s": start, "multiplier": round(float(rng.uniform(1.2, MAX_SURGE)), 2)},
            {"at_s": start + float(rng.integers(1, 3)), "multiplier": 1.0},
        ]
        features.add("surge")
    faults: list[dict[str, Any]] = []
    fleets = [b.exit for b in blocks if b.kind == "queue_fleet"]
    stallable = [
        name
        for name, spec in nodes.items()
        if spec["kind"] in ("queue", "cache", "service", "store")
    ]
    for _ in range(int(rng.integers(0, 4))):
        kind = str(rng.choice(["crash", "stall", "slowdown"]))
        at = round(float(rng.uniform(1.0, duration - 2.0)), 1)
        if kind == "crash" and fleets:
            target = str(rng.choice(fleets))
            fault: dict[str, Any] = {
                "kind": "crash",
                "target": target,
                "at_s": at,
                "replicas": int(rng.integers(1, nodes[target]["replicas"])),
            }
            if rng.random() < 0.7:
                fault["for_s"] = round(float(rng.uniform(0.5, 3.0)), 1)
        elif kind == "stall":
            fault = {
                "kind": "stall",
                "target": str(rng.choice(stallable)),
                "at_s": at,
                "for_s": round(float(rng.uniform(0.2, 1.5)), 1),
            }
        else:
            fault = {
                "kind": "slowdown",
                "target": str(rng.choice(stallable)),
                "at_s": at,
                "for_s": round(float(rng.uniform(0.5, 3.0)), 1),
                "factor": round(float(rng.uniform(1.5, 4.0)), 2),
            }
        faults.append(fault)
        features.add(f"fault:{fault['kind']}")
    scenario["faults"] = faults
    return Case(seed, design, Scenario.model_validate(scenario), features)


# -- comparing the engines --------------------------------------------------------------

#: The tolerance of a figure (tests/test_random_graphs.py argues both): a disagreement
#: is allowed FLOOR points plus K standard errors of the difference of the two means.
FLOOR = 1.0
K = 4.0


@dataclass
class Quantity:
    """One figure of a case in both engines, over the simulation seeds, in points (percent)
    of the URLs offered (availability: in points of availability)."""

    name: str  # "availability", "<node>.processed", "<node>.failed"
    flow: list[float]
    request: list[float]
    offered: float  # URLs offered a run, on average (the figures' denominator)

    @property
    def diff(self) -> float:
        return statistics.fmean(self.flow) - statistics.fmean(self.request)

    def _sd(self, runs: list[float]) -> float:
        """One engine's run-to-run standard deviation: the sample's, and never less than a
        binomial share's of the URLs offered, sqrt(p (1 - p) / N) (three runs' sample sd
        is below a third of the true one one time in ten)."""
        p = min(max(statistics.fmean(runs) / 100.0, 0.0), 1.0)
        binomial = 100.0 * math.sqrt(p * (1.0 - p) / max(self.offered, 1.0))
        sample = statistics.stdev(runs) if len(runs) > 1 else 0.0
        return max(sample, binomial)

    @property
    def se(self) -> float:
        """The standard error of ``diff``: sqrt(sd_flow^2 / n + sd_request^2 / n)."""
        return math.sqrt(
            self._sd(self.flow) ** 2 / len(self.flow)
            + self._sd(self.request) ** 2 / len(self.request)
        )

    @property
    def tolerance(self) -> float:
        return FLOOR + K * self.se

    @property
    def ok(self) -> bool:
        return abs(self.diff) <= self.tolerance

    def line(self) -> str:
        return (
            f"{self.name}: flow {statistics.fmean(self.flow):.3f}, request "
            f"{statistics.fmean(self.request):.3f} (diff {self.diff:+.3f} points, se "
            f"{self.se:.3f}, tolerance {self.tolerance:.3f})"
        )


def run_case(case: Case, engine: str, seeds: tuple[int, ...] = SIM_SEEDS) -> list[dict[str, float]]:
    """Per seed, each figure of ``case`` in ``engine``, in points; "offered" in URLs."""
    out = []
    for seed in seeds:
        m = gym.simulate(case.design, case.scenario, seed=seed, engine=engine).metrics
        offered = max(1, m.offered)
        row = {"offered": float(m.offered)}
        row["availability"] = 100.0 * (m.availability if m.availability is not None else 1.0)
        for name, tally in m.record.components.items():
            lost = sum(float(v.sum()) for v in tally.failed.values())
            row[f"{name}.processed"] = 100.0 * float(tally.processed.sum()) / offered
            row[f"{name}.failed"] = 100.0 * lost / offered
        out.append(row)
    return out


def compare(case: Case, seeds: tuple[int, ...] = SIM_SEEDS) -> list[Quantity]:
    """Each figure of ``case`` in both engines over ``seeds``."""
    flow, req = run_case(case, "flow", seeds), run_case(case, "request", seeds)
    offered = statistics.fmean(r["offered"] for r in flow)
    names = [k for k in flow[0] if k != "offered"]
    return [Quantity(k, [r[k] for r in flow], [r[k] for r in req], offered) for k in names]


def report(count: int, first: int = 0) -> None:
    """Run ``count`` random graphs through both engines and print, per graph, the
    availability disagreement and its worst node figure, then the median and worst."""
    avail: list[tuple[float, int]] = []
    worst_node: list[tuple[float, int, str]] = []
    outside: list[tuple[int, Quantity]] = []
    t0 = time.time()
    for seed in range(first, first + count):
        qs = compare(draw(seed))
        a = next(q for q in qs if q.name == "availability")
        worst = max((q for q in qs if q is not a), key=lambda q: abs(q.diff))
        avail.append((abs(a.diff), seed))
        worst_node.append((abs(worst.diff), seed, worst.name))
        outside += [(seed, q) for q in qs if not q.ok]
        print(
            f"seed {seed:3d}: availability {statistics.fmean(a.flow):7.3f} / "
            f"{statistics.fmean(a.request):7.3f} (diff {a.diff:+.3f}, se {a.se:.3f}); worst "
            f"node figure {worst.name} {worst.diff:+.3f} (se {worst.se:.3f})"
            + ("" if all(q.ok for q in qs) else "  OUTSIDE"),
            flush=True,
        )
    by_avail, by_node = sorted(avail), sorted(worst_node)
    print(
        f"\n{count} graphs (generator seeds {first}-{first + count - 1}), simulation seeds "
        f"{SIM_SEEDS}, {time.time() - t0:.0f} s; points of availability and of the URLs offered"
    )
    tenth = statistics.quantiles([d for d, _ in avail], n=10, method="inclusive")[-1]
    print(
        f"availability: median {statistics.median(d for d, _ in avail):.2f}, 90th "
        f"percentile {tenth:.2f}, worst {by_avail[-1][0]:.2f} (seed {by_avail[-1][1]})"
    )
    print(
        f"node processed/failed, each graph's worst: median "
        f"{statistics.median(d for d, _, _ in worst_node):.2f}, worst {by_node[-1][0]:.2f} "
        f"(seed {by_node[-1][1]}, {by_node[-1][2]})"
    )
    print(
        f"figures outside {FLOOR} + {K} se: {len(outside)}, "
        f"in {len({s for s, _ in outside})} graphs"
    )
    for seed, q in outside:
        print(f"  seed {seed}: {q.line()}")
    for d, seed in by_avail[-3:][::-1]:
        print(f"  availability {d:.2f}: {draw(seed).describe()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.randgraph", description=__doc__)
    parser.add_argument("--report", type=int, metavar="N", help="run N random graphs")
    parser.add_argument("--first", type=int, default=0, help="the first generator seed")
    parser.add_argument("--show", type=int, metavar="SEED", help="print one case's figures")
    args = parser.parse_args(argv)
    if args.show is not None:
        case = draw(args.show)
        print(case.describe())
        print(case.design.model_dump_json(by_alias=True, exclude_defaults=True, indent=1))
        print(case.scenario.model_dump_json(exclude_defaults=True, indent=1))
        for q in compare(case):
            print(("   " if q.ok else "!! ") + q.line())
        return 0
    if args.report:
        report(args.report, args.first)
        return 0
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
