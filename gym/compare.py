"""Designs side by side: every SLO, the cost, the verdicts, and the differences that matter."""

from __future__ import annotations

from dataclasses import dataclass

from gym.result import Result
from gym.scoring import SLO_NAMES, format_measured


@dataclass(frozen=True)
class Comparison:
    """Results of several designs under one scenario, seed and engine."""

    results: list[Result]

    def differences(self) -> list[str]:
        """Sentences on what separates the designs, most decisive first."""
        out = []
        passing = [r for r in self.results if r.passed]
        if passing:
            best = min(
                passing, key=lambda r: (r.metrics.cost_units, -(r.metrics.availability or 0))
            )
            out.append(
                f"cheapest passing design: {best.design.name} ({best.metrics.cost_units} units)"
            )
        else:
            out.append("no design passes every SLO")
        for name in SLO_NAMES:
            checks = [(r, c) for r in self.results for c in r.checks if c.name == name]
            if not checks or len({c.passed for _, c in checks}) < 2:
                continue
            parts = []
            for r, c in checks:
                verb = "passes" if c.passed else "fails"
                if c.measured is None:
                    parts.append(f"{r.design.name} {verb} (undefined)")
                    continue
                gap = c.measured - c.target
                parts.append(
                    f"{r.design.name} {verb} ({format_measured(name, c.measured)}, "
                    f"{'+' if gap >= 0 else ''}{format_measured(name, gap)} vs target)"
                )
            out.append(f"{name}: " + "; ".join(parts))
        for r in self.results:
            causes = sorted(
                ((n, c) for c, n in r.metrics.failed_by_cause.items() if n), reverse=True
            )
            if causes:
                n, cause = causes[0]
                out.append(f"{r.design.name} loses most to {cause}: {n:,} URLs")
        return out

    def to_json(self) -> dict[str, object]:
        return {
            "scenario": self.results[0].scenario.name,
            "engine": self.results[0].engine,
            "seed": self.results[0].seed,
            "designs": [
                {
                    "design": r.design.name,
                    "design_file": r.design._source,
                    "verdict": r.verdict,
                    "cost_units": r.metrics.cost_units,
                    "slos": [c.to_json() for c in r.checks],
                    "failed_by_cause": {c: n for c, n in r.metrics.failed_by_cause.items() if n},
                }
                for r in self.results
            ],
            "differences": self.differences(),
        }
