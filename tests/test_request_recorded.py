"""The request engine gives, run for run, the results recorded before it was rewritten.

``tests/golden/request_topologies.json`` holds digests of graph designs' and of retry and
link-discovery crawlers' runs (every per-tick count of every component, the latency
samples as a multiset, the ``--json`` object), recorded with the engine of one SimPy
process per URL at 4ed3957 (``tests/golden/record_request.py``, whose module docstring
says how). The callback engine that replaced it must give the same digest for each: a
single count, sample or figure that moves fails its case. Two entries were recorded
again since, with the callback engine, on purpose: ``ingestion``, whose write buffer
flushes as its store's slots free, no longer once a tick (``tests/test_write_buffer.py``),
and ``ingestion-no-headroom``, whose consumers' replica back from its crash opens its
slots at uniform instants, no longer evenly spaced (:func:`gym.sim.grid.ramp_openings`).
The ``--json`` digests of the three graph designs that fail (the two ingestions, the
undersized URL shortener) were recorded again for issue 29, when their explanations came
to say what would keep the losses (a write buffer before a stalled store, capacity after
an overflowing queue): their per-tick and latency digests did not move. The undersized
URL shortener's once more in issue 29's review, when its kv store, fed by the cache's
misses, was no longer offered a write buffer (reads: the cache's hit ratio instead);
the two ingestions' once more when a graph fleet's crash advice came to name
``on_crash: requeue``. The same three once more for issue 30 (units by kind), when their
explanations came to count requests, not URLs (a graph design's unit): their per-tick and
latency digests did not move.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.golden.record_request import digest

RECORD = Path(__file__).parent / "golden" / "request_topologies.json"
WANT: dict[str, Any] = json.loads(RECORD.read_text())


def _case(key: str) -> tuple[str, str, int, int]:
    design, scenario, seed, tick = key.split(" / ")
    return design, scenario, int(seed.split()[1]), int(tick.split()[1])


def test_the_record_covers_graphs_retries_and_discovery() -> None:
    designs = {_case(k)[0] for k in WANT}
    assert any("systems/" in d for d in designs)
    assert any("retry" in d for d in designs)
    assert any("seen-set" in d for d in designs)


@pytest.mark.parametrize("key", sorted(WANT))
def test_the_run_is_as_recorded(key: str) -> None:
    got = digest(*_case(key))
    want = WANT[key]
    assert got["record_sha256"] == want["record_sha256"], "a per-tick count moved"
    assert got["latency_sha256"] == want["latency_sha256"], "a latency sample moved"
    assert got["json_sha256"] == want["json_sha256"], "a figure of the --json object moved"


def test_every_kind_has_a_request_rule_found_by_its_name() -> None:
    """The request engine maps a kind's name to its rule (a module per shipped kind); a
    kind with none is refused by name, and one registered from outside is found."""
    from gym.sim import request
    from gym.system import kinds

    for name in kinds.REGISTRY:
        assert callable(request.rule_for(name))
    with pytest.raises(KeyError, match="limiter"):
        request.rule_for("limiter")
    from tests import limiter_kind

    request.register("limiter", limiter_kind.LimiterRule)
    try:
        assert request.rule_for("limiter") is limiter_kind.LimiterRule
    finally:
        del request.RULES["limiter"]
