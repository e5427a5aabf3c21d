"""The suggested fix (gym.explore.fix): the cheapest change to a failing design that passes,
checked by applying it the ways a user would."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

import gym
from gym.cli import app
from gym.explore import optimize
from gym.explore.fix import Change, Fix, NoFix, changes, suggest
from gym.system.compiled import units_of
from tests.conftest import CHAOS, REFERENCE, ROOT, STARTER

runner = CliRunner()
SYSTEMS = ROOT / "designs" / "systems"
SHORTENER = ROOT / "scenarios" / "systems" / "url-shortener.yaml"
INGESTION = ROOT / "scenarios" / "systems" / "ingestion.yaml"


@pytest.fixture(scope="module")
def starter_fix() -> Fix:
    fix = suggest(gym.simulate(STARTER, CHAOS, seed=0))
    assert isinstance(fix, Fix)
    return fix


def test_the_starters_fix_passes_when_applied_with_set(starter_fix: Fix) -> None:
    """The `--set` options the fix prints, applied to the starter's file, make a design
    that passes the run the starter failed (same scenario, seed, engine)."""
    fixed = gym.load_design(STARTER, starter_fix.sets())
    r = gym.simulate(fixed, CHAOS, seed=0)
    assert r.passed
    assert r.metrics.cost_units == starter_fix.cost_units
    assert r.metrics.availability == starter_fix.result.metrics.availability


def test_the_starters_fix_is_as_cheap_as_the_optimizers_brute_force(starter_fix: Fix) -> None:
    """The local search goes up in cost from the design's own units; the optimizer runs
    every unit-aligned design of each cost. With one run per design (seed 0), no design
    cheaper than the fix passes: both find 7 units (the reference's)."""
    best = optimize.search(gym.load_scenario(CHAOS), runs=1, seed=0, max_cost=7, beyond=0)
    assert best.best is not None
    assert starter_fix.cost_units == best.best.cost == 7
    assert units_of(starter_fix.design, gym.load_scenario(CHAOS).catalog)["fetchers"] == 4


def test_every_change_of_the_fix_is_needed(starter_fix: Fix) -> None:
    """Giving any one changed field back its old value makes the design fail: the change
    shown is no larger than it needs to be."""
    assert starter_fix.changes
    starter = gym.load_design(STARTER)
    for change in starter_fix.changes:
        others = [s for s in starter_fix.sets() if not s.startswith(change.path + "=")]
        r = gym.simulate(gym.load_design(STARTER, others), CHAOS, seed=0)
        assert not r.passed, change
    assert changes(starter, starter_fix.design) == starter_fix.changes


def test_the_fix_is_deterministic() -> None:
    a = suggest(gym.simulate(STARTER, CHAOS, seed=3))
    b = suggest(gym.simulate(STARTER, CHAOS, seed=3))
    assert isinstance(a, Fix) and isinstance(b, Fix)
    assert a.to_dict() == b.to_dict()


def test_a_design_over_its_cost_slo_is_fixed_by_removing_units() -> None:
    """js-rendering.yaml costs 10 units under the chaos scenario's 9-unit SLO and passes
    everything else: the chaos scenario renders no JavaScript, so the fix takes replicas
    away down to the reference's 4 (7 units), where it still passes."""
    r = gym.simulate(ROOT / "designs" / "levers" / "js-rendering.yaml", CHAOS, seed=0)
    assert [c.name for c in r.checks if not c.passed] == ["cost_units"]
    fix = suggest(r)
    assert isinstance(fix, Fix)
    assert [(c.path, c.old, c.new) for c in fix.changes] == [("fetchers.replicas", 7, 4)]
    assert fix.cost_units == 7 and fix.result.passed


def test_a_graph_designs_fix_passes_when_its_design_is_run() -> None:
    """A graph design is fixed in its nodes' units; the fixed design (what --json and
    --out give) passes when run again."""
    r = gym.simulate(SYSTEMS / "url-shortener-undersized.yaml", SHORTENER, seed=0)
    fix = suggest(r)
    assert isinstance(fix, Fix)
    assert all(c.path.startswith("graph.nodes.") for c in fix.changes)
    data = fix.to_dict()["design"]
    again = gym.simulate(gym.GraphDesign.model_validate(data), SHORTENER, seed=0)
    assert again.passed and again.metrics.cost_units == fix.cost_units


def test_no_fix_says_how_far_it_looked_and_what_still_fails() -> None:
    """ingestion-no-headroom writes straight to a database that stalls: no number of
    units saves the writes in flight, so availability stays near 0.91 whatever the
    search buys; the write buffer that saves them (a structural move) needs 8 units. Held
    to 7, no fix: the summary says how far it looked and what still fails."""
    r = gym.simulate(SYSTEMS / "ingestion-no-headroom.yaml", INGESTION, seed=0)
    nofix = suggest(r, max_cost=7)
    assert isinstance(nofix, NoFix)
    assert nofix.limit == 7 and nofix.runs >= 4
    assert nofix.closest is not None and not nofix.closest.passed
    assert "availability" in nofix.summary() and "within the limit of 7 units" in nofix.summary()
    assert isinstance(suggest(r), Fix)  # at the cost SLO's 12 units: the write buffer


def test_gym_run_prints_and_carries_the_fix_and_applying_it_passes(tmp_path: Path) -> None:
    """`gym run` of the starter exits 1 and gives the fix in --json; the same command with
    the fix's --set options exits 0; --out writes fixed-design.yaml, which passes."""
    res = runner.invoke(app, ["run", str(STARTER), "--json"])
    assert res.exit_code == 1
    fix = json.loads(res.stdout)["fix"]
    assert fix["found"] and fix["verdict"] == "pass" and fix["cost_units"] == 7
    assert fix["design"]["name"] == "starter-fixed"  # as fixed-design.yaml names it
    sets = [a for s in fix["sets"] for a in ("--set", s)]
    assert runner.invoke(app, ["run", str(STARTER), *sets]).exit_code == 0

    text = runner.invoke(app, ["run", str(STARTER)])
    assert "Suggested fix" in text.stdout and "fetchers.replicas" in text.stdout
    assert "--set fetchers.replicas=4" in text.stdout

    out = tmp_path / "run"
    assert runner.invoke(app, ["run", str(STARTER), "--out", str(out)]).exit_code == 1
    written = json.loads((out / "summary.json").read_text())["fix"]
    assert written["found"] and written["design"] == fix["design"]
    assert yaml.safe_load((out / "fixed-design.yaml").read_text()) == fix["design"]
    assert runner.invoke(app, ["run", str(out / "fixed-design.yaml")]).exit_code == 0


def test_a_passing_run_and_no_fix_search_no_fix() -> None:
    ok = runner.invoke(app, ["run", str(REFERENCE), "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["fix"] is None
    off = runner.invoke(app, ["run", str(STARTER), "--json", "--no-fix"])
    assert off.exit_code == 1 and json.loads(off.stdout)["fix"] is None
    many = runner.invoke(
        app, ["run", str(STARTER), "--no-fix", "--runs", "2", "--confidence", "0.3"]
    )
    assert many.exit_code == 2 and "--no-fix" in many.stderr


def test_a_graph_with_nothing_bought_in_units_says_there_is_nothing_to_search(
    tmp_path: Path,
) -> None:
    """A graph of a source and a service (not bought in units) that fails: `gym run`
    still exits 1 and says why no fix can be searched, instead of failing itself."""
    design = tmp_path / "svc.yaml"
    design.write_text(
        "name: svc\n"
        "graph:\n"
        "  nodes:\n"
        "    users: {kind: source}\n"
        "    api: {kind: service, rps: 500, service: {mean_ms: 10}}\n"
        "  edges:\n"
        "    - {from: users, to: api}\n"
    )
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: s\nsystem: graph\nduration_s: 5\nbase_rps: 1000\n"
        "slos:\n  availability: {min: 0.99}\n"
    )
    res = runner.invoke(app, ["run", str(design), "-s", str(scenario), "--json"])
    assert res.exit_code == 1, res.stderr
    fix = json.loads(res.stdout)["fix"]
    assert fix["found"] is False and fix["summary"].startswith("nothing to search")
    text = runner.invoke(app, ["run", str(design), "-s", str(scenario)])
    assert text.exit_code == 1 and "No fix found" in text.stdout


def test_no_change_is_suggested_when_the_flow_engine_passes_the_design_as_it_is() -> None:
    """The search runs the flow engine; a design a request-engine run failed but the flow
    engine passes unchanged gets no fix of "no change", but the reason."""
    import dataclasses

    passed = gym.simulate(REFERENCE, CHAOS, seed=0)
    failed = dataclasses.replace(passed, verdict="fail", engine="request")
    nofix = suggest(failed)
    # Two runs: the reference with its units filled (a frontier buffer of 100,000, not
    # 80,000) passes, and so does the reference once the buffer is given back; one for
    # each structural move the run's losses bring (on_crash: requeue for the crash's
    # fetches, retries for the stall's writes) and one for the pair: each passes at no
    # less cost, so none is kept.
    assert isinstance(nofix, NoFix) and nofix.runs == 5
    assert "passes this design as it is" in nofix.summary()


@pytest.mark.parametrize(
    ("design", "sets", "field", "value", "cost"),
    [
        # relational-store.yaml: 10 relational store units (25,000 writes/s at 2,500 a
        # unit) make 16 units against the 9-unit SLO; one unit of object storage (the
        # structural move, the design's lesson) holds the same 25,000/s for 1 unit.
        (
            ROOT / "designs" / "levers" / "relational-store.yaml",
            [],
            "page_store.layout",
            "split",
            7,
        ),
        # The reference with 9 replicas costs 12 units; 4 replicas pass, as shipped.
        (REFERENCE, ["fetchers.replicas=9"], "fetchers.replicas", 4, 7),
    ],
)
def test_a_design_over_its_cost_is_brought_down_to_what_it_needs(
    design: Path, sets: list[str], field: str, value: float, cost: int
) -> None:
    """Coming down from a design over the cost SLO, the search does not stop at the first
    design under it: it takes units away while the design passes."""
    fix = suggest(gym.simulate(gym.load_design(design, sets), CHAOS, seed=0), user_sets=sets)
    assert isinstance(fix, Fix)
    assert [(c.path, c.new) for c in fix.changes] == [(field, value)]
    assert fix.cost_units == cost
    assert gym.simulate(gym.load_design(design, fix.sets()), CHAOS, seed=0).passed


def test_the_printed_sets_apply_with_the_users_own_and_with_fields_set_back_to_none() -> None:
    """The --set list replaces the user's --set of a field the fix changes and keeps the
    others; a field the fix gives back to its default is `null`, which --set reads."""
    sets = ["fetchers.replicas=2", "fetchers.service.mean_ms=250"]
    fix = suggest(gym.simulate(gym.load_design(STARTER, sets), CHAOS, seed=0), user_sets=sets)
    assert isinstance(fix, Fix)
    applied = fix.sets()
    assert "fetchers.service.mean_ms=250" in applied and "fetchers.replicas=4" in applied
    assert "fetchers.replicas=2" not in applied
    assert gym.simulate(gym.load_design(STARTER, applied), CHAOS, seed=0).passed

    polite = ROOT / "designs" / "politeness-bound.yaml"
    fix = suggest(gym.simulate(polite, CHAOS, seed=0))
    assert isinstance(fix, Fix) and "frontier.back_queues=null" in fix.sets()
    assert gym.simulate(gym.load_design(polite, fix.sets()), CHAOS, seed=0).passed


def test_a_value_12_digits_would_change_is_printed_in_full(tmp_path: Path) -> None:
    """A catalog of 10,000.00000003 URLs/s a frontier unit: two units drain
    20,000.00000006/s, which 12 digits would round up into a third unit (and over a
    tight cost SLO). The printed --set carries the value in full and passes."""
    text = CHAOS.read_text().replace("cost_units:      {max: 9}", "cost_units:      {max: 8}")
    text += "catalog: {frontier: {drain_rps: 10000.00000003}}\n"
    scenario = tmp_path / "precise.yaml"
    scenario.write_text(text)
    fix = suggest(gym.simulate(STARTER, scenario, seed=0))
    assert isinstance(fix, Fix) and fix.cost_units == 8
    drain = next(s for s in fix.sets() if s.startswith("frontier.drain_rps="))
    assert float(drain.split("=")[1]) == 20000.00000006
    again = gym.simulate(gym.load_design(STARTER, fix.sets()), scenario, seed=0)
    assert again.passed and again.metrics.cost_units == 8


def test_a_passing_run_into_the_same_out_directory_leaves_no_stale_fix(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert runner.invoke(app, ["run", str(STARTER), "--out", str(out)]).exit_code == 1
    assert (out / "fixed-design.yaml").exists()
    res = runner.invoke(app, ["run", str(REFERENCE), "--out", str(out), "--force"])
    assert res.exit_code == 0 and not (out / "fixed-design.yaml").exists()


def test_a_section_added_or_removed_is_set_field_by_field_or_as_null() -> None:
    """A fix that adds an async writer gives its fields as --set options, and one that
    removes a section gives it as null: loading the file with them makes the fixed
    design (checked without running)."""
    writer = {"buffer": 100000, "flush_ceiling": 0.85}
    seen4 = ROOT / "designs" / "levers" / "seen-set-4.yaml"
    base = gym.simulate(REFERENCE, CHAOS, seed=0)
    add = Fix(
        changes=[Change("async_writer", None, writer), Change("discovery.shards", 4, 1)],
        design=base.design,
        result=base,
        units={},
        runs=0,
        user_sets=("discovery.shards=2", "fetchers.replicas=4"),
    )
    assert add.sets() == [
        "fetchers.replicas=4",
        "async_writer.buffer=100000",
        "async_writer.flush_ceiling=0.85",
        "discovery.shards=1",
    ]
    fixed = gym.load_design(seen4, add.sets())
    assert fixed.async_writer is not None and fixed.async_writer.buffer == 100000
    assert fixed.discovery is not None and fixed.discovery.shards == 1
    remove = Fix([Change("async_writer", writer, None)], base.design, base, {}, 0)
    assert remove.sets() == ["async_writer=null"]
    lossless = gym.load_design(ROOT / "designs" / "writer-lossless.yaml", remove.sets())
    assert lossless.async_writer is None


LESSONS = [
    # (design, scenario, where the lesson is named: the fix or its alternative, words)
    ("levers/relational-store.yaml", "crawler-chaos.yaml", "fix", "object storage"),
    ("levers/recrawl-everything.yaml", "levers/freshness.yaml", "fix", "only when it changed"),
    ("levers/retry-none.yaml", "levers/store-brownout.yaml", "alternative", "writes with backoff"),
    ("levers/retry-storm.yaml", "levers/store-brownout.yaml", "alternative", "in lockstep"),
    ("systems/ingestion-no-headroom.yaml", "systems/ingestion.yaml", "fix", "write buffer"),
]


@pytest.mark.parametrize(("design", "scenario", "where", "words"), LESSONS)
def test_the_fix_names_the_teaching_designs_lesson(
    design: str, scenario: str, where: str, words: str
) -> None:
    """Issue 29's table: on the teaching designs the suggested fix (or the structural
    alternative it names at no more cost) is the lesson, and its printed --set options,
    applied to the design file, pass."""
    path, sc = ROOT / "designs" / design, ROOT / "scenarios" / scenario
    fix = suggest(gym.simulate(path, sc))
    assert isinstance(fix, Fix)
    named = fix if where == "fix" else fix.alternative
    assert named is not None and named.lesson is not None and words in named.lesson
    # An alternative named beside a fix is one at no more cost.
    assert fix.alternative is None or fix.alternative.cost_units <= fix.cost_units
    applied = gym.load_design(path, named.sets())
    assert gym.simulate(applied, sc).passed
    if design.startswith("systems/"):  # a write buffer node added before the store
        assert any(
            c.path.startswith("graph.nodes.")
            and isinstance(c.new, dict)
            and c.new.get("kind") == "write_buffer"
            for c in fix.changes
        )


def test_each_change_says_what_it_fixes_alone_and_what_it_costs() -> None:
    """The starter's fix, change by change: made alone, which failing SLOs it fixes (the
    run of the starter with that one --set) and the units it adds (units_of, against
    the starter's): more replicas cost a unit, the rest fit the units already bought."""
    starter = gym.load_design(STARTER)
    fix = suggest(gym.simulate(starter, CHAOS))
    assert isinstance(fix, Fix)
    failed = [c.name for c in gym.simulate(starter, CHAOS).checks if not c.passed]
    have = sum(units_of(starter, gym.load_scenario(CHAOS).catalog).values())
    for change, effect in zip(fix.changes, fix.effects, strict=True):
        alone = gym.load_design(STARTER, [f"{change.path}={change.new}"])
        run = gym.simulate(alone, CHAOS)
        assert effect.fixes == tuple(c.name for c in run.checks if c.name in failed and c.passed)
        assert effect.units == sum(units_of(alone, run.scenario.catalog).values()) - have
    assert [e.units for e in fix.effects] == [0, 1, 0, 0]
    text = runner.invoke(app, ["run", str(STARTER)]).stdout
    assert "alone fixes throughput_rps, free" in text and "+1 unit" in text


RUN_LESSONS = [
    # (design, its lesson's scenario, words gym run prints for the lesson: the structural
    # fix, its alternative, the trap, or the field the fix changes)
    ("levers/fifo-frontier.yaml", "crawler-chaos.yaml", "global FIFO: fast, but impolite"),
    ("levers/relational-store.yaml", "crawler-chaos.yaml", "the lesson: page bodies belong"),
    ("levers/recrawl-everything.yaml", "levers/freshness.yaml", "recrawl a page only when"),
    ("levers/retry-none.yaml", "levers/store-brownout.yaml", "writes with backoff"),
    ("levers/retry-storm.yaml", "levers/store-brownout.yaml", "retries in lockstep"),
    ("levers/seen-set-1.yaml", "levers/deep-crawl.yaml", "--set discovery.shards="),
    ("levers/seen-set-4.yaml", "levers/deep-crawl.yaml", "--set discovery.shards="),
    ("reference.yaml", "levers/url-variants.yaml", "the lesson: canonicalize URLs"),
    ("systems/ingestion-no-headroom.yaml", "systems/ingestion.yaml", "write buffer before db"),
]
#: The lever designs that show the lesson done right: they pass, with no trap.
RIGHT = [
    ("levers/js-rendering.yaml", "levers/js-heavy.yaml"),
    ("levers/canonicalized.yaml", "levers/url-variants.yaml"),
    ("levers/retry-backoff.yaml", "levers/store-brownout.yaml"),
    ("levers/seen-set-8.yaml", "levers/deep-crawl.yaml"),
]


def test_every_lever_design_states_its_lesson_and_gym_run_names_it() -> None:
    """Each teaching design's file states its lesson; gym run names it on the designs
    that miss it, and passes with no trap on those that show it done right."""
    for path in sorted((ROOT / "designs" / "levers").glob("*.yaml")):
        assert "# Lesson:" in path.read_text(), path
    shipped = {d for d, _, _ in RUN_LESSONS} | {d for d, _ in RIGHT}
    levers = {f"levers/{p.name}" for p in (ROOT / "designs" / "levers").glob("*.yaml")}
    assert levers <= shipped  # every lever design is checked one way or the other
    for design, scenario, words in RUN_LESSONS:
        args = ["run", str(ROOT / "designs" / design), "-s", str(ROOT / "scenarios" / scenario)]
        res = runner.invoke(app, [*args, "--no-headroom"])
        assert words in res.stdout, (design, res.stdout[-2000:])
    for design, scenario in RIGHT:
        result = gym.simulate(ROOT / "designs" / design, ROOT / "scenarios" / scenario)
        assert result.passed and result.traps == [], design


def test_a_field_goes_back_once_another_has() -> None:
    """fifo-frontier under url-variants: canonicalizing alone passes (the run below), so
    the fix is that one change. The move's unit search rebuilt the frontier (two stages,
    no back queues); a single pass could not give back_queues its 10,000 before the
    structure was the user's again, and kept a change the design does not need."""
    path = ROOT / "designs" / "levers" / "fifo-frontier.yaml"
    sc = ROOT / "scenarios" / "levers" / "url-variants.yaml"
    assert gym.simulate(gym.load_design(path, ["dedup.canonicalize=true"]), sc).passed
    fix = suggest(gym.simulate(path, sc))
    assert isinstance(fix, Fix)
    assert [str(c) for c in fix.changes] == ["dedup.canonicalize false -> true"]


def test_a_design_without_discovery_under_a_deep_crawl_gets_a_seen_url_set() -> None:
    """The reference follows no links; the deep crawl's pages carry 10-15 each, and its
    throughput SLO (9,000/s) is three times its seeds' 3,000/s: no unit count passes,
    a discovery section does, and the fix adds it with only the fields it sets."""
    sc = ROOT / "scenarios" / "levers" / "deep-crawl.yaml"
    fix = suggest(gym.simulate(REFERENCE, sc))
    assert isinstance(fix, Fix) and fix.lesson is not None and "discover links" in fix.lesson
    (change,) = fix.changes
    assert change.path == "discovery" and change.old is None and set(change.new) == {"shards"}
    assert fix.sets() == [f"discovery.shards={change.new['shards']}"]
    assert gym.simulate(gym.load_design(REFERENCE, fix.sets()), sc).passed


def test_a_users_whole_section_takes_the_fixs_fields_in_it() -> None:
    """--set 'fetchers={replicas: 2, rps_per_replica: 4000}' and a fix of
    fetchers.replicas: one option, the section with the fix's value in it (two options
    setting the same field are refused), and it passes."""
    mine = ["fetchers={replicas: 2, rps_per_replica: 4000}"]
    fix = suggest(gym.simulate(gym.load_design(REFERENCE, mine), CHAOS), user_sets=mine)
    assert isinstance(fix, Fix)
    assert [c.path for c in fix.changes] == ["fetchers.replicas"]
    assert fix.sets() == [f"fetchers={{replicas: {fix.changes[0].new}, rps_per_replica: 4000}}"]
    assert gym.simulate(gym.load_design(REFERENCE, fix.sets()), CHAOS).passed


def test_a_design_far_over_its_cost_is_searched_from_within_reach() -> None:
    """A log queue with a drain_rps of 1e9 costs 33,334 units against the cost SLO's 12:
    no part of a passing design holds more than 12 less the others' least, so the
    search starts there (one unit at a time from 33,339 it found nothing)."""
    path = SYSTEMS / "ingestion-no-headroom.yaml"
    mine = ["graph.nodes.log.drain_rps=1e9"]
    fix = suggest(gym.simulate(gym.load_design(path, mine), INGESTION), user_sets=mine)
    assert isinstance(fix, Fix) and fix.cost_units <= 12
    assert gym.simulate(gym.load_design(path, fix.sets()), INGESTION).passed
    log = next(e for e in fix.effects if e.path == "graph.nodes.log.drain_rps")
    assert log.units < 0 and "saves" in log.words()


def test_no_write_buffer_before_a_store_a_cache_feeds() -> None:
    """The url-shortener's kv is fed by the cache's misses: reads, which a write buffer
    cannot hold. Neither the fix's moves nor the explanation offer one; the explanation
    names the cache's hit ratio instead."""
    from gym.explore import moves

    result = gym.simulate(SYSTEMS / "url-shortener-undersized.yaml", SHORTENER)
    assert not result.passed and result.metrics.components["kv"].failed_total.sum() > 0
    assert not any("write_buffer" in m.name for m in moves.moves(result))
    text = runner.invoke(
        app, ["run", str(SYSTEMS / "url-shortener-undersized.yaml"), "-s", str(SHORTENER)]
    ).stdout
    assert "write_buffer" not in text and "A higher hit ratio at cache sends it fewer" in text


def test_a_crawlers_node_moves_are_its_compiled_graphs(tmp_path: Path) -> None:
    """Issue 40: a crawler design runs as the graph its loading compiles; the fix reads the
    changes of that graph's kinds and writes each field where the crawler's sections hold
    it. The starter's fetchers (a fleet) lose work in the chaos scenario's crash: the
    fleet's on_crash: requeue, set at fetchers.on_crash and nothing else. With the
    scenario's resolver at 1,000 lookups/s (its busiest second asks more) the
    resolver (a service) loses lookups overloaded and the service kind raises its rate,
    but a crawler's resolver rate is the scenario's: its design file cannot say it, so
    no move names it."""
    from gym.explore import moves
    from gym.system.kinds import kind
    from gym.system.kinds.base import Seen

    result = gym.simulate(STARTER, CHAOS)
    found = {m.name: m for m in moves.moves(result)}
    changed = found["fetchers.on_crash=requeue"].apply(result.design)
    assert isinstance(changed, gym.Design) and changed.fetchers.on_crash == "requeue"
    assert changed.model_dump(exclude={"fetchers"}) == result.design.model_dump(
        exclude={"fetchers"}
    )
    slow = tmp_path / "slow-resolver.yaml"
    slow.write_text(CHAOS.read_text().replace("resolver: {rps: 5000}", "resolver: {rps: 1000}"))
    result = gym.simulate(STARTER, slow)
    m = result.metrics.components["resolver"]
    lost = {c: int(n.sum()) for c, n in m.failed.items()}
    peak = float(np.nanmax(m.demand))
    seen = Seen("resolver", {"resolver": {"kind": "service", "rps": 1000}}, [], lost, peak)
    assert lost["resolver_overload"] > 0 and kind("service").changes(seen)
    assert not any(name.startswith("resolver") for name in (m.name for m in moves.moves(result)))


def test_a_crawler_field_the_scenario_changes_takes_no_node_move() -> None:
    """A kind's change is worked out on the node as it ran; a crawler's section holds the
    field as written. Under the JS-heavy scenario js-rendering's fetchers run at 2,000/s
    a replica (rendering halves them) while its file says 4,000: a change to that rate
    could not be written there, so the fix has no path for it; on_crash, which the
    scenario leaves alone, goes to fetchers.on_crash."""
    from gym.explore.moves import _crawler_path, _written
    from gym.system.compiled import system_topology

    design = gym.load_design(ROOT / "designs" / "levers" / "js-rendering.yaml")
    scenario = gym.load_scenario(ROOT / "scenarios" / "levers" / "js-heavy.yaml")
    node = _written(system_topology(design, scenario).node("fetchers"))
    assert design.fetchers.rps_per_replica == 2 * node["rps_per_replica"]
    assert _crawler_path(design, "fetchers", "rps_per_replica", node) is None
    assert _crawler_path(design, "fetchers", "on_crash", node) == "fetchers.on_crash"
    plain = _written(system_topology(design, gym.load_scenario(CHAOS)).node("fetchers"))
    assert _crawler_path(design, "fetchers", "rps_per_replica", plain) == (
        "fetchers.rps_per_replica"
    )


def test_graph_advice_offers_no_retries_and_a_crashed_fleet_can_requeue() -> None:
    """A graph design has no retry policy: a stalled service is told that nothing holds
    its requests, not to retry them. A graph fleet that lost work in a crash gets the
    on_crash: requeue move."""
    from gym.explore import moves

    design = gym.load_design(SYSTEMS / "ingestion-no-headroom.yaml")
    result = gym.simulate(design, INGESTION)
    (requeue,) = [m for m in moves.moves(result) if m.name == "consumers.on_crash=requeue"]
    changed = requeue.apply(design)
    assert isinstance(changed, gym.GraphDesign)
    assert getattr(changed.graph.nodes["consumers"], "on_crash", None) == "requeue"
    graph = gym.GraphDesign.model_validate(
        {
            "name": "stalled-service",
            "graph": {
                "nodes": {
                    "users": {"kind": "source"},
                    "svc": {"kind": "service", "rps": 2000, "service": {"mean_ms": 5}},
                },
                "edges": [{"from": "users", "to": "svc"}],
            },
        }
    )
    stall = gym.Scenario.model_validate(
        {
            "name": "stall",
            "system": "graph",
            "duration_s": 30,
            "base_rps": 1000,
            "faults": [{"kind": "stall", "at_s": 10, "for_s": 5, "target": "svc"}],
            "slos": {"availability": {"min": 0.99}},
        }
    )
    from gym.analysis.explain_graph import hint

    said = hint(gym.simulate(graph, stall).metrics, "svc", "svc_unavailable", 5_000)
    assert "Nothing in the graph holds what reaches svc" in said and "retry policy" not in said


def test_a_long_store_name_gets_a_buffer_name_a_graph_takes() -> None:
    """A store named with 62 characters: its write buffer's node name is cut to the 64 a
    graph takes, and the move makes a design that loads."""
    import yaml

    from gym.explore import moves

    long = "d" * 62
    data = yaml.safe_load((SYSTEMS / "ingestion-no-headroom.yaml").read_text())
    data["graph"]["nodes"][long] = data["graph"]["nodes"].pop("db")
    for edge in data["graph"]["edges"]:
        edge["to"] = long if edge["to"] == "db" else edge["to"]
    design = gym.GraphDesign.model_validate(data)
    sc = gym.load_scenario(INGESTION)
    faults = [f.model_copy(update={"target": long}) if f.target == "db" else f for f in sc.faults]
    result = gym.simulate(design, sc.model_copy(update={"faults": faults}))
    (buffer,) = [m for m in moves.moves(result) if "write_buffer" in m.name]
    added = buffer.apply(design)
    assert isinstance(added, gym.GraphDesign)
    (new,) = [n for n in added.graph.nodes if n not in design.graph.nodes]
    assert len(new) == 64 and new.startswith(long)


def test_ctrl_c_in_the_fix_search_keeps_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run is done when the search starts: Ctrl-C there prints the run, says what
    was interrupted, and exits 130 (the interrupt's status)."""
    from gym.explore import fix as fixing

    def interrupted(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(fixing, "suggest", interrupted)
    res = runner.invoke(app, ["run", str(STARTER)])
    assert res.exit_code == 130
    assert "Verdict: FAIL" in res.stdout and "Why it fails" in res.stdout
    assert "the fix search (--no-fix skips it) was interrupted" in res.stderr


def test_no_alternative_whose_structural_change_is_not_needed() -> None:
    """relational-store: the unit fix page_store.rps 2500 passes at 7 units by itself
    (the run below). A move's search that reaches it with on_crash: requeue as well is
    not a structural alternative: its own field goes back where the design still
    passes, and with no structural field left it is not named."""
    path = ROOT / "designs" / "levers" / "relational-store.yaml"
    assert gym.simulate(gym.load_design(path, ["page_store.rps=2500"]), CHAOS).passed
    fix = suggest(gym.simulate(path, CHAOS))
    assert isinstance(fix, Fix) and [str(c) for c in fix.changes] == [
        "page_store.layout relational -> split"
    ]
    assert fix.alternative is None


def test_an_optional_section_is_taken_out_where_that_is_cheaper() -> None:
    """writer-lossless under js-heavy: its async writer holds nothing the store cannot
    take, and its unit is short at the fetchers. The fix takes the writer out and buys a
    seventh replica: 10 units, the cost SLO (no unit count kept the writer within it)."""
    path = ROOT / "designs" / "writer-lossless.yaml"
    sc = ROOT / "scenarios" / "levers" / "js-heavy.yaml"
    fix = suggest(gym.simulate(path, sc))
    assert isinstance(fix, Fix) and fix.cost_units <= 10
    assert any(c.path == "async_writer" and c.new is None for c in fix.changes)
    assert "async_writer=null" in fix.sets()
    assert gym.simulate(gym.load_design(path, fix.sets()), sc).passed
    # the seventh replica alone fixes the saturation but goes over the cost SLO: said
    (replicas,) = [e for e in fix.effects if e.path == "fetchers.replicas"]
    alone = gym.simulate(gym.load_design(path, ["fetchers.replicas=7"]), sc)
    assert ("cost_units" in replicas.breaks) is (not alone.checks[-1].passed)
    assert "breaks cost_units" in replicas.words()


def test_the_text_says_what_each_change_costs_and_a_default_is_a_default() -> None:
    """A single change says its cost (the relational store's split layout saves 9 of its
    16 units); a field given back to its default reads "default", not "none"; a graph's
    new write buffer says its unit."""
    text = runner.invoke(app, ["run", str(ROOT / "designs" / "levers" / "relational-store.yaml")])
    assert "page_store.layout: relational -> split  (saves 9 units)" in text.stdout
    text = runner.invoke(app, ["run", str(ROOT / "designs" / "politeness-bound.yaml")])
    assert "frontier.back_queues: 10000 -> default" in text.stdout
    args = ["run", str(SYSTEMS / "ingestion-no-headroom.yaml"), "-s", str(INGESTION)]
    text = runner.invoke(app, args)
    assert "kind: write_buffer" in text.stdout and "(only with the others, +1 unit)" in text.stdout
    assert "with on_crash: requeue on consumers" in " ".join(text.stdout.split())


def test_two_moves_together_when_neither_passes_alone() -> None:
    """relational-store under deep-crawl: a split layout alone leaves the crawl at its
    seeds (3,000/s for a 9,000/s SLO), a seen-URL set alone keeps 16 units of relational
    rows (the cost SLO's 16 leave no room for shards); both together pass at 12 units."""
    path = ROOT / "designs" / "levers" / "relational-store.yaml"
    sc = ROOT / "scenarios" / "levers" / "deep-crawl.yaml"
    fix = suggest(gym.simulate(path, sc))
    assert isinstance(fix, Fix) and fix.cost_units <= 12
    assert {c.path for c in fix.changes} == {"page_store.layout", "discovery"}
    assert fix.lesson is not None and "object storage" in fix.lesson and "links" in fix.lesson
    assert gym.simulate(gym.load_design(path, fix.sets()), sc).passed


def test_a_move_out_of_a_trap_wins_a_tie_with_units() -> None:
    """relational-store under recrawl: page_store.rps 2500 with 4 more replicas and the
    split layout with them cost the same 11 units. The design takes the rubric's "blobs
    in a relational table" trap, so the split layout is the fix (and its lesson), not
    the alternative beside a unit change, as under the chaos scenario."""
    path = ROOT / "designs" / "levers" / "relational-store.yaml"
    sc = ROOT / "scenarios" / "recrawl.yaml"
    result = gym.simulate(path, sc)
    assert "storage split" in {t.item for t in result.traps}
    fix = suggest(result)
    assert isinstance(fix, Fix) and fix.lesson is not None and "object storage" in fix.lesson
    assert any(c.path == "page_store.layout" and c.new == "split" for c in fix.changes)
    assert gym.simulate(gym.load_design(path, fix.sets()), sc).passed


def test_a_graph_service_rate_is_a_move_and_a_graph_store_is_split_only(
    tmp_path: Path,
) -> None:
    """A service node costs no units, so the unit search never raised its rate: a design
    whose service (9,000/s) is short in the burst had "No fix found". The move sets it
    to its busiest second at 80%, and the fix passes. A graph store's relational layout
    (accepted and ignored before) is refused."""
    text = (SYSTEMS / "ingestion.yaml").read_text()
    text = text.replace(
        "    buffer:    {kind: write_buffer, buffer: 60000}",
        "    api:       {kind: service, rps: 9000, service: {mean_ms: 5}}\n"
        "    buffer:    {kind: write_buffer, buffer: 5000}",
    ).replace(
        "- {from: consumers, to: buffer}",
        "- {from: consumers, to: api}\n    - {from: api, to: buffer}",
    )
    path = tmp_path / "api.yaml"
    path.write_text(text)
    fix = suggest(gym.simulate(path, INGESTION))
    assert isinstance(fix, Fix) and any(c.path == "graph.nodes.api.rps" for c in fix.changes)
    assert gym.simulate(gym.load_design(path, fix.sets()), INGESTION).passed
    with pytest.raises(gym.GymError, match="must be 'split'"):
        gym.load_design(SYSTEMS / "ingestion.yaml", ["graph.nodes.db.layout=relational"])


def test_a_crawl_that_follows_no_links_is_told_so() -> None:
    """The reference under deep-crawl: its seeds offer 3,005/s for a 9,000/s SLO. The
    scenario's pages carry links: "no design can meet this target" was false (a
    discovery section passes); the explanation says to follow them."""
    r = gym.simulate(REFERENCE, ROOT / "scenarios" / "levers" / "deep-crawl.yaml")
    (why,) = [e.text for e in r.explanations if e.slo == "throughput_rps"]
    assert "no design can meet" not in why and "a discovery section" in why


def test_a_fix_of_an_unnamed_design_is_named_design_fixed() -> None:
    """A design made in Python without a name: its fix is design-fixed, not None-fixed."""
    import yaml

    from gym.models import Design

    data = yaml.safe_load((ROOT / "designs" / "starter.yaml").read_text())
    data.pop("name")
    fix = gym.suggest_fix(gym.simulate(Design.model_validate(data)))
    assert fix.to_dict()["design"]["name"] == "design-fixed"
