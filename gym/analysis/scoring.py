"""SLO checks and the verdict. Reads metrics, knows nothing of engines."""

from __future__ import annotations

from dataclasses import dataclass

from gym.analysis.metrics import Metrics
from gym.models import SLOs

#: The SLO names, in the order results list them (the keys of a scenario's ``slos``).
SLO_NAMES: tuple[str, ...] = ("throughput_rps", "availability", "peak_saturation", "cost_units")


@dataclass(frozen=True)
class SLOCheck:
    """One SLO: target, what was measured, and whether it held."""

    name: str
    op: str  # ">=" or "<="
    target: float
    measured: float | None  # None: undefined (availability when no URL finished); fails
    passed: bool

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "op": self.op,
            "target": self.target,
            "measured": self.measured,
            "passed": self.passed,
        }


def measured(metrics: Metrics, name: str) -> float | None:
    """The value an SLO named ``name`` is judged on; None where it is undefined."""
    if name == "throughput_rps":
        return metrics.throughput_rps
    if name == "availability":
        return metrics.availability
    if name == "peak_saturation":
        return metrics.peak_saturation
    if name == "cost_units":
        return float(metrics.cost_units)
    raise KeyError(name)


def check(metrics: Metrics, slos: SLOs) -> list[SLOCheck]:
    """Every SLO the scenario lists, checked."""
    checks = []
    for name in SLO_NAMES:
        spec = getattr(slos, name)
        if spec is None:
            continue
        value = measured(metrics, name)
        # An undefined measurement cannot show that the SLO holds, so it fails.
        if hasattr(spec, "min"):
            ok = value is not None and value >= spec.min
            checks.append(SLOCheck(name, ">=", spec.min, value, ok))
        else:
            ok = value is not None and value <= spec.max
            checks.append(SLOCheck(name, "<=", spec.max, value, ok))
    return checks


def format_measured(name: str, value: float | None, target: float | None = None) -> str:
    """A measured SLO value as tables and reports print it ("undefined" for None); with
    ``target``, with the decimals that tell them apart (a peak saturation of 0.9004
    against 0.9 is 0.9004, not 0.90, which read as a failure at the target)."""
    if value is None or value != value:  # None, or NaN (a mean over no defined runs)
        return "undefined"
    if name in ("availability", "peak_saturation"):
        digits = 4 if name == "availability" else 2
        while (
            target is not None
            and value != target
            and digits < 8
            and float(f"{value:.{digits}f}") == float(f"{target:.{digits}f}")
        ):
            digits += 1
        return f"{value:.{digits}f}"
    if name == "cost_units":
        return f"{value:g}"
    return per_second(value)


def per_second(value: float) -> str:
    """A rate as tables and sentences print it: whole above 100, three figures below
    (0.167/s, not 0/s)."""
    return f"{value:,.0f}" if abs(value) >= 100 or value == 0 else f"{value:.3g}"


def verdict(checks: list[SLOCheck]) -> str:
    """'pass' only if every SLO holds (a scenario without SLOs passes)."""
    return "pass" if all(c.passed for c in checks) else "fail"
