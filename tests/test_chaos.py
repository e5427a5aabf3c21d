"""The gym's promise on the crawler chaos scenario: the reference passes, the starter
fails for the right reasons, and every run conserves URLs exactly."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gym
from gym.system.crawler import CAUSES
from tests.conftest import CHAOS, REFERENCE, STARTER, design, scenario


def test_reference_passes(chaos_results: dict[str, Any]) -> None:
    """Every SLO holds for the reference design."""
    r = chaos_results["reference"]
    assert r.verdict == "pass", [c for c in r.checks if not c.passed]


def test_starter_fails_throughput_availability_saturation_not_cost(
    chaos_results: dict[str, Any],
) -> None:
    """The starter fails three SLOs, fits the cost ceiling (docs/specification.md section 5)."""
    r = chaos_results["starter"]
    passed = {c.name: c.passed for c in r.checks}
    assert passed == {
        "throughput_rps": False,
        "availability": False,
        "peak_saturation": False,
        "cost_units": True,
    }
    assert r.verdict == "fail"


def test_starter_explanation_names_the_surge_overflow_and_the_crash(
    chaos_results: dict[str, Any],
) -> None:
    """The reasons point at the frontier overflow during the surge and the fetcher crash."""
    r = chaos_results["starter"]
    overflow = next(e for e in r.explanations if e.cause == "frontier_overflow")
    assert overflow.component == "frontier"
    assert any("deep-crawl surge" in line for line in overflow.details)
    assert any("fetchers crash" in line for line in overflow.details)
    assert overflow.urls == r.metrics.failed_by_cause["frontier_overflow"]
    crash = next(e for e in r.explanations if e.cause == "crash_loss")
    assert crash.component == "fetchers" and crash.at_s == 12.0
    saturation = next(e for e in r.explanations if e.slo == "peak_saturation")
    assert saturation.component == r.metrics.peak.component


def test_reference_loses_only_to_the_stall_and_the_crash(
    chaos_results: dict[str, Any],
) -> None:
    """The reference's only losses: store writes during the stall and in-flight fetches
    on the crashed replica (about 9,000/s x 0.25 s / 4 = 562)."""
    m = chaos_results["reference"].metrics
    lost = {c: n for c, n in m.failed_by_cause.items() if n}
    assert set(lost) == {"store_unavailable", "crash_loss"}
    assert 450 < lost["crash_loss"] < 680
    # Misses during the 10 s stall: about 6,000/s x 0.08 x 10 s = 4,800.
    assert 4_300 < lost["store_unavailable"] < 5_300


@pytest.mark.parametrize("path", [REFERENCE, STARTER])
@pytest.mark.parametrize("seed", [0, 1, 7, 12345])
def test_conservation_is_exact(path: Any, seed: int) -> None:
    """offered = served + failed + in flight at the end, in integers, for any seed."""
    m = gym.simulate(path, CHAOS, seed=seed).metrics
    assert m.offered == m.served + m.failed + m.in_flight_end


@pytest.mark.parametrize("on_crash", ["fail", "requeue"])
@pytest.mark.parametrize("path", [REFERENCE, STARTER])
def test_each_component_conserves_every_tick(path: Any, on_crash: str) -> None:
    """Per tick: what arrives plus what was held = passed on + served + failed + held."""
    d = gym.load_design(path)
    d = d.model_copy(update={"fetchers": d.fetchers.model_copy(update={"on_crash": on_crash})})
    rec = gym.simulate(d, CHAOS, seed=3).metrics.record
    for name, t in rec.components.items():
        failed = sum((a for a in t.failed.values()), np.zeros_like(t.arrived))
        held_before = np.concatenate([[0], t.backlog[:-1]])
        inflow = t.arrived + held_before
        skipped = sum((a for a in t.skipped.values()), np.zeros_like(t.arrived))
        outflow = t.out + t.served + failed + skipped + t.backlog
        if name == "frontier":  # a crash's requeued fetches re-enter the frontier
            inflow = inflow + t.extra["requeued"]
        if name == "fetchers":  # ... and leave the fleet without failing
            outflow = outflow + t.extra["requeued"]
        assert (inflow == outflow).all(), name


def test_same_seed_same_result_different_seed_different_result() -> None:
    """Determinism without global random state."""
    a = gym.simulate(REFERENCE, CHAOS, seed=5).to_dict()
    b = gym.simulate(REFERENCE, CHAOS, seed=5).to_dict()
    c = gym.simulate(REFERENCE, CHAOS, seed=6).to_dict()
    assert a == b
    assert a["metrics"] != c["metrics"]


def test_common_random_numbers_across_designs() -> None:
    """Arrivals depend only on the seed and the scenario, not on the design."""
    a = gym.simulate(REFERENCE, CHAOS, seed=9).metrics.record.offered
    b = gym.simulate(STARTER, CHAOS, seed=9).metrics.record.offered
    assert (a == b).all()


def test_no_slos_passes_vacuously() -> None:
    """A minimal scenario with no SLOs has no checks and the verdict pass."""
    r = gym.simulate(design(), scenario(), seed=0)
    assert r.checks == [] and r.verdict == "pass"


def test_json_has_every_key_of_the_contract(chaos_results: dict[str, Any]) -> None:
    """docs/specification.md section 7's keys, with the failure causes all present."""
    j = chaos_results["starter"].to_dict()
    assert {
        "design",
        "scenario",
        "engine",
        "seed",
        "verdict",
        "slos",
        "metrics",
        "failed_by_cause",
        "components",
    } <= set(j)
    assert set(j["metrics"]) >= {
        "offered",
        "served",
        "failed",
        "in_flight_end",
        "throughput_rps",
        "availability",
        "peak_saturation",
        "peak_saturation_component",
        "peak_saturation_at_s",
        "cost_units",
    }
    assert set(j["failed_by_cause"]) == set(CAUSES)
    assert set(j["components"]) == {"frontier", "fetchers", "cache", "resolver", "page_store"}
    for comp in j["components"].values():
        assert {"units", "peak_saturation"} <= set(comp)
    assert [s["name"] for s in j["slos"]] == [
        "throughput_rps",
        "availability",
        "peak_saturation",
        "cost_units",
    ]
    assert j["verdict"] == "fail" and j["engine"] == "flow"


#: Every array a flow component keeps per tick: the counts in the run record and the
#: stream descriptors a loss station downstream builds its Erlang loss from.
FLOW_ARRAYS = (
    "capacity", "rates", "arrived", "processed", "out", "served", "backlog",
    "dispersion", "jitter", "expected", "pace", "depth", "periodic",
)  # fmt: skip

_SURGE_AND_FAULTS: dict[str, Any] = {
    "load": [
        {"at_s": 0, "multiplier": 1.0},
        {"at_s": 2, "multiplier": 2.5},
        {"at_s": 5, "multiplier": 0.2},  # the frontier empties
        {"at_s": 7, "multiplier": 1.5},
    ],
    "faults": [
        {"kind": "crash", "at_s": 3, "for_s": 2, "target": "fetchers", "replicas": 2},
        {"kind": "slowdown", "at_s": 2.5, "for_s": 3, "target": "resolver", "factor": 3},
        {"kind": "slowdown", "at_s": 6, "for_s": 1.5, "target": "page_store", "factor": 2},
        {"kind": "stall", "at_s": 8, "for_s": 0.5, "target": "cache"},
        {"kind": "slowdown", "at_s": 4, "for_s": 2, "target": "frontier", "factor": 2},
    ],
    "resolver": {"rps": 2_000},
}

STRIDE_CASES: dict[str, tuple[Any, Any]] = {
    # Poisson arrivals on the shipped designs and the chaos scenario.
    "reference": (REFERENCE, CHAOS),
    "starter": (STARTER, CHAOS),
    # Evenly spaced arrivals, a backed-up and then empty frontier, every kind of fault,
    # fixed fetch and write times: periodic streams and the burst bound.
    "deterministic": (
        lambda: design(
            frontier={"drain_rps": 6_000, "buffer": 20_000},
            fetchers={"replicas": 3, "rps_per_replica": 1_000, "on_crash": "requeue"},
            cache={"hit_ratio": 0.5},
            page_store={"rps": 1_500},
        ),
        lambda: scenario(base_rps=2_000, duration_s=10, **_SURGE_AND_FAULTS),
    ),
    # Random fetch and write times (jitter), a long write service and the async writer.
    "random-times-writer": (
        lambda: design(
            frontier={"drain_rps": 6_000, "buffer": 20_000},
            fetchers={
                "replicas": 3,
                "rps_per_replica": 1_000,
                "service": {"dist": "lognormal", "mean_ms": 200, "cv": 0.3},
            },
            cache={"hit_ratio": 0.3},
            page_store={"rps": 1_200, "service": {"dist": "exponential", "mean_ms": 300}},
            async_writer={"buffer": 3_000},
        ),
        lambda: scenario(base_rps=2_000, arrivals="poisson", **_SURGE_AND_FAULTS),
    ),
    # A graph: a three-way split, two caches and a store merging into a queue and fleet.
    "graph-split-merge": (
        lambda: gym.GraphDesign.model_validate(
            {
                "graph": {
                    "nodes": {
                        "src": {"kind": "source"},
                        "ca": {"kind": "cache", "hit_ratio": 0.5, "rps": 900},
                        "cb": {"kind": "cache", "hit_ratio": 0.2, "rps": 600},
                        "s": {"kind": "store", "rps": 400},
                        "q": {"kind": "queue", "drain_rps": 700, "buffer": 500},
                        "f": {"kind": "fleet", "replicas": 2, "rps_per_replica": 400},
                        "db": {"kind": "store", "rps": 600},
                    },
                    "edges": [
                        {"from": "src", "to": "ca", "share": 0.5},
                        {"from": "src", "to": "cb", "share": 0.3},
                        {"from": "src", "to": "s", "share": 0.2},
                        {"from": "ca", "to": "q"},
                        {"from": "cb", "to": "q"},
                        {"from": "s", "to": "q"},
                        {"from": "q", "to": "f"},
                        {"from": "f", "to": "db"},
                    ],
                }
            }
        ),
        lambda: gym.Scenario.model_validate(
            {
                "system": "graph",
                "duration_s": 8,
                "base_rps": 1_500,
                "load": [{"at_s": 0, "multiplier": 1}, {"at_s": 3, "multiplier": 2}],
                "faults": [
                    {"kind": "crash", "at_s": 2, "for_s": 3, "target": "f", "replicas": 1},
                    {"kind": "slowdown", "at_s": 4, "for_s": 2, "target": "cb", "factor": 3},
                ],
            }
        ),
    ),
    # A feedback loop: a share of the fleet's jobs back to the queue 50 ms later, a crash
    # and a surge that overflow the queue (the engine advances in strides of 5 ticks).
    "graph-feedback-loop": (
        lambda: gym.GraphDesign.model_validate(
            {
                "graph": {
                    "nodes": {
                        "src": {"kind": "source"},
                        "q": {"kind": "queue", "drain_rps": 1_500, "buffer": 300},
                        "f": {"kind": "fleet", "replicas": 2, "rps_per_replica": 800},
                        "db": {"kind": "store", "rps": 1_500},
                    },
                    "edges": [
                        {"from": "src", "to": "q"},
                        {"from": "q", "to": "f"},
                        {"from": "f", "to": "db", "share": 0.7},
                        {"from": "f", "to": "q", "share": 0.3, "delay_s": 0.05},
                    ],
                }
            }
        ),
        lambda: gym.Scenario.model_validate(
            {
                "system": "graph",
                "duration_s": 8,
                "base_rps": 900,
                "load": [{"at_s": 0, "multiplier": 1}, {"at_s": 3, "multiplier": 1.6}],
                "faults": [{"kind": "crash", "at_s": 2, "for_s": 3, "target": "f"}],
            }
        ),
    ),
    # A queue and a fleet each allowing under two URLs a tick (145/s and 150/s): the
    # quotas' banks, across a crash of one replica, then of all, and a queue slowdown
    # and stall.
    "sub-tick-quotas": (
        lambda: gym.GraphDesign.model_validate(
            {
                "graph": {
                    "nodes": {
                        "src": {"kind": "source"},
                        "q": {"kind": "queue", "drain_rps": 145, "buffer": 1_000},
                        "f": {
                            "kind": "fleet",
                            "replicas": 3,
                            "rps_per_replica": 50,
                            "service": {"dist": "deterministic", "mean_ms": 20},
                        },
                    },
                    "edges": [{"from": "src", "to": "q"}, {"from": "q", "to": "f"}],
                }
            }
        ),
        lambda: gym.Scenario.model_validate(
            {
                "system": "graph",
                "duration_s": 10,
                "base_rps": 200,
                "faults": [
                    {"kind": "crash", "at_s": 1, "for_s": 2, "target": "f", "replicas": 1},
                    {"kind": "slowdown", "at_s": 4, "for_s": 1, "target": "q", "factor": 3},
                    {"kind": "stall", "at_s": 5.5, "for_s": 0.5, "target": "q"},
                    {"kind": "crash", "at_s": 7, "for_s": 0.5, "target": "f", "replicas": 3},
                ],
            }
        ),
    ),
    # Random services walked one by one (lognormal, 20 ticks), slowed, stalled, overloaded.
    "graph-drawn-walk": (
        lambda: gym.GraphDesign.model_validate(
            {
                "graph": {
                    "nodes": {
                        "src": {"kind": "source"},
                        "kv": {
                            "kind": "store",
                            "rps": 400,
                            "service": {"dist": "lognormal", "mean_ms": 200, "cv": 1.5},
                        },
                    },
                    "edges": [{"from": "src", "to": "kv"}],
                }
            }
        ),
        lambda: gym.Scenario.model_validate(
            {
                "system": "graph",
                "duration_s": 10,
                "base_rps": 350,
                "arrivals": "poisson",
                "faults": [
                    {"kind": "slowdown", "at_s": 2, "for_s": 1, "target": "kv", "factor": 2},
                    {"kind": "stall", "at_s": 5, "for_s": 0.5, "target": "kv"},
                ],
            }
        ),
    ),
    # The station filling up: writes far longer than the run.
    "fill-up": (
        lambda: design(
            cache={"hit_ratio": 0.0},
            frontier={"drain_rps": 100_000, "buffer": 10**7},
            page_store={"rps": 1 / 6, "service": {"mean_ms": 600_000}},
        ),
        lambda: scenario(duration_s=10, base_rps=50, arrivals="poisson"),
    ),
}


def _flow_arrays(
    monkeypatch: pytest.MonkeyPatch, d: Any, sc: Any, step: int | None
) -> dict[str, dict[str, np.ndarray]]:
    """Every per-tick array of every flow component after one run, by component."""
    from gym.sim.flow import engine as flow
    from gym.sim.timeline import Timeline
    from gym.system import compiled

    arrays = {}
    collect = flow.RunRecord.collect

    def spy(**kwargs: Any) -> Any:
        # Copied as the record is made: the engine unlinks the components after a run.
        for c in kwargs["components"]:
            got = {f: np.array(getattr(c, f)) for f in FLOW_ARRAYS}
            got |= {f"failed {cause}": np.array(v) for cause, v in c.failed.items()}
            if hasattr(c, "_admitted"):
                got["expected admissions"] = np.array(c._admitted)
            arrays[c.name] = got
        return collect(**kwargs)

    monkeypatch.setattr(flow.RunRecord, "collect", staticmethod(spy))
    flow.run(
        sc,
        seed=3,
        timeline=Timeline(sc, 10),
        topology=compiled.system_topology(d, sc),
        step=step,
    )
    monkeypatch.undo()
    return arrays


@pytest.mark.parametrize("case", list(STRIDE_CASES))
def test_advancing_in_big_steps_equals_advancing_tick_by_tick(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Components advance over whole intervals between events; ``step=1`` also advances
    them every tick. Every per-tick array of every component, the counts and the stream
    descriptors (dispersion, jitter, expected counts, pace, bucket depth, periodicity) and
    a loss station's expected admissions, must come out the same: counts exactly, floats
    to 1e-9 (a convolution over a longer history adds in another order, or by the FFT:
    7e-15 apart on 21 expected URLs)."""
    d, sc = STRIDE_CASES[case]
    d = gym.load_design(d) if not callable(d) else d()
    sc = gym.load_scenario(sc) if not callable(sc) else sc()
    coarse = _flow_arrays(monkeypatch, d, sc, None)
    fine = _flow_arrays(monkeypatch, d, sc, 1)
    assert coarse.keys() == fine.keys()
    for name, arrays in coarse.items():
        for field, a in arrays.items():
            b = fine[name][field]
            if a.dtype.kind == "f":
                assert np.allclose(a, b, rtol=1e-9, atol=1e-9, equal_nan=True), (name, field)
            else:
                assert np.array_equal(a, b), (name, field)
    # The run did something: URLs were lost somewhere.
    lost = [v.sum() for c in coarse.values() for k, v in c.items() if k.startswith("failed")]
    assert sum(lost) > 0
