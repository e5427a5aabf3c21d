"""Designs side by side: every SLO, the cost, the verdicts, and the differences that matter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gym.analysis.result import Result
from gym.analysis.scoring import SLO_NAMES, format_measured


def fields(design: object) -> dict[str, Any]:
    """Every field of a design, defaults filled in, by dotted path (a section it leaves
    out, such as ``async_writer: none``, is one path with the value None)."""
    assert hasattr(design, "model_dump")
    data = design.model_dump(mode="json", by_alias=True)
    out: dict[str, Any] = {}

    def walk(value: Any, path: str) -> None:
        if path == "graph.edges" and isinstance(value, list):
            out[path] = ", ".join(_edge(e) for e in value)  # one line: the wiring
            return
        if isinstance(value, dict) and value:
            for key, v in value.items():
                walk(v, f"{path}.{key}" if path else str(key))
        else:
            out[path] = value

    walk(data, "")
    return out


def shown(value: Any) -> str:
    """A design field's value as a design file writes it: none for a section or field left
    out, a number in full where 12 digits would change it, sections and lists in YAML's
    flow style."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        short = f"{value:.12g}"
        return short if float(short) == value else repr(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {shown(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(shown(v) for v in value) + "]"
    return str(value)


def _edge(edge: dict[str, Any]) -> str:
    """A graph edge as ``from -> to``, with its share and delay where not the defaults."""
    extra = []
    if edge.get("share", 1.0) != 1.0:
        extra.append(f"share {edge['share']:g}")
    if edge.get("delay_s", 0.0):
        extra.append(f"delay {edge['delay_s']:g} s")
    for key, value in edge.items():
        if key not in ("from", "to", "share", "delay_s") and value not in (None, False):
            extra.append(f"{key} {value}")
    return f"{edge['from']} -> {edge['to']}" + (f" ({', '.join(extra)})" if extra else "")


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
                out.append(f"{r.design.name} loses most to {cause}: {r.unit.counted(n)}")
        return out

    def input_differences(self) -> dict[str, list[Any]]:
        """The design fields whose values differ, by dotted path, with each design's value
        in order (the name left out). A field a design does not have is None when its
        section is left out (``async_writer: none``), else "-"."""
        flat = [fields(r.design) for r in self.results]
        paths: list[str] = []
        for f in flat:
            paths += [p for p in f if p not in paths and p != "name"]
        # A section left out in one design and written in another: its fields' rows say it.
        paths = [p for p in paths if not any(q.startswith(p + ".") for q in paths)]

        def value(f: dict[str, Any], path: str) -> Any:
            if path in f:
                return f[path]
            parts = path.split(".")
            for i in range(len(parts) - 1, 0, -1):
                if ".".join(parts[:i]) in f:
                    return f[".".join(parts[:i])]  # its section is left out: None
            return "-"

        out = {}
        for path in paths:
            values = [value(f, path) for f in flat]
            if any(v != values[0] for v in values[1:]):
                out[path] = values
        return out

    def to_dict(self) -> dict[str, object]:
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
                    "slos": [c.to_dict() for c in r.checks],
                    "failed_by_cause": {c: n for c, n in r.metrics.failed_by_cause.items() if n},
                }
                for r in self.results
            ],
            "input_differences": self.input_differences(),
            "differences": self.differences(),
        }
