"""Retries with backoff (issue 13): a lookup or write that fails at the resolver or the page
store waits and tries again; the retries come back as load, and a tight policy is a retry
storm. Figures by hand from the policy (docs/model.md, "Retries"), in both engines."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gym
from gym.models import Design, Scenario
from tests.conftest import ROOT

LEVERS = ROOT / "designs" / "levers"
BROWNOUT = ROOT / "scenarios" / "levers" / "store-brownout.yaml"
ENGINES = ("flow", "request")


def _design(**retries: Any) -> Design:
    return Design.model_validate(
        {
            "frontier": {"drain_rps": 30_000, "buffer": 80_000},
            "fetchers": {"replicas": 4, "rps_per_replica": 4_000},
            "cache": {"hit_ratio": 0.0},  # every page is written
            "page_store": {"rps": 2_000},
            **({"retries": retries} if retries else {}),
        }
    )


def _stall(at_s: float = 2.0, duration_s: float = 10.0) -> Scenario:
    """1,000 evenly spaced writes/s into a store of 2,000/s that is down for 1 s."""
    return Scenario.model_validate(
        {
            "duration_s": duration_s,
            "base_rps": 1_000,
            "arrivals": "deterministic",
            "resolver": {"rps": 100_000},
            "faults": [{"kind": "stall", "at_s": at_s, "for_s": 1, "target": "page_store"}],
        }
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_retries_come_back_after_their_waits_by_hand(engine: str) -> None:
    """The store is down from 2 to 3 s: without retries its 1,000 writes fail. With 3 tries
    and a fixed 0.5 s wait (no jitter), the writes of 2.0-2.5 s come back at 2.5-3.0 s,
    fail again (still down) and come back at 3.0-3.5 s; those of 2.5-3.0 s come back at
    3.0-3.5 s: 1,500 retries arrive from 2.4 to 3.5 s and none before; at 3.0-3.5 s the
    store is offered 500 fresh + 1,000 retried writes in half a second, 3,000/s on 2,000/s,
    so the window from 3 s is demand 1,000 + 1,000 + the retries of its own overload, over
    2,000: above 1. Only last tries fail: far fewer than 1,000."""
    none = gym.simulate(_design(), _stall(), engine=engine).metrics
    assert none.failed_by_cause["store_unavailable"] == 1_000
    m = gym.simulate(
        _design(attempts=3, backoff_s=0.5, multiplier=1, jitter=0), _stall(), engine=engine
    ).metrics
    store = m.record.components["page_store"]
    retries = store.extra["retries"]
    assert int(retries[:240].sum()) == 0
    assert int(retries[240:350].sum()) == 1_500
    assert m.components["page_store"].saturation[3] > 1.0
    assert m.failed < 300
    assert int(store.extra["retried"].sum()) == int(retries.sum())  # all came back by 10 s


@pytest.mark.parametrize("engine", ENGINES)
def test_retries_waiting_at_the_end_are_in_flight(engine: str) -> None:
    """A stall in the last second with a 5 s wait: the failed writes are still waiting to
    be tried again when the run ends, so they are in flight, not failed (conservation
    holds: the engines check it on every run)."""
    m = gym.simulate(
        _design(attempts=2, backoff_s=5, jitter=0), _stall(at_s=9.0), engine=engine
    ).metrics
    assert m.failed == 0
    waiting = int(m.record.components["page_store"].extra["retried"].sum())
    assert waiting == 1_000
    assert m.record.in_flight_end["page_store"] == waiting


@pytest.mark.parametrize("engine", ENGINES)
def test_backoff_recovers_a_brownout_and_tight_retries_storm(engine: str) -> None:
    """scenarios/levers/store-brownout.yaml (20 s of it for the request engine): for 4 s
    the store takes 250 of the 480 writes/s (1,000/s slowed down 4 times). Without retries
    about 230 x 4 = 920 writes are lost and the store's demand peaks at 480 / 250 = 1.92.
    Retrying every 50 ms up to 8 times (400 ms in all, inside the brownout) multiplies the
    store's demand (over 5 times its capacity: a retry storm) and still loses most of
    them; waiting 1, 2, 4, 8 s with jitter carries the retries past the brownout and loses
    under a tenth of that, with under a third of the storm's retries."""
    sc = gym.load_scenario(BROWNOUT)
    if engine == "request":
        sc = sc.model_copy(update={"duration_s": 20.0})
    runs = {
        name: gym.simulate(LEVERS / f"retry-{name}.yaml", sc, engine=engine).metrics
        for name in ("none", "storm", "backoff")
    }
    peak = {name: m.components["page_store"].peak.value for name, m in runs.items()}
    assert runs["none"].failed > 800
    assert peak["none"] == pytest.approx(480 / 250, rel=0.02)
    assert peak["storm"] > 5.0
    assert 10 * runs["backoff"].failed < runs["storm"].failed
    assert runs["storm"].failed > 0.75 * runs["none"].failed
    retries = {
        name: int(m.record.components["page_store"].extra["retries"].sum())
        for name, m in runs.items()
        if name != "none"
    }
    assert retries["storm"] > 3 * retries["backoff"]
    assert runs["backoff"].availability is not None and runs["backoff"].availability > 0.999


def test_a_store_behind_the_async_writer_gets_no_retries() -> None:
    """The writer holds what the store cannot take, so the store fails no write to retry;
    the resolver keeps the policy."""
    from gym.system import crawler

    d = _design(attempts=3, backoff_s=0.5).model_copy(
        update={
            "async_writer": gym.load_design(ROOT / "designs" / "writer-lossless.yaml").async_writer
        }
    )
    graph = crawler.topology(d, _stall())
    assert graph.node("page_store").retry is None
    assert graph.node("resolver").retry is not None
    m = gym.simulate(d, _stall()).metrics
    assert "retries" not in m.record.components["page_store"].extra
    assert np.all(m.record.components["resolver"].extra["retries"] == 0)


def test_a_wait_shorter_than_a_tick_is_named() -> None:
    """The flow engine waits whole ticks, at least one: a 5 ms wait on 10 ms ticks runs as
    10 ms, and the run says so; the request engine waits the 5 ms."""
    from gym.analysis.rounding import warnings

    sc = gym.load_scenario(BROWNOUT)
    short = _design(attempts=3, backoff_s=0.005, jitter=0)
    lines = warnings(short, sc, engine="flow", tick_ms=10)
    assert any(line.startswith("retries.backoff_s") and "5 ms" in line for line in lines)
    assert not any("retries" in line for line in warnings(short, sc, engine="request", tick_ms=10))
    assert not any("retries" in line for line in warnings(short, sc, engine="flow", tick_ms=1))


@pytest.mark.parametrize("engine", ENGINES)
def test_the_resolver_retries_too(engine: str) -> None:
    """A resolver of 600 lookups/s (20 ms: 12 slots) fed 480/s, slowed 4 times for 2 s:
    150/s of capacity against 480, so about 660 lookups fail without retries; with waits of
    1, 2 and 4 s the retries land after the slowdown and nearly all of them resolve."""
    sc = Scenario.model_validate(
        {
            "duration_s": 10,
            "base_rps": 480,
            "resolver": {"rps": 600},
            "faults": [
                {"kind": "slowdown", "at_s": 3, "for_s": 2, "target": "resolver", "factor": 4}
            ],
        }
    )
    design = _design().model_copy(
        update={"page_store": _design().page_store.model_copy(update={"rps": 25_000})}
    )
    none = gym.simulate(design, sc, engine=engine).metrics
    lost = none.failed_by_cause["resolver_overload"]
    assert lost > 400
    retried = design.model_copy(update={"retries": _design(attempts=4, backoff_s=1).retries})
    m = gym.simulate(retried, sc, engine=engine).metrics
    assert m.failed_by_cause["resolver_overload"] < 0.1 * lost
    assert int(m.record.components["resolver"].extra["retries"].sum()) > lost


def test_each_knob_moves_the_loss_the_way_it_should() -> None:
    """On the brownout (flow engine), one setting at a time from 2 tries 0.5 s apart, no
    growth: more tries, a longer first wait and a larger multiplier each carry more
    retries past the 4 s brownout, so each loses fewer writes."""
    sc = gym.load_scenario(BROWNOUT)
    base = {"attempts": 2, "backoff_s": 0.5, "multiplier": 1, "jitter": 0.5}

    def lost(**change: Any) -> int:
        design = gym.load_design(LEVERS / "retry-none.yaml").model_copy(
            update={"retries": _design(**{**base, **change}).retries}
        )
        return gym.simulate(design, sc).metrics.failed

    assert lost(attempts=8) < lost(attempts=4) < lost()
    assert lost(backoff_s=2.0) < lost(backoff_s=1.0) < lost()
    assert lost(attempts=4, multiplier=4) < lost(attempts=4, multiplier=2) < lost(attempts=4)
