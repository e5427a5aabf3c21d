"""Burn-rate alerts replayed on a run: which would have fired, when, how long after each
chaos event, and how much of the error budget was left (docs/alerts.md).

The availability SLO allows a share ``1 - target`` of the finished URLs (served +
failed) to fail. Over a window, the *burn rate* is the share that failed over that
allowance: failed / finished in the window, divided by ``1 - target``. An alert's
condition holds at the end of a tick when the burn rate over its long window, and over
its short window if it has one, is at least its threshold (within a relative 1e-9, the
rounding of floating point); it *fires* once the condition
has held for ``alert_after`` (at least one tick), and is *resolved* at the end of the
last tick it holds. A window with nothing finished in it has no burn rate: the condition
does not hold (no data, no alert). At the start of the run a window reaches back only to
the start.

Windows are production durations (1 h, 3 d); a run lasts seconds. A second of the run
stands for ``time_scale`` production seconds: the scenario's ``alerts.time_scale``, or
else the longest long window over the run's duration (a 40 s run stands for the 3 days
of the Workbook's ticket window), or 1 when every window fits in the run. Each window is
then that many ticks of the run, rounded to the nearest whole tick and at least one;
the replay states the scale and the ticks of each window (never silently).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gym.analysis.metrics import Metrics
from gym.models.alerts import BurnRateAlert, seconds
from gym.models.scenario import Scenario

if TYPE_CHECKING:
    from gym.sim.timeline import Event


@dataclass(frozen=True)
class Window:
    """An alert's windows on the run's tick grid."""

    alert: BurnRateAlert
    long: int  # ticks
    short: int | None
    after: int  # ticks the condition must hold (at least 1)


@dataclass(frozen=True)
class Firing:
    """One alert, from the end of the tick it fired to the end of the last it held."""

    alert: str
    severity: str
    start_s: float
    end_s: float | None  # None: still firing when the run ends
    peak_burn: float  # the highest long-window burn rate while it fired
    budget_spent: float | None  # share of the run's error budget spent when it fired


@dataclass(frozen=True)
class Detection:
    """A chaos event (a fault, or a load stage that raises the load above its base), and
    how long after its start each alert fired: the first firing that starts at or after
    the event's start while a long window still holds part of the event. An alert firing
    already when the event starts is listed apart: it did not detect this event."""

    event: str
    kind: str
    start_s: float
    end_s: float
    delays: dict[str, float | None]  # alert -> seconds after the start; None: did not fire
    already: tuple[str, ...] = ()  # alerts firing when the event started


@dataclass(frozen=True)
class Replay:
    """The alerts a run would have fired."""

    target: float
    time_scale: float
    scale_rule: str
    tick_s: float
    windows: tuple[Window, ...]
    firings: tuple[Firing, ...]
    detections: tuple[Detection, ...]

    def production(self, run_s: float) -> str:
        """Run seconds as the production time they stand for (``0.5 s`` -> ``54 min``)."""
        return _duration(run_s * self.time_scale)

    def conditions(self) -> str:
        """The alerts in one line: ``page-1h (page): 14.4x over 1h and 5m``, ..."""
        parts = []
        for w in self.windows:
            a = w.alert
            over = a.long_window + (f" and {a.short_window}" if a.short_window else "")
            after = f", for {a.alert_after}" if a.alert_after else ""
            parts.append(f"{a.name} ({a.severity}): {a.burn_rate:g}x over {over}{after}")
        return "; ".join(parts)

    def detection_lines(self) -> list[str]:
        """Per chaos event, how long after its start each alert fired, in run seconds and
        in the production time they stand for."""
        lines = []
        for d in self.detections:
            said = []
            for name, delay in d.delays.items():
                if delay is not None:
                    when = f"{delay:.2f} s" + (
                        f" ({self.production(delay)})" if self.time_scale != 1 else ""
                    )
                    said.append(f"{name} after {when}")
            missed = [n for n, v in d.delays.items() if v is None and n not in d.already]
            if d.already:
                said.append(f"{', '.join(d.already)} already firing")
            if missed:
                said.append(f"{', '.join(missed)} did not fire")
            lines.append(f"{d.event} at {d.start_s:g} s: " + "; ".join(said))
        return lines

    def to_dict(self) -> dict[str, object]:
        return {
            "availability_target": self.target,
            "time_scale": self.time_scale,
            "scale_rule": self.scale_rule,
            "conditions": [
                {
                    **w.alert.model_dump(),
                    "long_ticks": w.long,
                    "short_ticks": w.short,
                    "after_ticks": w.after,
                }
                for w in self.windows
            ],
            "firings": [f.__dict__ for f in self.firings],
            "detections": [d.__dict__ for d in self.detections],
        }


def replay(metrics: Metrics, scenario: Scenario) -> Replay | None:
    """The scenario's alerts over ``metrics``' run; None when there is no availability SLO,
    no alert, or a target of 1 (no budget: no burn rate)."""
    slo = scenario.slos.availability
    alerts = scenario.alerts.resolved()
    if slo is None or not alerts or slo.min >= 1:
        return None  # nothing to watch, or no budget to burn (a target of 1)
    tl = metrics.record.timeline
    n_ticks, tick_s = tl.n_ticks, tl.tick_s
    scale, rule = _scale(scenario, alerts, n_ticks * tick_s)
    windows = tuple(_window(a, scale, tick_s) for a in alerts)
    rule += _stretched(windows, scale, tick_s, n_ticks)
    failed, served = _outcomes(metrics, n_ticks)
    allowance = 1.0 - slo.min
    budget = allowance * (int(failed.sum()) + int(served.sum()))
    spent = np.cumsum(failed)
    firings = [
        f for w in windows for f in _firings(w, failed, served, allowance, budget, spent, tick_s)
    ]
    firings.sort(key=lambda f: (f.start_s, f.alert))
    detections = _detections(tl.events, windows, firings, tick_s)
    return Replay(slo.min, scale, rule, tick_s, windows, tuple(firings), tuple(detections))


def _outcomes(metrics: Metrics, n_ticks: int) -> tuple[np.ndarray, np.ndarray]:
    """The URLs failed and served per tick, every component's together."""
    failed = np.zeros(n_ticks, dtype=np.int64)
    served = np.zeros(n_ticks, dtype=np.int64)
    for tally in metrics.record.components.values():
        served += tally.served[:n_ticks]
        for counts in tally.failed.values():
            failed += counts[:n_ticks]
    return failed, served


def _firings(
    w: Window,
    failed: np.ndarray,
    served: np.ndarray,
    allowance: float,
    budget: float,
    spent: np.ndarray,
    tick_s: float,
) -> list[Firing]:
    """When alert ``w`` fires and resolves: each spell its windows' burn rates hold at
    its threshold for at least its ``after`` ticks."""
    # A burn rate within 1e-9 of the threshold reaches it: 432 failed of 1,000 over an
    # allowance of 1 - 0.97 is 14.4 exactly, 14.399999999999999 in floating point.
    reach = w.alert.burn_rate * (1 - 1e-9)
    long = burn(failed, served, w.long, allowance)
    holds = long >= reach
    if w.short is not None:
        holds &= burn(failed, served, w.short, allowance) >= reach
    n_ticks = len(failed)
    out = []
    for first, last in _spells(holds):
        fire = first + w.after - 1
        if fire > last:
            continue  # it did not hold long enough
        out.append(
            Firing(
                w.alert.name,
                w.alert.severity,
                round((fire + 1) * tick_s, 9),
                None if last + 1 >= n_ticks else round((last + 1) * tick_s, 9),
                float(np.max(long[fire : last + 1])),
                None if budget <= 0 else float(spent[fire]) / budget,
            )
        )
    return out


def _detections(
    events: Sequence[Event], windows: Sequence[Window], firings: list[Firing], tick_s: float
) -> list[Detection]:
    """For each fault and each rise of the load, how long after it each alert fired (None:
    it did not, or it was firing already)."""
    detections = []
    before = 1.0
    for event in events:
        if event.kind == "load":
            rises = (event.multiplier or 0.0) > max(before, 1.0)
            before = event.multiplier or 0.0
            if not rises:
                continue  # the load back down, or the run's opening load: nothing to catch
        delays: dict[str, float | None] = {}
        already = []
        for w in windows:
            mine = [f for f in firings if f.alert == w.alert.name]
            if _firing_at(mine, event.start_s):
                already.append(w.alert.name)
                delays[w.alert.name] = None
                continue
            reach = event.end_s + w.long * tick_s  # a long window still holds the event
            ons = [f for f in mine if event.start_s <= f.start_s <= reach]
            delays[w.alert.name] = round(ons[0].start_s - event.start_s, 9) if ons else None
        detections.append(
            Detection(event.name, event.kind, event.start_s, event.end_s, delays, tuple(already))
        )
    return detections


def _firing_at(firings: list[Firing], t_s: float) -> bool:
    """Whether one of ``firings`` had fired before ``t_s`` and still held at it."""
    return any(f.start_s < t_s and (f.end_s is None or f.end_s > t_s) for f in firings)


def burn(failed: np.ndarray, served: np.ndarray, ticks: int, allowance: float) -> np.ndarray:
    """The burn rate over the ``ticks`` ticks ending at each tick (fewer at the start):
    failed / (served + failed) in the window, over ``allowance``; NaN where nothing
    finished in the window. With no allowance (a target of 1), any failure is an infinite
    burn."""
    cf = np.concatenate([[0], np.cumsum(failed)])
    cs = np.concatenate([[0], np.cumsum(served)])
    end = np.arange(1, len(failed) + 1)
    start = np.maximum(0, end - ticks)
    f = (cf[end] - cf[start]).astype(float)
    done = f + (cs[end] - cs[start])
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(done > 0, f / np.where(done > 0, done, 1), np.nan)
        if allowance > 0:
            out: np.ndarray = share / allowance
        else:
            out = np.where(share > 0, np.inf, share)
    return out


def _spells(holds: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) tick of each run of True."""
    edges = np.diff(np.concatenate([[0], holds.astype(np.int8), [0]]))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1) - 1
    return list(zip(starts.tolist(), ends.tolist(), strict=True))


def _scale(
    scenario: Scenario, alerts: tuple[BurnRateAlert, ...], run_s: float
) -> tuple[float, str]:
    longest = max(seconds(a.long_window) for a in alerts)
    given = scenario.alerts.time_scale
    if given is not None:
        return given, (
            f"time_scale {_number(given)} (the scenario's): a second of the run stands for "
            f"{_duration(given)}"
        )
    if longest <= run_s:
        return 1.0, "every window fits in the run: no scaling"
    scale = longest / run_s
    longest_name = next(a.long_window for a in alerts if seconds(a.long_window) == longest)
    return scale, (
        f"time_scale {_number(scale)}: the longest window ({longest_name}) is the run's "
        f"{run_s:g} s, so a second of the run stands for {_duration(scale)}"
    )


def _stretched(windows: tuple[Window, ...], scale: float, tick_s: float, n_ticks: int) -> str:
    """What the tick grid did to the windows, said: those longer than the run (they reach
    back only to its start) and those under a tick (one tick)."""
    long, short = [], []
    for w in windows:
        a = w.alert
        for duration, ticks in ((a.long_window, w.long), (a.short_window, w.short)):
            if duration is None or ticks is None:
                continue
            if ticks > n_ticks:
                long.append(f"{a.name} {duration}")
            if seconds(duration) / scale < tick_s / 2:
                short.append(f"{a.name} {duration}")
    out = ""
    if long:
        out += f"; longer than the run, reaching back only to its start: {', '.join(long)}"
    if short:
        out += f"; under half a tick, counted as one tick: {', '.join(short)}"
    return out


def _window(alert: BurnRateAlert, scale: float, tick_s: float) -> Window:
    def ticks(duration: str) -> int:
        return max(1, round(seconds(duration) / scale / tick_s))

    short = ticks(alert.short_window) if alert.short_window else None
    after = ticks(alert.alert_after) if alert.alert_after else 1
    return Window(alert, ticks(alert.long_window), short, after)


def _number(x: float) -> str:
    """6,480 or 2.5: no exponent."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _duration(s: float) -> str:
    """Seconds as people say them: 45 s, 12 min, 3.2 h, 2.5 d."""
    if not math.isfinite(s):
        return "-"
    for unit, size in (("d", 86_400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{_number(s / size)} {unit}"
    return f"{_number(s)} s"
