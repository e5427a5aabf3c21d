"""Latency: what each engine reports, how warm-up cuts it, and the flow engine's estimate."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import gym
from gym.cli import app
from gym.latency import LatencyStats, _fifo_wait_ms
from tests.conftest import CHAOS, REFERENCE, design, scenario

runner = CliRunner()


def test_fifo_wait_by_hand() -> None:
    """4 URLs enter in tick 0, one leaves per tick: the middle one (position 2) leaves in
    tick 1, so the tick's wait is 1 tick = 10 ms; the URL entering in tick 3 leaves in
    tick 3 (0 ms); the one entering in tick 4 never leaves and is marked as still queued."""
    wait, gone = _fifo_wait_ms(np.array([4, 0, 0, 1, 1]), np.array([1, 1, 1, 2, 0]), 10)
    assert wait[0] == 10.0 and wait[3] == 0.0
    assert gone[0] and gone[3] and not gone[4]


def test_flow_wait_through_a_frontier_stall() -> None:
    """Deterministic 1,000/s; the frontier stalls t=2-3 s. URLs entering at t=2 s wait
    the whole second (100 ticks); after the stall 160/tick drain the 1,000 queued, so
    those entering in the stall's last tick wait 7 ticks (hand-computed FIFO positions)."""
    sc = scenario(faults=[{"kind": "stall", "at_s": 2, "for_s": 1, "target": "frontier"}])
    rec = gym.simulate(design(), sc, seed=0).metrics.record
    f = rec.components["frontier"]
    wait, _ = _fifo_wait_ms(f.arrived - f.failed["frontier_overflow"], f.processed, 10)
    assert wait[200] == 1000.0
    assert wait[299] == 70.0
    assert wait[100] == 0.0 and wait[500] == 0.0


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
        (["--warmup", "50"], "warmup_s"),
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
