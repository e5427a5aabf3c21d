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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gym.analysis.scoring import SLO_NAMES
from gym.core.limits import DEFAULT_CONFIDENCE, DEFAULT_MAX_URLS, MAX_RUNS
from gym.explore.parallel import Executor, Progress, Serial
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


@dataclass(frozen=True)
class Task:
    """One simulation to run anywhere: plain data in, a small summary out."""

    design: dict[str, Any]
    scenario: dict[str, Any]
    seed: int
    engine: str = "flow"
    tick_ms: int = 10
    max_urls: int = DEFAULT_MAX_URLS


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
    from gym.api import simulate

    model = GraphDesign if "graph" in t.design else Design
    design = model.model_validate(t.design)
    scenario = Scenario.model_validate(t.scenario)
    r = simulate(
        design, scenario, seed=t.seed, engine=t.engine, tick_ms=t.tick_ms, max_urls=t.max_urls
    )
    m = r.metrics
    return {
        "seed": t.seed,
        "verdict": r.verdict,
        "slos": {
            c.name: {"op": c.op, "target": c.target, "measured": c.measured, "passed": c.passed}
            for c in r.checks
        },
        "cost_units": m.cost_units,
        "throughput_rps": m.throughput_rps,
        "availability": m.availability,
        "peak_saturation": m.peak_saturation()[0],
        "failed": m.failed,
        "failed_by_cause": {c: n for c, n in m.failed_by_cause.items() if n},
    }


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

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class MonteCarloResult:
    """Summaries of the runs and what they add up to."""

    runs: list[dict[str, Any]]
    confidence: float = DEFAULT_CONFIDENCE
    slos: list[SLOStats] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.slos:
            self.slos = summarize(self.runs)

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

    def to_json(self) -> dict[str, Any]:
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
            "slos": [s.to_json() for s in self.slos],
        }


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
    if not 1 <= runs <= MAX_RUNS:
        from gym.core.errors import GymError

        raise GymError.single(None, "runs", f"{runs:,} must be 1 to {MAX_RUNS:,}")
    tasks = tasks_for(design, scenario, range(seed, seed + runs), engine, tick_ms, max_urls)
    results = (executor or Serial()).map(evaluate, tasks, progress)
    return MonteCarloResult(results, confidence)
