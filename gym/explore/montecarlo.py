"""Many seeds of one design: per-SLO spread, pass rate, and the probability of passing.

A single seeded run says little about a design near its limits. ``run_many`` runs seeds
``seed, seed+1, ...`` (each run independent, whichever executor runs it), summarizes each
SLO (mean, standard deviation, min, max, pass rate) and estimates the probability that
the design passes every SLO, with a 95% Wilson score interval. The verdict rule: PASS
only if the interval's lower bound is at least ``confidence`` (default 0.8), that is, we
are 95% sure the design passes at least that often (a single run keeps its own verdict).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from gym.analysis.scoring import SLO_NAMES
from gym.core import heap
from gym.core.jsontext import JsonText
from gym.core.limits import DEFAULT_CONFIDENCE, DEFAULT_MAX_URLS, MAX_RUNS
from gym.explore.parallel import Executor, Interrupted, Progress, Serial
from gym.models import Design, Scenario
from gym.system.graph import GraphDesign

Z95 = 1.959963984540054


def wilson(passes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default)."""
    if n <= 0:
        return 0.0, 1.0
    p = passes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if passes == 0 else max(0.0, centre - half)
    high = 1.0 if passes == n else min(1.0, centre + half)
    return low, high


def runs_needed(confidence: float, z: float = Z95) -> int:
    """Fewest runs whose lower bound can reach ``confidence`` (when every run passes)."""
    n = 1
    while wilson(n, n, z)[0] < confidence and n < 100_000:
        n += 1
    return n


def too_few_runs(
    runs: int, confidence: float, *, single_ok: bool = True, hint_one: bool = True
) -> str | None:
    """Why ``runs`` seeds cannot reach a verdict by the ``--runs`` rule (None when they
    can): the one rule of every command that takes ``--runs``, checked before any work.
    One run (``single_ok``) is judged by its own verdict, not the rule; ``hint_one``:
    the message offers it (not where a confidence was given, which one run refuses)."""
    if runs < 1:
        return f"{runs}: at least 1 run is needed"
    if not 0 <= confidence <= 1:  # NaN too
        return f"confidence {confidence}: a share of runs, from 0 to 1"
    if runs == 1 and single_ok:
        return None
    if confidence >= 1:
        return (
            f"{confidence:g}: no number of runs shows a pass probability of 1 with 95% "
            "confidence; use a value below 1"
        )
    least = max(2, runs_needed(confidence))
    if runs < least:
        one = " (or 1: one run's own verdict)" if single_ok and hint_one else ""
        return (
            f"{runs} runs cannot show a pass probability of {confidence:g} with 95% "
            f"confidence even if every run passes; use --runs {least} or more{one}"
        )
    return None


@dataclass(frozen=True)
class Task:
    """One simulation to run anywhere: plain data in, a small summary out."""

    design: dict[str, Any]
    scenario: dict[str, Any]
    seed: int
    engine: str = "flow"
    tick_ms: int = 10
    max_urls: int = DEFAULT_MAX_URLS
    #: Its row carries the rubric's traps the run took (``gym run --runs``: the first's).
    traps: bool = False


def tasks_for(
    design: Design | GraphDesign,
    scenario: Scenario,
    seeds: range,
    engine: str = "flow",
    tick_ms: int = 10,
    max_urls: int = DEFAULT_MAX_URLS,
) -> list[Task]:
    """One task per seed; the design and scenario are dumped once and shared, so many
    runs cost memory for their seeds only."""
    d = design.model_dump(mode="json", by_alias=True)
    s = scenario.model_dump(mode="json")
    return [Task(d, s, seed, engine, tick_ms, max_urls) for seed in seeds]


def evaluate(t: Task) -> dict[str, Any]:
    """Run one task; returns what aggregation needs (picklable, small)."""
    return evaluate_batch(Batch(t.design, t.scenario, (t.seed,), t.engine, t.tick_ms, t.max_urls))[
        0
    ]


@dataclass(frozen=True)
class Batch:
    """Tasks of one design and scenario that differ in their seeds only: run together, the
    flow engine's runs advanced at once (:func:`gym.api.simulate_many`)."""

    design: dict[str, Any]
    scenario: dict[str, Any]
    seeds: tuple[int, ...]
    engine: str = "flow"
    tick_ms: int = 10
    max_urls: int = DEFAULT_MAX_URLS
    #: The seeds whose rows carry the rubric's traps (:attr:`Task.traps`).
    traps: tuple[int, ...] = ()


def evaluate_batch(b: Batch) -> list[dict[str, Any]]:
    """Run one batch; what aggregation needs of each run, in seed order."""
    from gym.api import simulate_many

    heap.keep(BATCH_BYTES)  # the next batch in this process reuses this one's memory
    model = GraphDesign if "graph" in b.design else Design
    design = model.model_validate(b.design)
    scenario = Scenario.model_validate(b.scenario)
    results = simulate_many(
        design, scenario, seeds=b.seeds, engine=b.engine, tick_ms=b.tick_ms, max_urls=b.max_urls
    )
    out = []
    for r in results:
        m = r.metrics
        out.append(
            {
                "seed": r.seed,
                "verdict": r.verdict,
                "slos": {
                    c.name: {
                        "op": c.op,
                        "target": c.target,
                        "measured": c.measured,
                        "passed": c.passed,
                    }
                    for c in r.checks
                },
                "cost_units": m.cost_units,
                "throughput_rps": m.throughput_rps,
                "availability": m.availability,
                "peak_saturation": m.peak_saturation,
                "failed": m.failed,
                "failed_by_cause": {c: n for c, n in m.failed_by_cause.items() if n},
            }
        )
        if r.seed in b.traps:
            out[-1]["traps"] = [t.to_dict() for t in r.traps]
        if r.unchecked:  # where the flow engine is outside what it was checked on
            out[-1]["unchecked"] = list(r.unchecked)
    return out


#: What one batch may hold of per-tick tallies, in bytes: a batch of runs keeps every
#: run's arrays until its results are summed up, so big batches are split by it.
BATCH_BYTES = 384 * 2**20

#: Bytes of per-tick arrays one run holds per node of its topology and tick, at most, are
#: its kind's flow rule's (:attr:`gym.sim.flow.rules.FlowRule.tick_bytes`: 200 B unless
#: its kind says more; ``tests/test_batch.py`` checks the bound on five designs and
#: graphs); a component where flows divide, join or wait on an edge holds the default.
RETRY_TICK_BYTES = 400  # a retry policy's feed and tries, per node that has one
#: What a run holds per node whatever its ticks (its component's objects, generators, the
#: record's and the metrics' per-window figures): 6-13 KB measured on drawn graphs, all
#: that counts when ticks are few (1-second ticks).
NODE_RUN_BYTES = 16 * 1024


def batches(tasks: Sequence[Task], parts: int = 1, budget: int = BATCH_BYTES) -> list[Batch]:
    """``tasks`` in batches, in order: consecutive tasks of the same design, scenario and
    settings together, as many runs to a batch as ``budget`` holds (:func:`run_bytes`),
    and at least ``parts`` batches where there are that many tasks (one for each
    worker)."""
    groups: list[list[Task]] = []
    for t in tasks:
        last = groups[-1][-1] if groups else None
        if last is not None and _same_but_seed(last, t):
            groups[-1].append(t)
        else:
            groups.append([t])
    size = max(1, -(-len(tasks) // max(1, parts)))
    out = []
    for group in groups:
        first = group[0]
        # The request engine runs a batch's runs one by one, and each keeps its latency
        # samples until the batch ends: one run a batch.
        most = 1 if first.engine != "flow" else max(1, min(size, budget // run_bytes(first)))
        for i in range(0, len(group), most):
            chunk = group[i : i + most]
            seeds = tuple(t.seed for t in chunk)
            traps = tuple(t.seed for t in chunk if t.traps)
            out.append(Batch(first.design, first.scenario, seeds, *_settings(first), traps))
    return out


def _same_but_seed(a: Task, b: Task) -> bool:
    return (
        (a.design is b.design or a.design == b.design)
        and (a.scenario is b.scenario or a.scenario == b.scenario)
        and _settings(a) == _settings(b)
    )


def _settings(t: Task) -> tuple[str, int, int]:
    return t.engine, t.tick_ms, t.max_urls


def run_bytes(t: Task) -> int:
    """At most what one run of ``t`` holds, in bytes: its per-tick arrays by the scenario's
    ticks and the topology's nodes (each kind's ``tick_bytes``, more with a retry policy) and
    the components where flows divide, join or wait on an edge, and what each of those
    holds whatever the ticks (:data:`NODE_RUN_BYTES`). A design that does not load counts
    as one node (its batch fails at once anyway)."""
    from gym.core.errors import GymError
    from gym.sim.flow.rules import TICK_BYTES
    from gym.system import compiled

    ticks = math.ceil(float(t.scenario.get("duration_s", 0)) * 1000.0 / t.tick_ms)
    try:
        design = (GraphDesign if "graph" in t.design else Design).model_validate(t.design)
        scenario = Scenario.model_validate(t.scenario)
        graph = compiled.system_topology(design, scenario)
        per_tick = sum(
            _tick_bytes(n.kind) + (RETRY_TICK_BYTES if n.retry is not None else 0)
            for n in graph.nodes
        )
        # Where flows divide (a port per edge), join or wait on an edge, components too.
        outs = [len(graph.outputs(n.name)) for n in graph.nodes]
        joins = sum(len(graph.inputs(n.name)) > 1 for n in graph.nodes)
        waits = sum(bool(e.delay_ticks(t.tick_ms)) for e in graph.edges)
        extra = sum(k for k in outs if k > 1) + joins + waits
        per_tick += TICK_BYTES * extra
        parts = len(graph.nodes) + extra
    except (GymError, ValueError):
        per_tick, parts = TICK_BYTES, 1
    return max(1, ticks) * per_tick + NODE_RUN_BYTES * parts


def _tick_bytes(kind: str) -> int:
    """What a node of ``kind`` holds per tick in a flow run: its flow rule's figure, the
    default for a kind with no flow rule (a kind of your own run by the request engine)."""
    from gym.sim.flow.rules import TICK_BYTES, rule_for

    try:
        return rule_for(kind).tick_bytes
    except KeyError:
        return TICK_BYTES


def run_tasks(
    tasks: Sequence[Task], executor: Executor | None = None, progress: Progress | None = None
) -> list[dict[str, Any]]:
    """Every task's results, in task order: the tasks run in batches
    (:func:`batches`), one batch to an executor's task. Ctrl-C keeps the batches done."""
    executor = executor or Serial()
    work = batches(tasks, parts=getattr(executor, "workers", 1))
    sizes = iter([len(b.seeds) for b in work])

    def done(n: int) -> None:  # n batches done: their runs (in order, but for Dask's)
        if progress:
            progress(sum(next(sizes, 0) for _ in range(n)))

    try:
        results = executor.map(evaluate_batch, work, done)
    except Interrupted as stop:
        raise Interrupted([r for batch in stop.done for r in batch]) from None
    return [r for batch in results for r in batch]


@dataclass(frozen=True)
class SLOStats:
    """One SLO over many runs."""

    name: str
    op: str
    target: float
    mean: float | None  # None where no run's value is defined
    std: float | None
    min: float | None
    max: float | None
    pass_rate: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class MonteCarloResult(JsonText):
    """Summaries of the runs and what they add up to."""

    runs: list[dict[str, Any]]
    confidence: float = DEFAULT_CONFIDENCE
    slos: list[SLOStats] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.slos:
            self.slos = summarize(self.runs)

    def __repr__(self) -> str:
        low, high = self.ci
        return (
            f"<MonteCarloResult {self.verdict.upper()}: passes every SLO in {self.passes}/"
            f"{self.n} runs, 95% interval [{low:.2f}, {high:.2f}] (confidence "
            f"{self.confidence:g})>"
        )

    def _repr_html_(self) -> str:
        """A notebook's view: the verdict by the rule, and each SLO's spread."""
        from gym.analysis.reprs import table_html, verdict_span
        from gym.analysis.scoring import format_measured

        low, high = self.ci
        rows = [
            [
                s.name,
                f"{s.op} {s.target:g}",
                *(format_measured(s.name, v) for v in (s.mean, s.min, s.max)),
                f"{s.pass_rate:.0%}",
            ]
            for s in self.slos
        ]
        return (
            f"<p>{verdict_span(self.verdict == 'pass')}: passes every SLO in {self.passes}/"
            f"{self.n} runs, 95% interval [{low:.2f}, {high:.2f}] (PASS if its lower bound "
            f"&ge; {self.confidence:g})</p>"
            + table_html(["SLO", "target", "mean", "min", "max", "pass rate"], rows)
        )

    @property
    def n(self) -> int:
        return len(self.runs)

    @property
    def passes(self) -> int:
        return sum(1 for r in self.runs if r["verdict"] == "pass")

    @property
    def pass_probability(self) -> float:
        return self.passes / self.n if self.n else 0.0

    @property
    def ci(self) -> tuple[float, float]:
        return wilson(self.passes, self.n)

    @property
    def verdict(self) -> str:
        """One run: its own verdict. More: PASS if the Wilson lower bound >= confidence."""
        if self.n == 1:
            return str(self.runs[0]["verdict"])
        return "pass" if self.ci[0] >= self.confidence else "fail"

    @property
    def cost_units(self) -> int:
        return int(self.runs[0]["cost_units"]) if self.runs else 0

    @property
    def traps(self) -> list[dict[str, Any]]:
        """The rubric's traps the first seed's run took (as :meth:`Grade.to_dict`)."""
        return list(self.runs[0].get("traps", [])) if self.runs else []

    def to_dict(self) -> dict[str, Any]:
        low, high = self.ci
        return {
            "runs": self.n,
            "seeds": [r["seed"] for r in self.runs],
            "verdict": self.verdict,
            "verdict_rule": (
                f"pass if the 95% Wilson lower bound of the pass probability >= {self.confidence:g}"
            ),
            "confidence": self.confidence,
            "passes": self.passes,
            "pass_probability": self.pass_probability,
            "pass_probability_ci": [low, high],
            "cost_units": self.cost_units,
            "slos": [s.to_dict() for s in self.slos],
            "traps": self.traps,
        }


def unchecked(runs: list[dict[str, Any]]) -> list[str]:
    """What the runs' flow engine was warned about being outside what it was checked on
    (:mod:`gym.sim.flow.checked`), each once, in the order first met."""
    return list(dict.fromkeys(w for r in runs for w in r.get("unchecked", ())))


def summarize(runs: list[dict[str, Any]]) -> list[SLOStats]:
    out = []
    for name in SLO_NAMES:
        values = [r["slos"][name] for r in runs if name in r["slos"]]
        if not values:
            continue
        # Runs where the value is undefined (availability with no URL finished) fail
        # the SLO and count in the pass rate, but not in the statistics of the value.
        measured = np.array([v["measured"] for v in values if v["measured"] is not None])
        defined = measured.size > 0
        out.append(
            SLOStats(
                name=name,
                op=values[0]["op"],
                target=values[0]["target"],
                mean=float(measured.mean()) if defined else None,
                std=float(measured.std(ddof=1)) if measured.size > 1 else 0.0 if defined else None,
                min=float(measured.min()) if defined else None,
                max=float(measured.max()) if defined else None,
                pass_rate=sum(v["passed"] for v in values) / len(values),
            )
        )
    return out


def run_many(
    design: Design | GraphDesign,
    scenario: Scenario,
    *,
    runs: int,
    seed: int = 0,
    engine: str = "flow",
    confidence: float = DEFAULT_CONFIDENCE,
    executor: Executor | None = None,
    progress: Progress | None = None,
    tick_ms: int = 10,
    max_urls: int = DEFAULT_MAX_URLS,
) -> MonteCarloResult:
    """Run seeds ``seed .. seed + runs - 1`` and summarize them (at most :data:`MAX_RUNS`)."""
    from gym.core.errors import GymError

    if not 1 <= runs <= MAX_RUNS:
        raise GymError.single(None, "runs", f"{runs:,} must be 1 to {MAX_RUNS:,}")
    if (few := too_few_runs(runs, confidence)) is not None:
        raise GymError.single(None, "confidence" if confidence >= 1 else "runs", few)
    tasks = tasks_for(design, scenario, range(seed, seed + runs), engine, tick_ms, max_urls)
    tasks[0] = replace(tasks[0], traps=True)  # the first seed's run tells the traps
    results = run_tasks(tasks, executor, progress)
    return MonteCarloResult(results, confidence)
