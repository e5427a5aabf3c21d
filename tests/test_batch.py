"""The flow engine's batches: the runs of one design and scenario under several seeds,
advanced together (:func:`gym.simulate_many`, :func:`gym.sim.flow.engine.run_many`).

Run k of a batch is the run of its seed on its own, to the last digit: every per-tick
array of every component, what is in flight at the end, and the latency estimates. And
``--runs N`` (in batches) gives what N runs of :func:`gym.simulate` give.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import tracemalloc
from typing import Any

import numpy as np
import pytest

import gym
from gym.core import heap
from gym.explore import montecarlo
from gym.sim.flow import walk
from gym.sim.record import RunRecord
from tests import randgraph
from tests.conftest import ROOT

SEEDS = [0, 1, 2]

DESIGNS = sorted((ROOT / "designs").glob("*.yaml")) + sorted(
    (ROOT / "designs" / "levers").glob("*.yaml")
)
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml")) + sorted(
    (ROOT / "scenarios" / "levers").glob("*.yaml")
)
EDGES = ROOT / "tests" / "golden" / "edges"
# Every shipped crawler design under the default scenario, every shipped scenario with the
# reference and the starter, the systems under theirs, and the edge cases of the golden
# tests (every fault, requeued crashes, random and fixed services, the writer, dedup).
PAIRS = (
    [(d, ROOT / "scenarios" / "crawler-chaos.yaml") for d in DESIGNS]
    + [(ROOT / "designs" / n, s) for s in SCENARIOS for n in ("reference.yaml", "starter.yaml")]
    + [
        (d, ROOT / "scenarios" / "systems" / f"{system}.yaml")
        for system in ("ingestion", "url-shortener")
        for d in sorted((ROOT / "designs" / "systems").glob(f"{system}*.yaml"))
    ]
    + [
        (EDGES / f"{d}.yaml", EDGES / f"{s}.yaml")
        for s, d in (
            ("every-fault", "requeue-random"),
            ("every-fault", "requeue-fixed"),
            ("every-fault-poisson", "requeue-random"),
            ("every-fault-dedup", "fail-canonical"),
        )
    ]
)


def differences(a: RunRecord, b: RunRecord) -> list[str]:
    """Every figure in which two records differ (none: the same run, to the last digit)."""
    out = []
    if not np.array_equal(a.offered, b.offered):
        out.append("offered")
    if a.in_flight_end != b.in_flight_end:
        out.append("in_flight_end")
    if a.components.keys() != b.components.keys():
        out.append("components")
    for name, x in a.components.items():
        y = b.components[name]
        for f in ("capacity", "arrived", "processed", "out", "served", "backlog", "rate"):
            u, v = getattr(x, f), getattr(y, f)
            if (u is None) != (v is None) or (u is not None and not np.array_equal(u, v)):
                out.append(f"{name}.{f}")
        for group in ("failed", "extra", "skipped"):
            u, v = getattr(x, group), getattr(y, group)
            if u.keys() != v.keys() or any(not np.array_equal(u[k], v[k]) for k in u):
                out.append(f"{name}.{group}")
    la, lb = dict(a.latency), dict(b.latency)
    if la.keys() != lb.keys():
        out.append("latency")
    for key in la:
        u, v = la[key], lb[key]
        pairs = [(u.ticks, v.ticks), (u.values_ms, v.values_ms), (u.weights, v.weights)]
        if not all(_same(x, y) for x, y in pairs):
            out.append(f"latency.{key}")
    return out


def _same(x: np.ndarray | None, y: np.ndarray | None) -> bool:
    return (x is None and y is None) or (x is not None and y is not None and np.array_equal(x, y))


def _records(design: Any, scenario: Any, seeds: list[int]) -> tuple[list[Any], list[Any]]:
    many = gym.simulate_many(design, scenario, seeds=seeds)
    ones = [gym.simulate(design, scenario, seed=seed) for seed in seeds]
    return [r.metrics.record for r in many], [r.metrics.record for r in ones]


@pytest.mark.parametrize(("design", "scenario"), PAIRS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_run_k_of_a_batch_is_its_seed_run(design: Any, scenario: Any) -> None:
    many, ones = _records(design, scenario, SEEDS)
    for seed, a, b in zip(SEEDS, many, ones, strict=True):
        assert a.seed == b.seed == seed
        assert differences(a, b) == [], f"seed {seed}"


@pytest.mark.parametrize("draw", range(12))
def test_random_graphs_batched_as_run_alone(draw: int) -> None:
    """Drawn graphs (splits, joins, loops, delays, retries, write buffers, every fault)."""
    case = randgraph.draw(draw)
    many, ones = _records(case.design, case.scenario, [3, 0, 7])
    for a, b in zip(many, ones, strict=True):
        assert differences(a, b) == [], case.describe()


def test_a_batch_is_independent_of_its_other_runs() -> None:
    """Seed 5's run is the same in any batch: alone, first, last, with itself twice."""
    design = gym.load_design(ROOT / "designs" / "starter.yaml")
    scenario = gym.load_scenario(ROOT / "scenarios" / "crawler-chaos.yaml")
    alone = gym.simulate(design, scenario, seed=5).metrics.record
    for seeds, k in (([5, 1, 2], 0), ([9, 8, 5], 2), ([5, 5], 1)):
        got = gym.simulate_many(design, scenario, seeds=seeds)[k].metrics.record
        assert differences(got, alone) == []


@pytest.mark.parametrize(
    ("design", "scenario", "own"),
    [
        # Every crawler node has one component for the batch (a row per run).
        ("designs/reference.yaml", "scenarios/crawler-chaos.yaml", set()),
        ("designs/levers/canonicalized.yaml", "scenarios/crawler-chaos.yaml", set()),
        ("tests/golden/edges/requeue-fixed.yaml", "tests/golden/edges/every-fault.yaml", set()),
        # A seen set, its links and the plumbing of a loop (a split, a delayed edge, a
        # junction), and stations with a retry policy: one component for the batch too.
        ("designs/levers/seen-set-4.yaml", "scenarios/levers/url-variants.yaml", set()),
        ("designs/levers/retry-storm.yaml", "scenarios/levers/store-brownout.yaml", set()),
        ("designs/writer-lossless.yaml", "scenarios/crawler-chaos.yaml", set()),
        # A graph's fleet of a tick or more a service books its slots start by start, each
        # run's own (the queue in front hands out run by run, on each run's view), and
        # a fleet of random times draws each one: one component for the batch all the same.
        ("designs/systems/ingestion.yaml", "scenarios/systems/ingestion.yaml", set()),
        ("tests/golden/edges/requeue-random.yaml", "tests/golden/edges/every-fault.yaml", set()),
    ],
)
def test_which_nodes_a_batch_shares(
    design: str, scenario: str, own: set[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gym.sim.flow import engine
    from gym.sim.flow.base import RowView
    from gym.sim.timeline import Timeline
    from gym.system import compiled

    d = gym.load_design(ROOT / design)
    s = gym.load_scenario(ROOT / scenario)
    built: list[dict[str, Any]] = [{}, {}, {}]
    each: list[str] = []  # what has a component per run: each node's, and the plumbing's
    made = engine.Each.__init__

    def counted(self: Any, parts: list[Any]) -> None:
        each.append(parts[0].name)
        made(self, parts)

    monkeypatch.setattr(engine.Each, "__init__", counted)
    records = engine.run_graph(
        compiled.system_topology(d, s), s, [4, 5, 6], Timeline(s, 10), built=built
    )
    assert {n for n, c in built[0].items() if not isinstance(c, RowView)} == own
    assert set(each) == own
    for k, record in enumerate(records):
        alone = gym.simulate(d, s, seed=record.seed).metrics.record
        record.latency = alone.latency  # (run_many adds the estimates: compared above)
        assert differences(record, alone) == [], f"run {k}"


#: A scenario acting on every crawler component a batch now shares: a surge with more links
#: a page, crashes of the fetchers (one never back), stalls and slowdowns of the seen set,
#: the cache, the resolver and the page store.
EVERYTHING = {
    "name": "everything",
    "duration_s": 12,
    "base_rps": 3000,
    "load": [
        {"at_s": 0, "multiplier": 1.0},
        {"at_s": 3, "multiplier": 2.0, "links_per_page": 15},
        {"at_s": 8, "multiplier": 1.0},
    ],
    "web": {"links_per_page": 10, "links_seen_fraction": 0.9, "hot_key_share": 0.05},
    "resolver": {"rps": 3000},
    "faults": [
        {"kind": "crash", "at_s": 2, "for_s": 3, "target": "fetchers", "replicas": 2},
        {"kind": "stall", "at_s": 4, "for_s": 1.5, "target": "seen_set"},
        {"kind": "slowdown", "at_s": 6, "for_s": 2, "target": "seen_set", "factor": 3},
        {"kind": "stall", "at_s": 5, "for_s": 2, "target": "page_store"},
        {"kind": "slowdown", "at_s": 3, "for_s": 4, "target": "resolver", "factor": 4},
        {"kind": "crash", "at_s": 9, "target": "fetchers", "replicas": 1},
        {"kind": "stall", "at_s": 7, "for_s": 1, "target": "cache"},
    ],
}
_CRAWLER = {"frontier": {"drain_rps": 30000, "buffer": 80000}}
#: Crawler designs with the add-ons whose components a batch shares: a seen set of several
#: shards (a hot key), a Bloom filter and content hashing, retries at the resolver and the
#: store, a write buffer before a store of random writes, requeued crashes of fetchers of
#: random and fixed times.
ADD_ONS = {
    "sharded seen set, retries, random fetchers": {
        **_CRAWLER,
        "name": "a",
        "fetchers": {
            "replicas": 4,
            "rps_per_replica": 4000,
            "on_crash": "requeue",
            "service": {"dist": "lognormal", "mean_ms": 250, "cv": 1.2},
        },
        "cache": {"hit_ratio": 0.5},
        "page_store": {"rps": 1500},
        "retries": {"attempts": 4, "backoff_s": 0.03, "multiplier": 2, "jitter": 0.5},
        "discovery": {"shards": 4, "service": {"dist": "exponential", "mean_ms": 2}},
        "dedup": {"seen_set": "bloom", "fp_rate": 0.01, "content_hash": True},
    },
    "seen set of fixed lookups, retries, a write buffer": {
        **_CRAWLER,
        "name": "b",
        "fetchers": {
            "replicas": 4,
            "rps_per_replica": 4000,
            "on_crash": "requeue",
            "service": {"dist": "deterministic", "mean_ms": 250},
        },
        "cache": {"hit_ratio": 0.3},
        "page_store": {"rps": 2000, "service": {"dist": "lognormal", "mean_ms": 40, "cv": 1.0}},
        "async_writer": {"buffer": 3000, "flush_ceiling": 0.8},
        "retries": {"attempts": 3, "backoff_s": 0.02, "multiplier": 1, "jitter": 0},
        "discovery": {"shards": 1, "service": {"dist": "deterministic", "mean_ms": 30}},
    },
}


@pytest.mark.parametrize("name", list(ADD_ONS))
def test_every_add_on_batched_as_run_alone(name: str) -> None:
    """Run k of a batch is seed k's run, for crawler designs with every component a batch
    shares under faults on each (seeds repeated, and a batch of one)."""
    design = gym.Design.model_validate(ADD_ONS[name])
    scenario = gym.Scenario.model_validate(EVERYTHING)
    for seeds in ([0, 1, 2], [5, 5], [7]):
        many, ones = _records(design, scenario, seeds)
        for seed, a, b in zip(seeds, many, ones, strict=True):
            assert differences(a, b) == [], f"seed {seed} of {seeds}"


@pytest.mark.parametrize("own", [("lookup",), ("links", "queue"), ("service", "store"), ("store",)])
def test_a_batch_with_kinds_run_by_run(
    own: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kind with no batched form (one registered from outside) runs run by run in a
    batch, beside batched ones that read it through ``Stacked`` and that it reads through
    ``RowView``s, with the plumbing between them per run: still each seed's run alone.
    Here shipped kinds are made so by taking their ``batch`` away."""
    import dataclasses

    from gym.sim.flow import rules

    for kind in own:
        monkeypatch.setitem(
            rules.RULES, kind, dataclasses.replace(rules.rule_for(kind), batch=None)
        )
    cases = [
        ("designs/levers/seen-set-4.yaml", "scenarios/levers/url-variants.yaml"),
        ("designs/writer-lossless.yaml", "scenarios/crawler-chaos.yaml"),
        ("designs/systems/ingestion.yaml", "scenarios/systems/ingestion.yaml"),
    ]
    for design, scenario in cases:
        many, ones = _records(ROOT / design, ROOT / scenario, SEEDS)
        for seed, a, b in zip(SEEDS, many, ones, strict=True):
            assert differences(a, b) == [], f"{design} seed {seed}"


def test_runs_in_batches_equal_separate_runs() -> None:
    """``run_many`` (``--runs``) gives each seed's figures as :func:`gym.simulate` does."""
    design = gym.load_design(ROOT / "designs" / "starter.yaml")
    scenario = gym.load_scenario(ROOT / "scenarios" / "crawler-chaos.yaml")
    tasks = montecarlo.tasks_for(design, scenario, range(10, 17))
    work = montecarlo.batches(tasks, budget=3 * montecarlo.run_bytes(tasks[0]))
    assert [b.seeds for b in work] == [(10, 11, 12), (13, 14, 15), (16,)]
    batched = montecarlo.run_tasks(tasks)
    alone = [
        montecarlo.evaluate_batch(montecarlo.Batch(t.design, t.scenario, (t.seed,)))[0]
        for t in tasks
    ]
    assert batched == alone
    for got, t in zip(batched, tasks, strict=True):
        r = gym.simulate(design, scenario, seed=t.seed)
        assert got["seed"] == t.seed
        assert got["availability"] == r.metrics.availability
        assert got["throughput_rps"] == r.metrics.throughput_rps


def test_batches_split_by_design_budget_and_workers() -> None:
    design = gym.load_design(ROOT / "designs" / "reference.yaml")
    other = gym.load_design(ROOT / "designs" / "starter.yaml")
    scenario = gym.load_scenario(ROOT / "scenarios" / "crawler-chaos.yaml")
    tasks = montecarlo.tasks_for(design, scenario, range(6)) + montecarlo.tasks_for(
        other, scenario, range(6)
    )
    # A design's tasks never share a batch with another's.
    assert [b.seeds for b in montecarlo.batches(tasks)] == [tuple(range(6))] * 2
    # Two workers: at least two batches of all twelve, each at most six runs.
    two = montecarlo.batches(tasks, parts=2)
    assert [len(b.seeds) for b in two] == [6, 6]
    # A budget of 4 runs' arrays: 4 + 2 for each design.
    four = montecarlo.batches(tasks, budget=4 * montecarlo.run_bytes(tasks[0]))
    assert [b.seeds for b in four] == [(0, 1, 2, 3), (4, 5)] * 2
    # A budget below one run still runs each run (alone).
    assert len(montecarlo.batches(tasks[:3], budget=1)) == 3


def _shipped(design: str) -> tuple[Any, Any]:
    return gym.load_design(ROOT / "designs" / design), ROOT / "scenarios" / "crawler-chaos.yaml"


def _drawn(seed: int) -> tuple[Any, Any]:
    case = randgraph.draw(seed)
    return case.design, case.scenario


MEMORY_CASES = {
    "reference": (lambda: _shipped("reference.yaml"), 8, 10),
    "seen-set-8": (lambda: _shipped("levers/seen-set-8.yaml"), 1, 10),  # lookups: the heaviest
    "retry-backoff": (lambda: _shipped("levers/retry-backoff.yaml"), 2, 10),
    # Drawn graphs: splits, joins, delays, loops, a write buffer (under tracemalloc a run
    # takes several times as long: two of them).
    "drawn-3": (lambda: _drawn(3), 2, 10),
    "drawn-4": (lambda: _drawn(4), 2, 10),
    # 1-second ticks: what a run holds whatever its ticks is most of it.
    "reference-1s-ticks": (lambda: _shipped("reference.yaml"), 8, 1000),
    "drawn-0-1s-ticks": (lambda: _drawn(0), 4, 1000),
    "drawn-14-1s-ticks": (lambda: _drawn(14), 4, 1000),
}


@pytest.mark.parametrize("case", list(MEMORY_CASES))
def test_batch_memory_within_the_estimate(case: str) -> None:
    """What a batch allocates at its peak, per run, stays within :func:`run_bytes` (the
    figure batches are split by: shipped designs and drawn graphs, with splits, joins,
    delays and retries), and nothing of it is left once its results are read."""
    make, runs, tick_ms = MEMORY_CASES[case]
    d, sc = make()
    scenario = sc if isinstance(sc, gym.Scenario) else gym.load_scenario(sc)
    tasks = montecarlo.tasks_for(d, scenario, range(runs), tick_ms=tick_ms)
    warm = montecarlo.tasks_for(d, scenario, range(100, 102), tick_ms=tick_ms)
    montecarlo.evaluate_batch(montecarlo.batches(warm)[0])  # imports, caches, row views
    gc.collect()
    tracemalloc.start()
    try:
        montecarlo.evaluate_batch(montecarlo.batches(tasks, budget=10**12)[0])
        left, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak / len(tasks) <= montecarlo.run_bytes(tasks[0])
    # The components refer to one another; the engine unlinks them after a batch, so
    # its arrays go with its results (not at the next full cyclic collection). (With
    # 1-second ticks the arrays are small beside the interpreter's own caches, some tens
    # of KB that any run leaves: there the bound alone is checked.)
    if tick_ms == 10:
        assert left < peak / 10


@pytest.mark.parametrize(
    "service",
    [
        {"dist": "deterministic", "mean_ms": 15},  # a walk ending a share a tick later
        {"dist": "deterministic", "mean_ms": 40},  # a walk of whole ticks (booked at once)
        {"dist": "lognormal", "mean_ms": 60, "cv": 1.5},  # a drawn walk (6 ticks)
        {"dist": "exponential", "mean_ms": 8},  # Erlang's formula and the ledger
    ],
    ids=lambda s: f"{s['dist']}-{s['mean_ms']}ms",
)
@pytest.mark.parametrize("at_once", [False, True], ids=["run by run", "at once"])
def test_each_way_a_station_walks_its_slots(
    service: dict[str, Any], at_once: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every way a loss station keeps its busy slots, at the starter's store (near its
    slots, through the surge, the stall and the slowdown), batched as run alone; the
    walk of fixed services tick by tick for all runs at once (as big batches do) too."""
    if at_once:
        monkeypatch.setattr(walk, "ROWS_AT_ONCE", 1)
    data = {
        "name": "walks",
        "frontier": {"drain_rps": 12000, "buffer": 50000},
        "fetchers": {"replicas": 3, "rps_per_replica": 3000},
        "cache": {"hit_ratio": 0.6},
        "page_store": {"rps": 4000, "service": service},
    }
    design = gym.Design.model_validate(data)
    many, ones = _records(design, ROOT / "scenarios" / "crawler-chaos.yaml", [4, 2, 9])
    for a, b in zip(many, ones, strict=True):
        assert differences(a, b) == []
    # Not a trivial case: the store turned writes away, differently from seed to seed.
    lost = [int(sum(v.sum() for v in r.components["page_store"].failed.values())) for r in many]
    assert min(lost) > 0 and len(set(lost)) > 1


@pytest.mark.parametrize("design", ["starter.yaml", "reference.yaml", "levers/retry-none.yaml"])
def test_walks_at_once_as_run_alone(design: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walks of a batch's runs tick by tick at once (a smooth stream's carried loss at
    the starter's resolver in its slowdown; the reference's, which turns nothing away)."""
    monkeypatch.setattr(walk, "ROWS_AT_ONCE", 1)
    d, sc = _shipped(design)
    many, ones = _records(d, sc, [6, 1, 8])
    for a, b in zip(many, ones, strict=True):
        assert differences(a, b) == []


def test_quiet_stretches_walked_at_once_as_run_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stretch that meets no full tick is walked at once (a cumulative sum, no draw);
    one that does, tick by tick. In a batch of 60 starter runs under the deep crawl,
    some runs' stretches are quiet and others not, side by side: each run is still its
    seed's own. And the quiet walk gives a station's figures exactly as tick by tick does
    (a single run's store, walked both ways)."""
    kinds: list[str] = []
    quiet_rows = walk._quiet_rows

    def spy(*args: Any) -> Any:
        quiet = quiet_rows(*args)
        kinds.append("all" if quiet.all() else "some" if quiet.any() else "none")
        return quiet

    monkeypatch.setattr(walk, "_quiet_rows", spy)
    d = gym.load_design(ROOT / "designs" / "starter.yaml")
    sc = gym.load_scenario(ROOT / "scenarios" / "levers" / "deep-crawl.yaml")
    seeds = list(range(60))
    many, ones = _records(d, sc, seeds)
    assert "some" in kinds and "all" in kinds  # both, in one batch
    for a, b in zip(many, ones, strict=True):
        assert differences(a, b) == [], f"seed {a.seed}"
    # A single run, its quiet stretches walked at once, then with that turned off: the
    # same figures, tick by tick.
    walked: list[bool] = []
    quiet = walk.SlotWalk._quiet

    def counted(*args: Any) -> bool:
        walked.append(quiet(*args))
        return walked[-1]

    monkeypatch.setattr(walk.SlotWalk, "_quiet", counted)
    d = gym.load_design(ROOT / "designs" / "content-dedup.yaml")
    sc = gym.load_scenario(ROOT / "scenarios" / "levers" / "store-brownout.yaml")
    fast = gym.simulate(d, sc, seed=4).metrics.record
    assert True in walked and False in walked  # (the store's: one quiet stretch, one not)
    monkeypatch.setattr(walk.SlotWalk, "_quiet", lambda *args: False)
    slow = gym.simulate(d, sc, seed=4).metrics.record
    assert differences(fast, slow) == []


def test_no_seeds_and_bad_seeds() -> None:
    """No seeds: no runs (a graph with delayed edges too); seeds that are not a list of
    whole numbers: a GymError naming them."""
    d, sc = _drawn(44)
    assert gym.simulate_many(d, sc, seeds=[]) == []
    ref, chaos = _shipped("reference.yaml")
    for bad in (3, "12", [1, -1], [0.5]):
        with pytest.raises(gym.GymError, match="seed"):
            gym.simulate_many(ref, chaos, seeds=bad)  # type: ignore[arg-type]


def test_request_runs_go_one_to_a_batch() -> None:
    """The request engine runs one by one and each run keeps its samples: one a batch."""
    d, sc = _shipped("starter.yaml")
    tasks = montecarlo.tasks_for(d, gym.load_scenario(sc), range(5), engine="request")
    assert [b.seeds for b in montecarlo.batches(tasks)] == [(k,) for k in range(5)]


_FAULTS = """
import json, resource, sys
import numpy as np
from gym.core import heap

block = 8 * 2**20  # above glibc's default mmap threshold


def fill(total):
    start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    arrays = [np.ones(block // 8) for _ in range(total // block)]
    del arrays
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start


kept = 64 * 2**20
if sys.argv[1] == "keep":
    assert heap.keep(kept) == kept
fill(kept // 2)
reused = fill(kept // 2)
fill(2 * kept)  # more than is kept free at once
print(json.dumps([reused, fill(kept // 2)]))
"""


@pytest.mark.skipif(heap._glibc() is None, reason="glibc's malloc only")
def test_batches_reuse_the_memory_freed() -> None:
    """Once a batch has run (``heap.keep``, as ``evaluate_batch`` calls it), arrays of a
    few MB freed by one batch are the next one's without the kernel zeroing their pages
    again; when more than the amount kept is free at once, it goes back to the system.
    In a fresh process each way, so that nothing else holds the heap's top."""

    def faults(how: str) -> list[int]:
        out = subprocess.run(
            [sys.executable, "-c", _FAULTS, how], capture_output=True, text=True, check=True
        )
        got: list[int] = json.loads(out.stdout)
        return got

    reused, after_more = faults("keep")
    again, _ = faults("default")
    # 32 MB is 8,192 pages of 4 KB (or 16 huge pages of 2 MB) when the kernel hands it
    # over anew (glibc's default: blocks of 8 MB are mapped and unmapped each time); kept,
    # only the arrays' bookkeeping is new, until more than is kept was freed at once.
    assert reused * 4 < again, (reused, again)
    assert reused * 4 < after_more, (reused, after_more)
