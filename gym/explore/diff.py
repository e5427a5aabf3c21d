"""The capacity-regression gate (``gym diff BASE HEAD``): two designs run under the same
scenario and the same seeds, each SLO's change with its 95% confidence interval.

Common random numbers: run k of BASE and run k of HEAD draw from the same seed, so the
arrivals, the crash's share of work and every other draw that does not depend on the
design are the same in both, and the noise left in each difference is what the designs
make of it. Each figure's change is the mean of the paired differences (HEAD - BASE) over
the runs, with Student's t interval on them (n - 1 degrees of freedom).

HEAD is *worse beyond noise* on a figure when the whole interval lies on the worse side
(lower for throughput and availability, higher for peak saturation and cost). The gate
fails (exit 1) when HEAD is worse beyond noise on throughput, availability or peak
saturation where the scenario sets an SLO on it, or when BASE passes and HEAD fails by
the ``--runs`` rule. Cost is shown, not gated on its own: buying units to meet an SLO is
what a design change often is; a cost SLO HEAD breaks fails the verdict. "Beyond noise"
is statistical, not practical: with common seeds the intervals are narrow, and a small
change the runs show for certain counts. Identical designs give differences of exactly 0.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from gym.analysis.scoring import SLO_NAMES, format_measured
from gym.core.errors import GymError
from gym.core.jsontext import JsonText
from gym.core.limits import DEFAULT_CONFIDENCE, MAX_RUNS
from gym.explore.compare import fields, shown
from gym.explore.montecarlo import MonteCarloResult, run_tasks, tasks_for
from gym.explore.parallel import Executor, Progress
from gym.models import Design, Scenario
from gym.system.compiled import addons
from gym.system.graph import GraphDesign

#: The figures whose worsening fails the gate (cost is shown, and gated by its SLO's verdict).
GATED = ("throughput_rps", "availability", "peak_saturation")
#: Which way is better for each figure: +1 higher, -1 lower.
BETTER = {"throughput_rps": 1, "availability": 1, "peak_saturation": -1, "cost_units": -1}
#: Student's t, 97.5% quantile, for 1..30 degrees of freedom (two-sided 95%).
_T975 = (
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
)  # fmt: skip


def t975(df: int) -> float:
    """Student's t 97.5% quantile: the table to 30 degrees of freedom, then Fisher's
    expansion around the normal quantile (within 1e-5 of the exact value beyond 30)."""
    if df < 1:
        raise ValueError(df)
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959963984540054
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


@dataclass(frozen=True)
class FigureChange:
    """One figure, BASE against HEAD over the same seeds."""

    name: str
    slo: str | None  # the scenario's SLO on it ("op target"), None if it sets none
    base: float | None  # means over the runs where both are defined
    head: float | None
    change: float | None  # mean of HEAD - BASE
    low: float | None  # its 95% interval
    high: float | None
    pairs: int  # runs where both are defined

    @property
    def verdict(self) -> str:
        """better, worse (beyond noise), or same (the interval holds 0, or undefined);
        for cost, which is not gated on its own: cheaper, costlier or same."""
        way = BETTER[self.name]
        if self.low is None or self.high is None:
            word = "same"
        elif (self.low > 0 and way > 0) or (self.high < 0 and way < 0):
            word = "better"
        elif (self.high < 0 and way > 0) or (self.low > 0 and way < 0):
            word = "worse"
        else:
            word = "same"
        if self.name == "cost_units" and word != "same":
            return "cheaper" if word == "better" else "costlier"
        return word

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "verdict": self.verdict}


@dataclass
class Diff(JsonText):
    """BASE and HEAD under one scenario and the same seeds."""

    base: Design | GraphDesign
    head: Design | GraphDesign
    scenario: Scenario
    seed: int
    runs: int
    confidence: float
    changes: list[FigureChange]
    base_result: MonteCarloResult
    head_result: MonteCarloResult
    inputs: list[tuple[str, str, str]] = field(default_factory=list)  # (path, base, head)

    @property
    def regressions(self) -> list[str]:
        """Why the gate fails (empty when it passes)."""
        out = [
            f"{c.name} worse beyond noise: {signed(c.name, c.change)} (95% interval {interval(c)})"
            for c in self.changes
            if c.slo is not None and c.name in GATED and c.verdict == "worse"
        ]
        if self.base_result.verdict == "pass" and self.head_result.verdict == "fail":
            out.append(
                f"the verdict goes from PASS to FAIL: every SLO met in "
                f"{self.head_result.passes}/{self.runs} runs against "
                f"{self.base_result.passes}/{self.runs}"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        def side(d: Design | GraphDesign, mc: MonteCarloResult) -> dict[str, Any]:
            low, high = mc.ci
            return {
                "design": d.name,
                "design_file": d._source,
                "verdict": mc.verdict,
                "passes": mc.passes,
                "pass_probability_ci": [low, high],
                "cost_units": mc.cost_units,
            }

        return {
            "scenario": self.scenario.name,
            "scenario_file": self.scenario._source,
            "seeds": [self.seed, self.seed + self.runs - 1],
            "runs": self.runs,
            "confidence": self.confidence,
            "base": side(self.base, self.base_result),
            "head": side(self.head, self.head_result),
            "inputs": [{"path": p, "base": b, "head": h} for p, b, h in self.inputs],
            "changes": [c.to_dict() for c in self.changes],
            "regressed": bool(self.regressions),
            "regressions": self.regressions,
        }

    def markdown(self) -> str:
        """A summary for a pull-request comment."""
        base, head = self.base_result, self.head_result
        verdict = "FAIL: HEAD is worse" if self.regressions else "PASS: no regression"
        lines = [
            f"### Capacity diff: {verdict}",
            "",
            f"{_code(self.base.name)} (BASE) against {_code(self.head.name)} (HEAD) under "
            f"{_code(self.scenario.name)}, the same {self.runs} seeds "
            f"({self.seed}..{self.seed + self.runs - 1}) for both.",
            "",
            "| figure | SLO | BASE | HEAD | change (95% interval) | |",
            "|---|---|---:|---:|---|---|",
        ]
        for c in self.changes:
            lines.append(
                f"| {c.name} | {_md(c.slo or '')} | {format_measured(c.name, c.base)} | "
                f"{format_measured(c.name, c.head)} | {signed(c.name, c.change)} "
                f"{interval(c, self.runs)} | {c.verdict} |"
            )
        lines.append(
            f"| every SLO (runs) | rule: lower bound >= {self.confidence:g} | "
            f"{base.passes}/{self.runs} {base.verdict.upper()} | "
            f"{head.passes}/{self.runs} {head.verdict.upper()} | | |"
        )
        if self.inputs:
            lines += ["", "What HEAD changes:", ""]
            lines += [f"- {_code(p)}: {_code(b)} → {_code(h)}" for p, b, h in self.inputs]
        if self.regressions:
            lines += ["", "Regressions:", ""]
            lines += [f"- {_md(r)}" for r in self.regressions]
        return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    """User text in Markdown (a table cell too): one line, markup and pipes escaped."""
    from gym.core.text import printable

    out = printable(str(text))
    for ch in "\\`*_[]<>|":
        out = out.replace(ch, "\\" + ch)
    return out


def _code(text: str | None) -> str:
    """User text as a code span outside a table: one line, literally (backslashes are
    not escapes in a code span, so its own backticks become quotes)."""
    from gym.core.text import printable

    return "`" + printable(str(text)).replace("`", "'") + "`"


def signed(name: str, value: float | None) -> str:
    """A change as tables print it, with its sign (± for none)."""
    if value is None:
        return "undefined"
    shown_value = format_measured(name, abs(value))
    return ("+" if value > 0 else "-" if value < 0 else "±") + shown_value


def interval(c: FigureChange, runs: int | None = None) -> str:
    """A change's 95% interval, signed, and over how many run pairs when not all of
    ``runs`` (a figure undefined in some runs: availability with nothing finished)."""
    pairs = f" ({c.pairs} of {runs} runs defined)" if runs is not None and c.pairs < runs else ""
    if c.low is None or c.high is None:
        return pairs.strip()
    return f"[{signed(c.name, c.low)}, {signed(c.name, c.high)}]{pairs}"


def check(
    base: Design | GraphDesign,
    head: Design | GraphDesign,
    runs: int,
    confidence: float = DEFAULT_CONFIDENCE,
) -> None:
    """What the gate refuses before anything runs: fewer runs than can show either side
    passing by the ``--runs`` rule (the clause "BASE passes and HEAD fails" could never
    hold), and designs of two kinds."""
    from gym.explore.montecarlo import too_few_runs

    if (few := too_few_runs(runs, confidence, single_ok=False)) is not None:
        raise GymError.single(None, "--confidence" if confidence >= 1 else "--runs", few)
    if runs > MAX_RUNS:
        raise GymError.single(None, "--runs", f"{runs:,} is more than the limit of {MAX_RUNS:,}")
    if (addons(base) is None) != (addons(head) is None):
        kinds = "a crawler design" if addons(head) is not None else "a graph"
        raise GymError.single(
            head._source,
            None,
            f"HEAD is {kinds} and BASE is not: both crawler designs, or both graphs",
        )


def diff(
    base: Design | GraphDesign,
    head: Design | GraphDesign,
    scenario: Scenario,
    *,
    runs: int = 20,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    executor: Executor | None = None,
    progress: Progress | None = None,
) -> Diff:
    """Run BASE and HEAD under ``scenario`` with seeds ``seed``..``seed + runs - 1``
    each, and compare them run by run."""
    check(base, head, runs, confidence)
    seeds = range(seed, seed + runs)
    results = run_tasks(
        [*tasks_for(base, scenario, seeds), *tasks_for(head, scenario, seeds)],
        executor,
        progress,
    )
    a, b = results[:runs], results[runs:]
    changes = []
    for name in SLO_NAMES:
        slo = getattr(scenario.slos, name)
        rule = (
            None
            if slo is None
            else (f">= {slo.min:g}" if hasattr(slo, "min") else f"<= {slo.max:g}")
        )
        pairs = [
            (x[name], y[name])
            for x, y in zip(a, b, strict=True)
            if x[name] is not None and y[name] is not None
        ]
        changes.append(_change(name, rule, pairs))
    before, after = fields(base), fields(head)
    inputs = [
        (path, shown(before.get(path)), shown(after.get(path)))
        for path in dict.fromkeys([*before, *after])
        if path != "name" and before.get(path) != after.get(path)
    ]
    return Diff(
        base,
        head,
        scenario,
        seed,
        runs,
        confidence,
        changes,
        MonteCarloResult(a, confidence),
        MonteCarloResult(b, confidence),
        inputs,
    )


def _change(name: str, rule: str | None, pairs: list[tuple[float, float]]) -> FigureChange:
    if not pairs:
        return FigureChange(name, rule, None, None, None, None, None, 0)
    n = len(pairs)
    base = math.fsum(x for x, _ in pairs) / n
    head = math.fsum(y for _, y in pairs) / n
    deltas = [y - x for x, y in pairs]
    mean = math.fsum(deltas) / n
    if n < 2:
        return FigureChange(name, rule, base, head, mean, None, None, n)
    half = t975(n - 1) * statistics.stdev(deltas) / math.sqrt(n)
    return FigureChange(name, rule, base, head, mean, mean - half, mean + half, n)
