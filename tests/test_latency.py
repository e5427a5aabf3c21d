"""Latency: what each engine reports, how warm-up cuts it, and the flow engine's estimate."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import gym
from gym.cli import app
from gym.sim.latency import LatencyStats, fifo_segments
from tests.conftest import CHAOS, REFERENCE, design, scenario

runner = CliRunner()


def test_fifo_segments_by_hand() -> None:
    """4 URLs enter in tick 0, then 1 in tick 3 and 1 in tick 4; out: 1, 1, 1, 2, 0.
    FIFO: URL 1 leaves in tick 0, URL 2 in tick 1, URL 3 in tick 2, URLs 4 and 5 in
    tick 3; URL 6 is still queued. Runs (in, out, how many): (0,0,1) (0,1,1) (0,2,1)
    (0,3,1) (3,3,1); the waits add up to 0+1+2+3+0 = 6 ticks = the backlog summed over
    the ticks (3+2+1+0+1 = 7, less the 1 of URL 6, still queued at the end)."""
    t_in, t_out, n = fifo_segments(np.array([4, 0, 0, 1, 1]), np.array([1, 1, 1, 2, 0]))
    assert list(zip(t_in.tolist(), t_out.tolist(), n.tolist(), strict=True)) == [
        (0, 0, 1),
        (0, 1, 1),
        (0, 2, 1),
        (0, 3, 1),
        (3, 3, 1),
    ]
    assert int(((t_out - t_in) * n).sum()) == 6


def test_flow_wait_through_a_frontier_stall() -> None:
    """Deterministic 1,000/s (10 per tick); the frontier stalls t=2-3 s. URLs entering in
    the stall's first tick wait the whole second (100 ticks); after the stall 160/tick
    (the fetcher quota) drain the 1,000 queued from tick 300 on, so the URLs entering in
    the stall's last tick, 299 (numbers 991-1,000 of the queue), leave in tick 306, the
    7th tick of draining (6 x 160 = 960 < 991 and 1,000 <= 7 x 160): 7 ticks waited."""
    sc = scenario(faults=[{"kind": "stall", "at_s": 2, "for_s": 1, "target": "frontier"}])
    rec = gym.simulate(design(), sc, seed=0).metrics.record
    f = rec.components["frontier"]
    t_in, t_out, _n = fifo_segments(f.arrived - f.failed["frontier_overflow"], f.processed)
    wait = {int(a): int(b - a) for a, b in zip(t_in, t_out, strict=True)}
    assert wait[200] == 100
    assert wait[299] == 7
    assert wait[100] == 0 and wait[500] == 0


def test_request_engine_wait_through_a_frontier_stall() -> None:
    """The request engine measures the same: the longest frontier wait is about 1 s."""
    sc = scenario(
        arrivals="poisson",
        faults=[{"kind": "stall", "at_s": 2, "for_s": 1, "target": "frontier"}],
    )
    lat = gym.simulate(design(), sc, seed=0, engine="request").latency["frontier"]
    assert 900 < lat.p99 <= 1000.0


def test_weighted_percentiles() -> None:
    """Weighted stats: 90 URLs at 10 ms and 10 at 100 ms: mean 19, p50 10, p95 100."""
    st = LatencyStats.of(np.array([100.0, 10.0]), np.array([10, 90]))
    assert st is not None
    assert (st.mean, st.p50, st.p95, st.count) == (19.0, 10.0, 100.0, 100)


def test_warmup_drops_early_urls_from_latency() -> None:
    """With --warmup 20 only URLs arriving in the last 20 of 40 s count."""
    full = gym.simulate(REFERENCE, CHAOS, seed=0, engine="request").latency
    late = gym.simulate(REFERENCE, CHAOS, seed=0, engine="request", warmup_s=20).latency
    assert late["end_to_end"].count < 0.5 * full["end_to_end"].count
    flow_late = gym.simulate(REFERENCE, CHAOS, seed=0, warmup_s=20).latency
    assert flow_late["fetchers"].count < 0.5 * full["fetchers"].count


def test_cli_request_engine_json_has_latency() -> None:
    """--engine request --json: latency_ms per component and end to end."""
    result = runner.invoke(app, ["run", str(REFERENCE), "--engine", "request", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["engine"] == "request"
    lat = data["latency_ms"]
    assert {"frontier", "fetchers", "cache", "resolver", "page_store", "end_to_end"} <= set(lat)
    assert lat["fetchers"]["p50"] == pytest.approx(250.0)
    assert data["latency_source"] == "measured per URL"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--warmup", "50"], "--warmup: 50"),
        (["--engine", "request", "--max-urls", "1000"], "--max-urls"),
    ],
)
def test_refusals_are_usage_errors(args: list[str], words: str) -> None:
    """A warm-up past the end, or a request-engine run over the URL budget: exit 2 with a
    message that says how to proceed."""
    result = runner.invoke(app, ["run", str(REFERENCE), *args])
    assert result.exit_code == 2, result.output
    assert words in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("service", "words"),
    [
        ("{dist: lognormal, mean_ms: 20}", "needs cv > 0"),
        ("{dist: exponential, mean_ms: 20, cv: 2}", "whose cv is 1"),
        ("{dist: gamma, mean_ms: 20}", "'deterministic', 'exponential' or 'lognormal'"),
    ],
)
def test_service_time_validation(tmp_path: Path, service: str, words: str) -> None:
    """A lognormal needs its cv; an exponential has cv 1; unknown distributions are named."""
    path = tmp_path / "d.yaml"
    path.write_text(
        REFERENCE.read_text().replace("{rps: 25000}", f"{{rps: 25000, service: {service}}}")
    )
    with pytest.raises(gym.GymError) as info:
        gym.load_design(path)
    (problem,) = info.value.problems
    assert problem.field is not None and problem.field.startswith("page_store.service")
    assert words in problem.message


@pytest.mark.parametrize(
    ("path", "scenario_path"),
    [
        ("designs/reference.yaml", "scenarios/crawler-chaos.yaml"),
        ("designs/levers/seen-set-4.yaml", "scenarios/levers/deep-crawl.yaml"),
        ("designs/systems/url-shortener.yaml", "scenarios/systems/url-shortener.yaml"),
    ],
)
def test_end_to_end_counts_the_served_urls(path: str, scenario_path: str) -> None:
    """With no warm-up, the flow engine's end-to-end figure covers exactly the URLs the run
    served, a crawler (the graph it compiles to, a seen set's skips and the links it finds
    included) as a graph design: the walkers' weights are scaled to them."""
    from tests.conftest import ROOT

    r = gym.simulate(ROOT / path, ROOT / scenario_path, seed=0)
    assert r.latency["end_to_end"].count == r.metrics.record.served_total


def test_a_slowed_store_takes_longer_in_the_flow_engine() -> None:
    """The store brownout slows the page store by 4 for 4 s: a write then takes 4 x 20 =
    80 ms. The flow engine stretches the store's service time as the request engine does
    (the crawler's own estimate once gave 20 ms throughout): its p99 is 80 ms, its p50 the
    20 ms of the 26 s at full speed, and its mean between them."""
    from tests.conftest import ROOT

    brownout = ROOT / "scenarios" / "levers" / "store-brownout.yaml"
    store = gym.simulate(REFERENCE, brownout, seed=0).latency["page_store"]
    assert (store.p50, store.p99) == (20.0, 80.0)
    assert 20.0 < store.mean < 80.0


def test_a_seen_set_lookup_takes_its_service_time() -> None:
    """A seen set (a lookup) is an Erlang loss station of 1 ms lookups: in the flow engine
    its row is its service time (the graph estimate gave a lookup no time before it
    carried the crawler), over the URLs it passed on: as in the request engine, one it
    skipped as seen leaves no sample (the freshness scenario skips most of them)."""
    from tests.conftest import ROOT

    fresh = ROOT / "scenarios" / "levers" / "freshness.yaml"
    r = gym.simulate(ROOT / "designs/levers/seen-set-4.yaml", fresh, seed=0)
    seen = r.latency["seen_set"]
    assert (seen.mean, seen.p99) == (1.0, 1.0)
    tally = r.metrics.record.components["seen_set"]
    skipped = sum(int(v.sum()) for v in tally.skipped.values())
    assert skipped > tally.processed.sum() / 2  # most lookups find a seen URL
    assert seen.count == tally.processed.sum() - skipped == tally.out.sum()
