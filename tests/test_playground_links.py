"""The playground's share links, scenario and seed, new graph nodes and field messages,
without a browser (gym/playground/links.py, app.follow, state.Session, fields.Fields)."""

from __future__ import annotations

import base64
import zlib
from pathlib import Path
from urllib.parse import parse_qs

import pytest
import yaml

import gym
from gym.core.errors import GymError, Problem
from gym.core.limits import MAX_SEED
from gym.inputs.strict_yaml import MAX_FILE_BYTES
from gym.playground.links import LINK, MAX_ENCODED, Scenarios, decode, encode, parse, query
from gym.playground.state import ODDS_RUNS, Session
from tests.conftest import ROOT

REFERENCE = ROOT / "designs" / "reference.yaml"
CHAOS = ROOT / "scenarios" / "crawler-chaos.yaml"
SHORTENER = ROOT / "designs" / "systems" / "url-shortener-undersized.yaml"
SHORTENER_SCENARIO = "scenarios/systems/url-shortener.yaml"
DESIGNS = sorted(ROOT.glob("designs/**/*.yaml"))


@pytest.fixture
def session() -> Session:
    design, scenario = gym.load_design(REFERENCE), gym.load_scenario(CHAOS)
    return Session(design, scenario, "designs/reference.yaml", 0, scenario_file="scenarios/x.yaml")


@pytest.fixture
def scenarios() -> Scenarios:
    return Scenarios.around("scenarios/crawler-chaos.yaml", gym.load_scenario(CHAOS), ROOT)


@pytest.mark.parametrize("path", DESIGNS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_link_carries_every_shipped_design_whole(path: Path) -> None:
    """What a link carries loads back to the same design, every field (defaults left out
    of the link come back as defaults)."""
    design = gym.load_design(path)
    data = yaml.safe_load(decode(encode(design)))
    back = gym.load_design(LINK, contents=data)
    assert type(back) is type(design)
    assert back.model_dump() == design.model_dump()


def test_a_link_is_short() -> None:
    """The reference travels in under 200 characters (its non-default fields, packed)."""
    assert len(encode(gym.load_design(REFERENCE))) < 200


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("zzz", "cut short or altered"),
        (encode(gym.load_design(REFERENCE))[:-6], "cut short or altered"),
        ("A" * (MAX_ENCODED + 1), f"a link's design takes at most {MAX_ENCODED:,}"),
        # a small link that unpacks past a design file's limit (1 MiB): refused unpacked
        # no further than the limit
        (
            base64.urlsafe_b64encode(zlib.compress(b" " * (MAX_FILE_BYTES * 4), 9)).decode(),
            f"over {MAX_FILE_BYTES:,} bytes once unpacked",
        ),
    ],
    ids=["garbage", "cut", "long", "bomb"],
)
def test_a_bad_design_in_a_link_is_refused_with_its_reason(text: str, says: str) -> None:
    with pytest.raises(GymError) as err:
        decode(text)
    (problem,) = err.value.problems
    assert (problem.file, problem.field) == (LINK, "design")
    assert says in problem.message


def test_the_query_names_scenario_seed_and_design() -> None:
    q = query(gym.load_design(REFERENCE), "scenarios/recrawl.yaml", 7)
    assert q.startswith("scenario=scenarios/recrawl.yaml&seed=7&design=")  # readable
    link = parse({k: [x.encode() for x in v] for k, v in parse_qs(q).items()})
    assert link.problems == ()
    assert link.seed == 7
    assert link.scenario == "scenarios/recrawl.yaml"
    assert link.design is not None


@pytest.mark.parametrize(
    ("seed", "says"),
    [
        (b"x", "'x': a whole number from 0 to"),
        (b"-1", "'-1': a whole number"),
        (str(MAX_SEED + 1).encode(), "a whole number"),
        (b"\xff", "not UTF-8 text"),
    ],
)
def test_a_bad_seed_in_a_link_is_named(seed: bytes, says: str) -> None:
    link = parse({"seed": [seed], "other": [b"ignored"]})
    assert link.seed is None
    (problem,) = link.problems
    assert (problem.file, problem.field) == (LINK, "seed")
    assert says in problem.message


def test_the_scenarios_offered_are_the_servers_and_the_projects(scenarios: Scenarios) -> None:
    """The server's first, then scenarios/ (each once); a link may name only these, never
    a path of the server's choosing."""
    labels = scenarios.labels
    assert labels[0] == "scenarios/crawler-chaos.yaml"
    assert labels.count("scenarios/crawler-chaos.yaml") == 1
    assert {"scenarios/recrawl.yaml", "scenarios/levers/deep-crawl.yaml"} <= set(labels)
    assert scenarios.get("scenarios/levers/deep-crawl.yaml").name == "deep-crawl"
    for bad in ("/etc/passwd", "../scenarios/recrawl.yaml", "designs/reference.yaml"):
        with pytest.raises(GymError, match="not one of the scenarios this page offers"):
            scenarios.get(bad)


def test_a_graph_link_opens_with_its_own_scenario(scenarios: Scenarios) -> None:
    """A graph design needs a graph scenario: the link's two are checked together."""
    from gym.playground.app import follow

    session = Session(gym.load_design(REFERENCE), gym.load_scenario(CHAOS), "reference.yaml")
    session.scenario_file = scenarios.first
    arguments = {
        "design": [encode(gym.load_design(SHORTENER)).encode()],
        "scenario": [SHORTENER_SCENARIO.encode()],
        "seed": [b"3"],
    }
    assert follow(session, scenarios, parse(arguments)) == []
    assert session.design.name == "url-shortener-undersized"
    assert (session.scenario.name, session.scenario_file, session.seed) == (
        "url-shortener",
        SHORTENER_SCENARIO,
        3,
    )
    assert session.edits() == 0  # the link's design is the one opened
    assert session.link() == query(session.design, SHORTENER_SCENARIO, 3)


def test_a_link_that_does_not_hold_keeps_the_servers_design(scenarios: Scenarios) -> None:
    """The reference under a graph scenario cannot run: said, and the page stays on the
    server's design and scenario."""
    from gym.playground.app import follow

    session = Session(gym.load_design(REFERENCE), gym.load_scenario(CHAOS), "reference.yaml")
    session.scenario_file = scenarios.first
    problems = follow(session, scenarios, parse({"scenario": [SHORTENER_SCENARIO.encode()]}))
    assert problems and "graph" in str(problems[0])
    assert (session.design.name, session.scenario_file) == ("reference", scenarios.first)


def test_the_seed_takes_the_odds_seeds_into_account(session: Session) -> None:
    """The odds run seeds seed .. seed + ODDS_RUNS - 1: the last must be a seed too. A
    seed is taken as a number or as written in the page's box (exactly: past 2^53 too)."""
    last = MAX_SEED - ODDS_RUNS + 1
    session.use_seed(str(last))
    assert session.seed == last
    session.use_seed(3)
    assert session.seed == 3
    for bad in (last + 1, -1, 1.5, True, "1.5", " ", None, "\u00b2", "\u0661\u0662", "1" * 5000):
        with pytest.raises(GymError, match=r"a whole number from 0|a seed is needed"):
            session.use_seed(bad)  # type: ignore[arg-type]
    assert session.seed == 3


@pytest.mark.parametrize("seed", ["\u00b2", "\u0661\u0662", "1" * 5000, "9" * 20])
def test_a_seed_a_link_cannot_hold_is_named_not_raised(seed: str) -> None:
    """Digits int() takes that are not ASCII, or too many for int() to read: named in one
    line, like any bad seed (they stopped the page with an internal error)."""
    link = parse({"seed": [seed.encode()]})
    assert link.seed is None
    (problem,) = link.problems
    assert (problem.file, problem.field) == (LINK, "seed") and len(str(problem)) < 120


def test_another_scenario_runs_the_design_there(session: Session) -> None:
    session.use_scenario(gym.load_scenario(ROOT / "scenarios/recrawl.yaml"), "scenarios/r.yaml")
    assert session.run().result.scenario.name == "recrawl"
    with pytest.raises(GymError, match="graph"):
        session.use_scenario(gym.load_scenario(ROOT / SHORTENER_SCENARIO), SHORTENER_SCENARIO)
    assert session.scenario_file == "scenarios/r.yaml"


def graph_session() -> Session:
    return Session(
        gym.load_design(SHORTENER), gym.load_scenario(ROOT / SHORTENER_SCENARIO), "u.yaml"
    )


def test_a_node_goes_on_an_edge_with_one_units_parameters() -> None:
    """A queue on cache -> kv: cache -> queue -> kv, with the catalog's one unit of a
    queue (what the fix's unit search buys one of), costing that unit."""
    from gym.system import kinds

    s = graph_session()
    before = s.run().cost_units
    s.add_node("queue", "q", 1)
    edges = [(e["from"], e["to"]) for e in s.data["graph"]["edges"]]
    assert edges == [("users", "cache"), ("cache", "q"), ("q", "kv")]
    scale = kinds.kind("queue").scale
    assert scale is not None
    expected = scale(1, s.scenario.catalog)
    node = s.data["graph"]["nodes"]["q"]
    assert {k: node[k] for k in expected} == expected
    assert s.run().cost_units == before + 1
    assert "graph.nodes.q.drain_rps" in {f.path for f in s.fields()}


@pytest.mark.parametrize(
    ("kind", "name", "edge", "says"),
    [
        ("fleet", "f", 1, "a fleet takes its work from one queue"),
        ("queue", "kv", 1, "'kv': a node has this name already"),
        ("queue", "bad name", 1, "'bad name': a node's name is a letter"),
        ("source", "s", 1, "one of queue, fleet"),
        ("queue", "q", 7, "choose the edge"),
        ("queue", "", 1, "a name is needed"),
        ("queue", "a.b", 1, "'a.b': a node's name is a letter"),
        ("queue", "x" * 300, 1, "'" + "x" * 40 + "...': a node's name"),
    ],
)
def test_a_node_that_cannot_go_there_is_refused(kind: str, name: str, edge: int, says: str) -> None:
    s = graph_session()
    before = s.data
    with pytest.raises(GymError) as err:
        s.add_node(kind, name, edge)
    assert says in str(err.value)
    assert s.data == before  # nothing changed


def test_a_crawler_takes_no_new_node(session: Session) -> None:
    with pytest.raises(GymError, match="nodes are added to graph designs"):
        session.add_node("queue", "q", 0)


def test_a_fields_problem_is_shown_beside_it(session: Session) -> None:
    """The message under the field, with the value the page keeps running; a problem of
    no field goes back to the page's own place."""
    pytest.importorskip("bokeh")
    from gym.playground.fields import Fields

    fields = Fields(session, lambda path, value: None)
    with pytest.raises(GymError) as err:
        session.set("cache.hit_ratio", 1.5)
    other = Problem(None, None, "something else")
    assert fields.show_problems([*err.value.problems, other]) == [other]
    beside = fields.widgets["msg:cache.hit_ratio"]
    assert beside.visible
    assert "must be less than or equal to 1 (got 1.5)" in beside.text
    assert "the page runs 0.92 meanwhile" in beside.text
    assert "reference.yaml" not in beside.text  # the user edits the page, not the file
    assert not fields.widgets["msg:fetchers.replicas"].visible
    assert fields.show_problems([]) == []
    assert not beside.visible and beside.text == ""


def test_the_page_says_the_schemas_and_the_catalogs_problems_at_once(session: Session) -> None:
    """A bad count and a hit ratio the catalog cannot reach: both said, each beside its
    field, as gym run says them in one round."""
    pytest.importorskip("bokeh")
    from gym.playground.fields import Fields

    fields = Fields(session, lambda path, value: None)
    with pytest.raises(GymError):
        session.set("fetchers.replicas", -4)
    with pytest.raises(GymError) as err:
        session.set("cache.hit_ratio", 1.0)
    assert [p.field for p in err.value.problems] == ["fetchers.replicas", "cache.hit_ratio"]
    assert fields.show_problems(err.value.problems) == []
    assert "must be greater than 0 (got -4)" in fields.widgets["msg:fetchers.replicas"].text
    assert "1 cannot be reached" in fields.widgets["msg:cache.hit_ratio"].text


def test_a_node_added_is_one_change_and_a_link_says_where_it_came_from() -> None:
    from gym.playground.texts import title_html

    s = graph_session()
    s.add_node("queue", "q", 1)
    assert s.edits() == 1  # the node, with the edges it came with
    assert "edited: 1 field<" in title_html(s)
    s.open(decode(encode(s.design)), LINK)
    assert "(from a share link)" in title_html(s) and s.edits() == 0


def test_the_page_shows_the_runs_warnings() -> None:
    """What gym run warns of (a store's rate rounded to whole slots) is on the page too."""
    from gym.playground.texts import warnings_html

    view = graph_session().run()
    assert any("graph.nodes.kv.rps" in w for w in view.warnings)
    assert view.warnings == tuple(view.result.warnings)
    assert "warning: graph.nodes.kv.rps: 12.5 slots rounded to 12" in warnings_html(view.warnings)


def test_a_scenario_from_the_menu_is_named_by_its_label(
    session: Session, scenarios: Scenarios
) -> None:
    """Its messages name it as the menu does, not by the server's absolute path."""
    with pytest.raises(GymError) as err:
        session.use_scenario(scenarios.get(SHORTENER_SCENARIO), SHORTENER_SCENARIO)
    assert str(err.value).startswith(f"{SHORTENER_SCENARIO}: system: ")
    assert str(ROOT) not in str(err.value)
