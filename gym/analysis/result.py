"""The result of one run: totals, the per-window table, SLO checks and explanations.

A result is a value: building it writes nothing. ``to_dict`` gives the object that
``gym run --json`` prints; ``windows`` gives the per-window table as a pandas
DataFrame (pandas is imported only then).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gym.analysis.metrics import Metrics
from gym.analysis.scoring import SLOCheck
from gym.core.jsontext import JsonText
from gym.models import Design, Scenario
from gym.sim.latency import LatencyStats
from gym.system.compiled import addons
from gym.system.graph import GraphDesign

if TYPE_CHECKING:
    import pandas as pd

    from gym.analysis.alerts import Replay
    from gym.analysis.budget import ErrorBudget
    from gym.analysis.explain import Explanation
    from gym.analysis.rubric import Grade
    from gym.core.text import Unit


@dataclass(repr=False)
class Result(JsonText):
    """One design, one scenario, one seed, one engine: what happened and how it scored."""

    design: Design | GraphDesign
    scenario: Scenario
    engine: str
    seed: int
    tick_ms: int
    metrics: Metrics
    checks: list[SLOCheck]
    verdict: str  # "pass" or "fail"
    warmup_s: float = 0.0

    # What follows is worked out on first use: a sweep or the optimizer, which only
    # needs the verdict and the figures, never pays for it.

    @functools.cached_property
    def explanations(self) -> list[Explanation]:
        """Why the design failed each SLO it failed, and where URLs were lost."""
        from gym.analysis import explain

        return explain.explain(self.metrics, self.checks, self.design, self.scenario)

    @functools.cached_property
    def budget(self) -> ErrorBudget:
        """The availability error budget, and what spent it."""
        from gym.analysis import budget

        slo = self.scenario.slos.availability
        return budget.compute(self.metrics, slo.min if slo else None)

    @functools.cached_property
    def traps(self) -> list[Grade]:
        """The rubric's traps the design took (:func:`gym.analysis.rubric.traps`): shown
        with every run, PASS or FAIL, each with what the run measured."""
        from gym.analysis import rubric

        return rubric.traps(self)

    @functools.cached_property
    def alerts(self) -> Replay | None:
        """The scenario's burn-rate alerts replayed on the run (None without an
        availability SLO or alerts)."""
        from gym.analysis import alerts

        return alerts.replay(self.metrics, self.scenario)

    @functools.cached_property
    def warnings(self) -> tuple[str, ...]:
        """Where the engine's grid changed a figure of the inputs by more than 1%
        (:mod:`gym.analysis.rounding`): a coarse tick, a station of few slots; and, in the
        flow engine, the nodes of this run outside what it has been checked to get right
        (:mod:`gym.sim.flow.checked`)."""
        from gym.analysis import rounding

        said = rounding.warnings(
            self.design, self.scenario, engine=self.engine, tick_ms=self.tick_ms
        )
        return (*said, *self.unchecked)

    @functools.cached_property
    def unchecked(self) -> tuple[str, ...]:
        """The nodes of a flow run outside what the flow engine has been checked to get
        right (:mod:`gym.sim.flow.checked`); none for the request engine."""
        from gym.sim.flow import checked

        if self.engine != "flow":
            return ()
        return tuple(checked.warnings(self.metrics.record))

    @functools.cached_property
    def latency(self) -> dict[str, LatencyStats]:
        """Latency per component and ``end_to_end``, in ms (measured or estimated)."""
        out = {}
        for name, samples in self.metrics.record.latency.items():
            stats = samples.stats()
            if stats is not None:
                out[name] = stats
        return out

    def dedup(self) -> dict[str, Any] | None:
        """What deduplication did and cost: seen-set memory, coverage lost, writes saved
        (the crawler's; None for a graph design)."""
        import math

        crawler = addons(self.design)
        if crawler is None:
            return None
        d, w = crawler.design.dedup, self.scenario.dedup
        rec = self.metrics.record
        if d.seen_set == "bloom":
            bits = -math.log(d.fp_rate) / math.log(2) ** 2
            memory = w.urls * bits / 8
        else:
            memory = w.urls * 8.0
        saved = rec.writes_saved()
        skipped = self.metrics.skipped_by_cause
        return {
            "seen_set": d.seen_set,
            "fp_rate": d.fp_rate if d.seen_set == "bloom" else 0.0,
            "seen_set_urls": w.urls,
            "seen_set_memory_GB": memory / 1e9,
            "seen_urls_skipped": skipped.get("seen_url", 0),
            "coverage_lost": skipped.get("bloom_false_positive", 0),
            "canonicalize": d.canonicalize,
            "url_variants_skipped": skipped.get("url_variant", 0),
            "content_hash": d.content_hash,
            "writes_saved": saved,
            "bytes_saved_GB": saved * w.page_kb * 1e3 / 1e9,
        }

    @property
    def unit(self) -> Unit:
        """What the run counted, in words: its design's (URLs for the crawler, requests
        for a graph)."""
        return self.design.unit

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def __repr__(self) -> str:
        from gym.analysis.reprs import result_repr

        return result_repr(self)

    def _repr_html_(self) -> str:
        """A notebook's view: the verdict, the SLO table and a small plot."""
        from gym.analysis.reprs import result_html

        return result_html(self)

    def to_dict(self) -> dict[str, Any]:
        """The object ``gym run --json`` prints (docs/specification.md section 7)."""
        m = self.metrics
        crawler = addons(self.design)
        peak, peak_component, peak_at = m.peak
        components: dict[str, Any] = {}
        for name, cw in m.components.items():
            value, w = cw.peak
            components[name] = {
                "units": m.units.get(name, 0),
                "peak_saturation": value,
                "peak_saturation_at_s": None if w is None else float(m.window_s[w]),
                "outage_windows": int(cw.outage.sum()),
                "failed": int(cw.failed_total.sum()),
            }
            extra = m.record.components[name].extra
            if "retries" in extra:  # later tries of what failed there (a retry policy)
                components[name]["retries"] = int(extra["retries"].sum())
        return {
            "design": self.design.name,
            "design_file": self.design._source,
            "scenario": self.scenario.name,
            "scenario_file": self.scenario._source,
            "engine": self.engine,
            "seed": self.seed,
            "tick_ms": self.tick_ms,
            "verdict": self.verdict,
            "warnings": list(self.warnings),
            "slos": [c.to_dict() for c in self.checks],
            "metrics": {
                "offered": m.offered,
                # of them, links found on fetched pages (the link-discovery loop)
                "links_found": m.record.links_found(),
                "served": m.served,
                "failed": m.failed,
                "in_flight_end": m.in_flight_end,
                "skipped": m.skipped,
                "duration_s": m.duration_s,
                "throughput_rps": m.throughput_rps,
                "availability": m.availability,
                "peak_saturation": peak,
                "peak_saturation_component": peak_component,
                "peak_saturation_at_s": peak_at,
                "cost_units": m.cost_units,
            },
            "failed_by_cause": dict(m.failed_by_cause),
            "skipped_by_cause": dict(m.skipped_by_cause),
            "dedup": self.dedup(),
            "in_flight_end_by_component": dict(m.record.in_flight_end),
            "fetchers_on_crash": crawler.on_crash if crawler is not None else None,
            "components": components,
            "outages": [{"component": c, "from_s": a, "to_s": b} for c, a, b in m.outages],
            "latency_ms": {name: s.to_dict() for name, s in self.latency.items()},
            "latency_source": (
                "measured per URL"
                if self.engine == "request"
                else "estimated (flow engine)"
                if self.latency
                else None  # the flow engine estimates none for a graph design
            ),
            "warmup_s": self.warmup_s,
            "error_budget": self.budget.to_dict(),
            "alerts": None if self.alerts is None else self.alerts.to_dict(),
            "traps": [t.to_dict() for t in self.traps],
            "explanations": [e.to_dict() for e in self.explanations],
        }

    def windows(self) -> pd.DataFrame:
        """One row per 1-second window and component (long format)."""
        import pandas as pd

        m = self.metrics
        frames = []
        for name, cw in m.components.items():
            n = len(cw.capacity)
            columns: dict[str, Any] = {
                "window": np.arange(n),
                "t_s": m.window_s,
                "component": name,
                "demand": cw.demand,
                "capacity": cw.capacity,
                "saturation": cw.saturation,
                "outage": cw.outage,
                "utilization": cw.utilization,
                "arrived": cw.arrived,
                "processed": cw.processed,
                "served": cw.served,
                "failed": cw.failed_total,
            }
            for cause in m.record.causes:
                columns[f"failed_{cause}"] = cw.failed.get(cause, np.zeros(n, dtype=np.int64))
            columns["backlog"] = cw.backlog
            samples = m.record.latency.get(name)
            if samples is not None:
                tpw = m.record.timeline.ticks_per_window
                columns["latency_mean_ms"], columns["latency_p99_ms"] = samples.per_window(tpw, n)
            else:
                columns["latency_mean_ms"] = columns["latency_p99_ms"] = np.full(n, np.nan)
            frames.append(pd.DataFrame(columns))
        return pd.concat(frames, ignore_index=True)
