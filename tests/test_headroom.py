"""Headroom (gym.explore.headroom): how far a passing design is from failing, checked by
hand on the reference under the chaos scenario with evenly spaced arrivals (so each
second offers exactly its rate, and saturation is plain arithmetic).

The reference fetches with 4 replicas x 4,000/s = 16,000/s. The scenario's load peaks at
2 x 6,000 = 12,000/s in the surge (all 4 replicas up: 12,000 / 16,000 = 0.75), and at
1.5 x 6,000 = 9,000/s after the crash took one replica (9,000 / 12,000 = 0.75). With
every stage's load times f, the fleet's peak saturation is 0.75 f: over the SLO's 0.9
once f > 1.2. So the load margin brackets 1.2 (to the bisection's 1%), and peak
saturation is what fails there.

The crash: losing 2 of the 4 leaves 8,000/s for 9,000/s (1.125 > 0.9): it fails; losing
1 (the scenario's own crash) passes. The margin is 1, N+1's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import gym
from gym.cli import app
from gym.explore import headroom
from gym.models import CrashFault, LoadStage
from tests.conftest import CHAOS, REFERENCE, STARTER

runner = CliRunner()


def _even() -> gym.Scenario:
    return gym.load_scenario(CHAOS).model_copy(update={"arrivals": "deterministic"})


def test_the_reference_by_hand() -> None:
    room = headroom.headroom(gym.simulate(REFERENCE, _even()))
    assert room is not None
    load, crash, hit = room.margins
    assert load.what == "load" and load.fails is not None
    assert load.passes < 1.2 <= load.fails
    assert load.fails - load.passes <= headroom.LOAD_PRECISION * load.passes
    assert load.failed == ("peak_saturation",)
    assert (crash.what, crash.passes, crash.fails, crash.fleet) == ("crash", 1, 2, 4)
    assert crash.failed == ("peak_saturation",)
    # The hit ratio's: what the bisection finds is checked by running both ends.
    assert hit.what == "hit_ratio" and hit.fails is not None
    assert hit.fails < hit.passes <= 0.92 and hit.passes - hit.fails <= headroom.HIT_PRECISION
    for ratio, passes in ((hit.passes, True), (hit.fails, False)):
        design = gym.load_design(REFERENCE, [f"cache.hit_ratio={ratio}"])
        assert gym.simulate(design, _even()).passed is passes
    assert room.cost > 3  # the runs the margins took


def test_no_headroom_for_a_failing_design() -> None:
    assert headroom.headroom(gym.simulate(STARTER, CHAOS)) is None


def test_shown_by_gym_run_and_the_report(tmp_path: Path) -> None:
    """The text names each margin and the runs spent; --json carries them; --no-headroom
    skips them; the report has a section."""
    res = runner.invoke(app, ["run", str(REFERENCE)])
    assert res.exit_code == 0
    assert "Headroom (how far from failing;" in res.stdout
    assert "crash: can lose 1 replica of 4 at once; losing 2 fails" in res.stdout
    data = json.loads(runner.invoke(app, ["run", str(REFERENCE), "--json"]).stdout)
    assert [m["what"] for m in data["headroom"]["margins"]] == ["load", "crash", "hit_ratio"]
    assert data["headroom"]["runs"] > 3
    res = runner.invoke(app, ["run", str(REFERENCE), "--no-headroom", "--json"])
    assert json.loads(res.stdout)["headroom"] is None
    res = runner.invoke(
        app, ["run", str(REFERENCE), "--runs", "3", "--confidence", "0.3", "--no-headroom"]
    )
    assert res.exit_code == 2 and "--no-headroom" in res.stderr
    page = tmp_path / "r.html"
    assert runner.invoke(app, ["report", str(REFERENCE), "-o", str(page)]).exit_code == 0
    assert "<h2>Headroom</h2>" in page.read_text()


@pytest.mark.parametrize("pair", [("systems/ingestion.yaml", "systems/ingestion.yaml")])
def test_a_graph_has_load_and_crash_margins(pair: tuple[str, str]) -> None:
    from tests.conftest import ROOT

    design, scenario = pair
    result = gym.simulate(ROOT / "designs" / design, ROOT / "scenarios" / scenario)
    room = headroom.headroom(result)
    assert room is not None
    assert [m.what for m in room.margins] == ["load", "crash"]


def test_a_graph_cache_has_a_hit_ratio_margin() -> None:
    """The url-shortener's cache node: its hit-ratio margin, named, checked by running
    both ends (the design passes at the margin's pass, fails at its failure)."""
    from tests.conftest import ROOT

    design = ROOT / "designs" / "systems" / "url-shortener.yaml"
    scenario = ROOT / "scenarios" / "systems" / "url-shortener.yaml"
    room = headroom.headroom(gym.simulate(design, scenario))
    assert room is not None
    hit = room.margins[-1]
    assert (hit.what, hit.node) == ("hit_ratio", "cache") and hit.fails is not None
    assert hit.sentence().startswith("hit ratio at cache: passes down to")
    assert hit.passes - hit.fails <= headroom.HIT_PRECISION
    for ratio, passes in ((hit.passes, True), (hit.fails, False)):
        changed = gym.load_design(design, [f"graph.nodes.cache.hit_ratio={ratio}"])
        assert gym.simulate(changed, scenario).passed is passes


def test_skipped_over_its_budget_unless_asked_for() -> None:
    """gym run works the margins out for runs of up to 20,000 ticks (counted, not timed:
    the same inputs decide the same way); a longer run skips them and says why
    (--headroom forces them)."""
    result = gym.simulate(REFERENCE, CHAOS)
    room = headroom.headroom(result, max_ticks=3_999)  # the chaos scenario: 4,000 ticks
    assert room is not None and room.margins == [] and room.cost == 0
    assert room.skipped is not None and "gym run --headroom works them out" in room.skipped
    full = headroom.headroom(result, max_ticks=4_000)
    assert full is not None and full.skipped is None and len(full.margins) == 3
    res = runner.invoke(
        app, ["run", str(REFERENCE), "--runs", "3", "--confidence", "0.3", "--headroom"]
    )
    assert res.exit_code == 2 and "--headroom" in res.stderr
    one = runner.invoke(app, ["run", str(REFERENCE), "--json"]).stdout
    assert one == runner.invoke(app, ["run", str(REFERENCE), "--json"]).stdout


def test_the_load_figures_are_the_points_run() -> None:
    """A bisection's points are printed as they ran, to five figures: 1.1796875 is
    1.1797 (printed as 1.18 it read as a point that fails, where a run at 1.18 may
    pass); both ends to the same decimals (1.2500 and 1.2578), never alike."""
    margin = headroom.Margin("load", 1.171875, 1.1796875, ("peak_saturation",))
    assert "passes up to 1.1719x the scenario's load; fails at 1.1797x" in margin.sentence()
    wider = headroom.Margin("load", 1.25, 1.2578125).sentence()
    assert "passes up to 1.2500x the scenario's load; fails at 1.2578x" in wider
    hit = headroom.Margin("hit_ratio", 0.8625, 0.858906)
    assert hit.sentence() == "hit ratio: passes down to 0.8625; fails at 0.8589"
    wide = headroom.Margin("load", 64.0, None)
    assert wide.sentence() == "load: passes at every factor tried, up to 64x the scenario's load"


def test_a_surge_is_named_only_when_there_is_one() -> None:
    """The chaos scenario surges (2x): its load margin says the surge scales too; a flat
    load of one stage (1.2x, so the reference's throughput passes) has no surge to name."""
    room = headroom.headroom(gym.simulate(REFERENCE, _even()))
    assert room is not None and room.margins[0].surge
    assert "(its surge scaled alike)" in room.margins[0].sentence()
    flat = _even().model_copy(update={"load": [LoadStage(at_s=0, multiplier=1.2)]})
    flat_room = headroom.headroom(gym.simulate(REFERENCE, flat))
    assert flat_room is not None and not flat_room.margins[0].surge
    assert "surge" not in flat_room.margins[0].sentence()


def test_a_crash_of_the_whole_fleet_and_two_crashes() -> None:
    """A crash of 6 replicas of the reference's 4 takes them all; for 1 s it passes (the
    frontier's 80,000 URLs hold 1 s of 9,000/s), so the margin is the whole fleet.
    With two crashes, the larger (the first listed of equals) is varied and named by its
    time; the other is kept."""
    base = _even()
    whole = [
        f.model_copy(update={"replicas": 6, "for_s": 1.0}) if f.kind == "crash" else f
        for f in base.faults
    ]
    room = headroom.headroom(gym.simulate(REFERENCE, base.model_copy(update={"faults": whole})))
    assert room is not None
    crash = next(m for m in room.margins if m.what == "crash")
    assert (crash.passes, crash.fails, crash.fleet) == (4, None, 4)
    assert "crash: can lose all 4 replicas at once" in crash.sentence()
    early = CrashFault(kind="crash", at_s=2.0, replicas=1, for_s=1.0)
    two = base.model_copy(update={"faults": [*base.faults, early]})
    room = headroom.headroom(gym.simulate(REFERENCE, two))
    assert room is not None
    crash = next(m for m in room.margins if m.what == "crash")
    # the scenario's own crash at t=12 s (1 replica for 6 s) is varied: as alone, 1 of 4
    assert crash.at_s == 12.0 and (crash.passes, crash.fails) == (1, 2)
    assert crash.sentence().startswith("crash at t=12s: can lose 1 replica of 4 at once")


def test_a_run_stepped_tick_by_tick_counts_more_against_the_budget() -> None:
    """retry-storm under freshness: 3,000 ticks, but a retry policy makes the flow engine
    step tick by tick (about 60x a plain run's cost), so it counts 50 x 3,000 = 150,000
    against gym run's 20,000 and is skipped, saying why; the reference is not."""
    from tests.conftest import ROOT

    storm = gym.simulate(
        ROOT / "designs" / "levers" / "retry-storm.yaml",
        ROOT / "scenarios" / "levers" / "freshness.yaml",
    )
    assert headroom.weighted_ticks(storm) == headroom.STEP_WEIGHT * 3_000
    room = headroom.headroom(storm, headroom.AUTO_TICKS)
    assert room is not None and room.skipped is not None and "stepped tick by tick" in room.skipped
    assert headroom.weighted_ticks(gym.simulate(REFERENCE, CHAOS)) == 4_000
