"""Where the engines' grid changes an input by more than 5%, the result says so
(``Result.warnings``, ``warnings`` in JSON), with the figure."""

from __future__ import annotations

from typing import Any

import pytest

import gym
from gym.analysis.rounding import warnings
from gym.models import AsyncWriterConfig
from tests.conftest import REFERENCE, ROOT, design, scenario, variant


@pytest.mark.parametrize(
    ("tick_ms", "expected"),
    [
        (10, None),  # 250 ms = 25 ticks exactly
        (100, "250 ms runs as 300 ms on 100 ms ticks (+20%)"),  # round(2.5) -> 3 ticks
        (1000, "250 ms runs as 1000 ms on 1000 ms ticks (+300%)"),  # at least one tick
    ],
)
def test_flow_fetch_time_rounded_to_ticks(tick_ms: int, expected: str | None) -> None:
    result = gym.simulate(REFERENCE, tick_ms=tick_ms)
    fetch = [w for w in result.warnings if w.startswith("fetchers.service.mean_ms")]
    if expected is None:
        assert fetch == []
    else:
        assert len(fetch) == 1 and expected in fetch[0]
        # Ticks that keep 250 ms within 5%: 250 (1 tick), 125 (2), 50 (5).
        assert "--tick-ms 250, 125 or 50" in fetch[0]
        assert result.to_json()["warnings"] == list(result.warnings)


def test_request_engine_slots_rounded() -> None:
    """A store of 30 writes/s at 20 ms is 0.6 slots; one slot serves 1 / 20 ms = 50/s."""
    d = design(page_store={"rps": 30})
    out = warnings(d, scenario(), engine="request", tick_ms=10)
    store = [w for w in out if w.startswith("page_store.rps")]
    assert len(store) == 1
    assert "= 1 concurrent slot (0.60 exactly)" in store[0] and "50/s, not 30/s (+67%)" in store[0]
    # The flow engine's loss stations use the same slots (Erlang loss), so it warns too;
    # behind the async writer its store takes what the writer meters per tick: no warning.
    flow = [w for w in warnings(d, scenario(), engine="flow", tick_ms=10) if "slot" in w]
    assert flow == [w.replace("the request engine gives", "both engines give") for w in store]
    metered = d.model_copy(update={"async_writer": AsyncWriterConfig(buffer=1_000)})
    assert not [w for w in warnings(metered, scenario(), engine="flow", tick_ms=10) if "slot" in w]


def test_fault_length_on_the_tick_grid() -> None:
    """A 0.25 s stall from 2.345 s on 100 ms ticks runs 2.4-2.6 s: 0.2 s, -20%. On 10 ms
    ticks it runs 2.35-2.6 s: 0.25 s, unchanged."""
    sc = scenario(faults=[{"at_s": 2.345, "kind": "stall", "target": "page_store", "for_s": 0.25}])
    d = design()
    coarse = [w for w in warnings(d, sc, engine="flow", tick_ms=100) if "faults[0]" in w]
    assert len(coarse) == 1 and "runs 2.4-2.6 s, 0.2 s (-20%)" in coarse[0]
    assert not [w for w in warnings(d, sc, engine="flow", tick_ms=10) if "faults[0]" in w]


def test_shipped_inputs_have_no_warnings_at_the_default_tick() -> None:
    for engine in ("flow", "request"):
        d = variant(REFERENCE)
        assert gym.simulate(d, engine=engine).warnings == ()


def test_cli_prints_the_warning_on_stderr_and_in_json() -> None:
    import json

    from typer.testing import CliRunner

    from gym.cli import app

    res = CliRunner().invoke(app, ["run", str(REFERENCE), "--tick-ms", "1000", "--json"])
    assert "warning: fetchers.service.mean_ms" in res.stderr
    assert "+300%" in json.loads(res.stdout)["warnings"][0]
    quiet = CliRunner().invoke(app, ["run", str(REFERENCE)])
    assert quiet.exit_code == 0 and "warning" not in quiet.stderr


def test_request_engine_writer_flushes_once_per_tick() -> None:
    """writer-lossless: a store of 25,000/s at 20 ms is 500 slots, the 0.85 ceiling 425.
    Flushing once per 100 ms tick drains at most 425 / 0.1 s = 4,250/s, against
    0.85 x 25,000 = 21,250/s (-80%). At 20 ms ticks or less, slots turn over no faster
    than the flusher comes back: no warning."""
    d = gym.load_design(ROOT / "designs" / "writer-lossless.yaml")
    sc = scenario()
    coarse = [w for w in warnings(d, sc, engine="request", tick_ms=100) if "async_writer" in w]
    assert len(coarse) == 1
    assert "at most 4,250/s, not flush_ceiling x page_store.rps = 21,250/s (-80%" in coarse[0]
    for tick in (10, 20):
        assert not [w for w in warnings(d, sc, engine="request", tick_ms=tick) if "async" in w]
    assert not [w for w in warnings(d, sc, engine="flow", tick_ms=100) if "async" in w]


def test_flow_fetch_latency_is_the_time_the_engine_held() -> None:
    """14 ms on 10 ms ticks is round(1.4) = 1 tick: the flow engine holds each fetch 10 ms
    and reports 10 ms (not the design's 14), as its warning says; 1,000 ms ticks hold a
    250 ms fetch 1,000 ms."""
    d = variant(REFERENCE, **{"fetchers.service": {"dist": "deterministic", "mean_ms": 14}})
    r = gym.simulate(d, scenario())
    assert r.latency["fetchers"].mean == 10.0
    assert any("14 ms runs as 10 ms" in w for w in r.warnings)
    coarse = gym.simulate(REFERENCE, scenario(), tick_ms=1000)
    assert coarse.latency["fetchers"].mean == 1000.0


def test_duration_off_the_grid_is_counted_as_run() -> None:
    """A 10.5 s run on 1,000 ms ticks runs 11 ticks: offered, throughput and the JSON's
    duration are over 11 s, and the result says so. With deterministic arrivals of
    1,000/s: 11,000 offered."""
    sc = scenario(duration_s=10.5)
    r = gym.simulate(design(), sc, tick_ms=1000)
    assert r.metrics.offered == 11_000 and r.metrics.duration_s == 11.0
    assert r.metrics.throughput_rps == r.metrics.served / 11.0
    assert any(w.startswith("duration_s: 10.5 s") for w in r.warnings)
    assert gym.simulate(design(), sc, tick_ms=10).warnings == ()


def test_sweep_passes_max_urls_to_every_run(monkeypatch: Any) -> None:
    """`sweep --engine request --max-urls N` allows each run N URLs too (it used the default
    2,000,000 per run, so a long scenario was refused after the sweep's own check
    passed)."""
    from gym.explore import sweep

    seen: list[int] = []
    real = sweep.tasks_for

    def spy(*a: Any, **k: Any) -> Any:
        seen.append(k["max_urls"])
        return real(*a, **k)

    monkeypatch.setattr(sweep, "tasks_for", spy)
    sc = scenario(duration_s=1)
    points = sweep.grid(REFERENCE, ["fetchers.replicas=4"])
    sweep.run(points, sc, runs=1, engine="request", max_urls=10_000_000)
    assert seen == [10_000_000]


def test_sweep_rows_carry_their_warnings() -> None:
    """A point whose fetch time the tick grid changes (14 ms runs as 10 ms) says so in its
    row (``warnings``) and once on stderr; a point it does not change has no such key."""
    from typer.testing import CliRunner

    from gym.cli import app
    from gym.explore import sweep

    sc = scenario(duration_s=2)
    points = sweep.grid(REFERENCE, ["fetchers.service.mean_ms=14,250"])
    rows = sweep.run(points, sc)
    assert "14 ms runs as 10 ms" in rows[0]["warnings"] and "warnings" not in rows[1]
    res = CliRunner().invoke(
        app, ["sweep", str(REFERENCE), "--vary", "fetchers.service.mean_ms=14,250", "--json"]
    )
    assert res.stderr.count("warning: fetchers.service.mean_ms") == 1


def test_writer_flush_with_random_write_times() -> None:
    """Exponential 20 ms writes: of the 425 slots the writer fills at a tick's start, a share
    E[min(S, 10 ms)] / E[S] = 1 - exp(-1/2) = 39.3% free within the 10 ms tick and wait for
    the next, so it drains at most 425 x 0.393 / 0.01 s = 16,722/s against 0.85 x 25,000;
    only ticks of 2 ms or less (1 - exp(-0.1)) / 0.1 = 95.2% come within 5%."""
    d = variant(
        REFERENCE,
        **{
            "page_store.service": {"dist": "exponential", "mean_ms": 20},
            "async_writer": {"buffer": 60_000},
        },
    )
    (flush,) = [w for w in warnings(d, scenario(), engine="request", tick_ms=10) if "flush" in w]
    assert "drains at most 16,722/s" in flush and "-21%" in flush
    assert "use --tick-ms 2 or less" in flush
    assert not [w for w in warnings(d, scenario(), engine="request", tick_ms=2) if "flush" in w]
