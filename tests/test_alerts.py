"""Burn-rate alerts replayed on a run (gym.analysis.alerts), checked by hand.

The constructed case: 1,000 URLs/s offered evenly (10 a tick), every lookup a cache miss
and every stage roomy, so each tick 10 URLs finish at the page store from the first
quarter second on; the store stalls from 10 s to 15 s, when all 10 fail (a loss share
of 1). The availability SLO is 0.97: the budget allows a share 0.03 to fail.

One alert, 14.4x over 1 h and 5 min, with a time scale of 360 (a second of the run
stands for 6 minutes): the long window is 3600 / 360 = 10 s = 1,000 ticks, the short
300 / 360 = 0.833 s, 83 ticks once rounded. Over a window of n ticks holding k stall
ticks (every tick 10 URLs finish), the burn rate is (10 k / 10 n) / 0.03 = k / (0.03 n):

- long: k / 30 >= 14.4 once k >= 432, the 432nd tick of the stall: it fires at the end
  of tick 1,431, at 14.32 s (the short window has held 36 or more stall ticks since its
  36th);
- after the stall the short window empties first: it holds k >= 35.9, so 36, stall
  ticks up to the window ending at tick 1,546 (ticks 1,464..1,499 of the stall in
  1,464..1,546), so the alert is resolved at the end of that tick, 15.47 s, while the
  long window alone would have held until tick 2,067.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gym
from gym.analysis import alerts
from gym.models import Scenario
from tests.conftest import design

SCENARIO = {
    "name": "stall",
    "duration_s": 30,
    "base_rps": 1000,
    "arrivals": "deterministic",
    "faults": [{"kind": "stall", "at_s": 10, "for_s": 5, "target": "page_store"}],
    "slos": {"availability": {"min": 0.97}},
    "alerts": {
        "conditions": [
            {
                "name": "fast",
                "severity": "page",
                "burn_rate": 14.4,
                "long_window": "1h",
                "short_window": "5m",
            }
        ],
        "time_scale": 360,
    },
}


def _run(**changes: object) -> gym.Result:
    scenario = Scenario.model_validate({**SCENARIO, **changes})
    return gym.simulate(design(cache={"hit_ratio": 0.0}), scenario)


def test_the_constructed_stall_by_hand() -> None:
    result = _run()
    record = result.metrics.record
    # The case is what the docstring says: 10 URLs finish a tick from the pipeline's
    # start, all failing in the stall's 500 ticks.
    store = record.components["page_store"]
    failed = sum(store.failed.values())
    assert (failed[1000:1500] == 10).all() and failed.sum() == 5000
    assert (store.served[100:1000] == 10).all() and (store.served[1500:] == 10).all()
    replay = result.alerts
    assert replay is not None
    (window,) = replay.windows
    assert (window.long, window.short, window.after) == (1000, 83, 1)
    (firing,) = replay.firings
    assert firing.start_s == pytest.approx(14.32)
    assert firing.end_s == pytest.approx(15.47)
    # The highest long-window burn while it fired: 500 stall ticks of 1,000 / 0.03.
    assert firing.peak_burn == pytest.approx(500 / 1000 / 0.03)
    # Budget spent when it fired: 432 ticks x 10 URLs over 0.03 x the URLs finished.
    assert firing.budget_spent == pytest.approx(4320 / (0.03 * result.metrics.finished))
    (stall,) = replay.detections
    assert stall.event == "page_store stall" and stall.delays == {"fast": pytest.approx(4.32)}
    assert "time_scale 360" in replay.scale_rule


def test_no_short_window_and_alert_after() -> None:
    """One window: it holds while the long window holds 432 stall ticks or more; from
    tick 2,000 on it holds 1,500 - (t - 999), 432 for the last time at tick 2,067, so
    it is resolved at 20.68 s. With alert_after 1 min (60 / 360 = 0.167 s, 17 ticks
    once rounded) the condition must hold 17 ticks: it fires 16 ticks later, 14.48 s."""
    one = [{"name": "slow", "burn_rate": 14.4, "long_window": "1h"}]
    (firing,) = _run(alerts={"conditions": one, "time_scale": 360}).alerts.firings  # type: ignore[union-attr]
    assert (firing.start_s, firing.end_s) == (pytest.approx(14.32), pytest.approx(20.68))
    held = [{**one[0], "alert_after": "1m"}]
    (firing,) = _run(alerts={"conditions": held, "time_scale": 360}).alerts.firings  # type: ignore[union-attr]
    assert firing.start_s == pytest.approx(14.48)


def test_burn_rate_by_its_definition() -> None:
    """A stall of 50 ticks losing a share 0.25 of 40 URLs a tick, the rest served; the
    burn over 20 ticks at each tick, from the definition (failed / finished over the
    window, divided by 1 - 0.99), in a plain loop."""
    n = 200
    failed = np.zeros(n, dtype=np.int64)
    served = np.full(n, 40, dtype=np.int64)
    failed[100:150], served[100:150] = 10, 30
    got = alerts.burn(failed, served, 20, 0.01)
    for t in range(n):
        lo = max(0, t - 19)
        f, s = failed[lo : t + 1].sum(), served[lo : t + 1].sum()
        assert got[t] == pytest.approx(f / (f + s) / 0.01)
    assert got[149] == pytest.approx(25.0)  # a full window inside the stall: 0.25 / 0.01
    # Nothing finished: no burn rate; a budget of 0: any failure burns without bound.
    assert math.isnan(alerts.burn(np.zeros(3, int), np.zeros(3, int), 2, 0.01)[0])
    assert alerts.burn(np.array([1]), np.array([1]), 1, 0.0)[0] == math.inf


def test_the_scale_rule_is_stated() -> None:
    """No time_scale: the longest window over the run (1 h over 30 s: 120); windows that
    fit in the run: no scaling."""
    replay = _run(alerts={"conditions": SCENARIO["alerts"]["conditions"]}).alerts  # type: ignore[index]
    assert replay is not None and replay.time_scale == 120
    assert "the longest window (1h) is the run's 30 s" in replay.scale_rule
    fits = [{"name": "x", "burn_rate": 2, "long_window": "10s"}]
    replay = _run(alerts={"conditions": fits}).alerts
    assert replay is not None and replay.time_scale == 1
    assert replay.scale_rule == "every window fits in the run: no scaling"


def test_shown_everywhere() -> None:
    """The text output, --json and the HTML report carry the firing."""
    from gym.report import html

    result = _run()
    data = result.to_dict()["alerts"]
    assert data["firings"][0]["start_s"] == pytest.approx(14.32)
    assert data["time_scale"] == 360
    page = html.render(result)
    assert "fast (page) fires" in page  # on the report's timeline
    assert "page_store stall at 10 s: fast after 4.32 s (25.9 min)" in page


def test_no_alerts_without_an_availability_slo_or_with_none() -> None:
    assert _run(slos={}, alerts={"conditions": "none"}).alerts is None
    assert _run(alerts={"conditions": "none"}).alerts is None
    with pytest.raises(ValueError, match="watch the availability SLO"):
        Scenario.model_validate({**SCENARIO, "slos": {}})


def test_a_target_of_one_has_no_burn_rate(tmp_path: Path) -> None:
    """availability min 1 leaves no budget: no replay (no infinite burn in --json)."""
    assert _run(slos={"availability": {"min": 1}}).alerts is None
    from tests.conftest import CHAOS, STARTER

    perfect = tmp_path / "perfect.yaml"
    perfect.write_text(CHAOS.read_text().replace("{min: 0.97}", "{min: 1}"))
    got = subprocess.run(
        [sys.executable, "-m", "gym", "run", str(STARTER), "-s", str(perfect), "--json"],
        capture_output=True,
        text=True,
    )
    assert got.returncode == 1, got.stderr
    assert json.loads(got.stdout)["alerts"] is None


def test_windows_the_grid_changes_are_said() -> None:
    """Windows longer than the run, and under half a tick, are named in the scale rule."""
    workbook = {"conditions": "workbook", "time_scale": 1}
    replay = _run(alerts=workbook).alerts
    assert replay is not None
    assert "longer than the run, reaching back only to its start: page-1h 1h" in replay.scale_rule
    replay = _run(duration_s=1, faults=[], alerts={"conditions": "workbook"}).alerts
    assert replay is not None
    assert "under half a tick, counted as one tick: page-1h 5m" in replay.scale_rule
