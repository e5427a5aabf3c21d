"""The two engines agree where the model says they should (same seed, same traffic).

Agreement bounds (from the issue): availability within 0.5 percentage points,
throughput within 1%, peak saturation within 0.03. They must differ in latency tails
near saturation (docs/model.md says why), which is not asserted here.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

import gym
from tests.conftest import CHAOS, REFERENCE, ROOT, STARTER, variant

DESIGNS = {
    "reference": lambda: gym.load_design(REFERENCE),
    "starter": lambda: gym.load_design(STARTER),
    "reference+writer": lambda: variant(REFERENCE, async_writer={"buffer": 60_000}),
    "three-fetchers": lambda: variant(REFERENCE, **{"fetchers.replicas": 3}),
    "starter+requeue": lambda: variant(STARTER, **{"fetchers.on_crash": "requeue"}),
    "politeness-bound": lambda: gym.load_design(ROOT / "designs" / "politeness-bound.yaml"),
    "writer-lossless": lambda: gym.load_design(ROOT / "designs" / "writer-lossless.yaml"),
    # Found by the property test below: the request engine's writer flushed 2,900/s after
    # the stall against the flow engine's 3,351/s, because a store write ending "at" a tick
    # (an ulp later, from summed tick lengths) still held its slot.
    "writer-after-stall": lambda: variant(
        REFERENCE,
        **{
            "fetchers.replicas": 2,
            "cache.hit_ratio": 0.5,
            "frontier.buffer": 5_000,
            "page_store.rps": 3_951,
            "async_writer": {"buffer": 60_000},
        },
    ),
    # Found by the property test when the flow engine's loss stations took rate x tick per
    # tick: near capacity a station with slots loses more (Erlang loss), 16,765 writes at
    # the store against 15,941, and availability differed by 0.57 points.
    "two-stations-near-capacity": lambda: variant(
        REFERENCE,
        **{
            "fetchers.replicas": 4,
            "cache.hit_ratio": 0.5922771000307467,
            "frontier.buffer": 102_923,
            "page_store.rps": 3_011,
            "async_writer": None,
        },
    ),
    # No cache: every URL meets the resolver (100 slots) at 1.2-2.4x its capacity. With a
    # per-tick quota the flow engine lost 127,023 there against 130,445 (0.78 points).
    "content-dedup": lambda: gym.load_design(ROOT / "designs" / "content-dedup.yaml"),
    # Found when loss became Erlang's: two replicas always backed up start fetches evenly
    # paced, a stream smoother than Poisson that loses less than Erlang B says (store
    # 22,066 against 23,175 before the flow engine allowed for it).
    "paced-misses": lambda: variant(
        REFERENCE,
        **{
            "fetchers.replicas": 2,
            "cache.hit_ratio": 0.5,
            "frontier.buffer": 5_000,
            "page_store.rps": 2_000,
        },
    ),
}


@pytest.fixture(scope="module")
def both_engines() -> dict[str, tuple[gym.Result, gym.Result]]:
    return {name: _both_engines(make()) for name, make in DESIGNS.items()}


@pytest.mark.parametrize("name", list(DESIGNS))
def test_engines_agree(both_engines: dict[str, tuple[gym.Result, gym.Result]], name: str) -> None:
    """Availability within 0.5 points, throughput within 1%, peak saturation within 0.03."""
    flow, req = both_engines[name]
    _assert_agree(flow, req)
    assert flow.verdict == req.verdict


def test_reference_passes_and_starter_fails_on_the_request_engine(
    both_engines: dict[str, tuple[gym.Result, gym.Result]],
) -> None:
    """The gym's promise holds on both engines."""
    assert both_engines["reference"][1].verdict == "pass"
    assert both_engines["starter"][1].verdict == "fail"


def test_both_engines_fill_the_same_latency_fields(
    both_engines: dict[str, tuple[gym.Result, gym.Result]],
) -> None:
    """latency_ms has the same components and statistics whichever engine ran; the frontier
    wait of the backed-up starter agrees within 10% in the mean."""
    flow, req = both_engines["starter"]
    fj, rj = flow.to_dict()["latency_ms"], req.to_dict()["latency_ms"]
    assert set(fj) == set(rj) - {"async_writer"}
    for stats in (*fj.values(), *rj.values()):
        assert set(stats) == {"mean", "p50", "p95", "p99", "count"}
        assert stats["p50"] <= stats["p95"] <= stats["p99"]
    assert fj["frontier"]["mean"] == pytest.approx(rj["frontier"]["mean"], rel=0.10)
    assert rj["fetchers"]["mean"] == pytest.approx(250.0)


def _both_engines(d: gym.Design) -> tuple[gym.Result, gym.Result]:
    """``d`` under the chaos scenario, seed 0: (flow, request)."""
    sc = gym.load_scenario(CHAOS)
    return gym.simulate(d, sc, seed=0), gym.simulate(d, sc, seed=0, engine="request")


def _assert_agree(flow: gym.Result, req: gym.Result) -> None:
    fm, rm = flow.metrics, req.metrics
    assert fm.offered == rm.offered  # the same traffic
    assert fm.availability is not None and rm.availability is not None
    assert abs(fm.availability - rm.availability) <= 0.005, (fm.availability, rm.availability)
    assert rm.throughput_rps == pytest.approx(fm.throughput_rps, rel=0.01)
    assert abs(fm.peak_saturation - rm.peak_saturation) <= 0.03


@settings(
    max_examples=5,
    deadline=None,
    # The same designs on every machine (a random draw must not make the suite flaky), and
    # no shrinking: a shrink re-runs two full chaos simulations
    # per step, for minutes. A failure prints the design it drew; pin it in DESIGNS above.
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
)
@given(
    replicas=st.integers(2, 6),
    hit=st.floats(0.5, 0.99),
    buffer=st.integers(5_000, 200_000),
    store=st.integers(2_000, 25_000),
    writer=st.booleans(),
    requeue=st.booleans(),
)
@example(replicas=2, hit=0.7, buffer=200_000, store=3_000, writer=False, requeue=False)
def test_engines_agree_on_random_designs(
    replicas: int, hit: float, buffer: int, store: int, writer: bool, requeue: bool
) -> None:
    """The same bounds over designs nobody tuned: from comfortable to overloaded stores,
    small and large frontiers, with and without the writer and crash requeueing."""
    d = variant(
        REFERENCE,
        **{
            "fetchers.replicas": replicas,
            "fetchers.on_crash": "requeue" if requeue else "fail",
            "cache.hit_ratio": hit,
            "frontier.buffer": buffer,
            "page_store.rps": store,
            "async_writer": {"buffer": 60_000} if writer else None,
        },
    )
    _assert_agree(*_both_engines(d))
