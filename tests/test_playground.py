"""The playground's logic without a browser (gym/playground/state.py): the fields it
offers, the checks on a value (the command line's own messages), and what it shows of a
run."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import gym
from gym.core.errors import GymError
from gym.playground.state import Session, fields, messages
from tests.conftest import ROOT

REFERENCE = ROOT / "designs" / "reference.yaml"
CHAOS = ROOT / "scenarios" / "crawler-chaos.yaml"


@pytest.fixture
def session() -> Session:
    return Session(gym.load_design(REFERENCE), gym.load_scenario(CHAOS), "reference.yaml")


def test_every_scalar_field_of_the_design_is_offered(session: Session) -> None:
    """One control per scalar field of the file, with the schema's bounds: the same paths
    --set takes."""
    paths = {f.path: f for f in session.fields()}
    for path in (
        "frontier.drain_rps",
        "frontier.buffer",
        "frontier.structure",
        "fetchers.replicas",
        "fetchers.rps_per_replica",
        "fetchers.service.mean_ms",
        "fetchers.on_crash",
        "cache.hit_ratio",
        "page_store.rps",
        "dedup.content_hash",
    ):
        assert path in paths, path
    replicas = paths["fetchers.replicas"]
    assert (replicas.kind, replicas.low, replicas.low_open, replicas.high) == (
        "int",
        0.0,
        True,
        100000.0,
    )
    assert paths["cache.hit_ratio"].kind == "float"
    assert paths["fetchers.on_crash"].options == ("fail", "requeue")
    assert paths["dedup.content_hash"].options == (False, True)
    assert "name" not in paths


def test_sliders_stay_inside_the_schema_and_reach_four_times_the_value(
    session: Session,
) -> None:
    for spec in session.fields():
        value = session.value(spec.path)
        if spec.kind == "choice" or value is None:
            continue
        start, end, step = spec.slider(float(value))
        assert spec.low is None or start > spec.low or (start == spec.low and not spec.low_open)
        assert spec.high is None or end <= spec.high
        assert step > 0 and (end - start) / step <= 401
        if spec.kind == "int":
            assert step == int(step) and start == int(start)
        if spec.high is not None and spec.high <= 1 and spec.kind == "float":
            assert end == spec.high  # a fraction: its whole range
        else:
            assert end >= min(4 * float(value), spec.high or math.inf) - step, spec.path


def test_a_value_runs_as_the_same_design_file_would(session: Session) -> None:
    """Replicas 4 -> 3 on the page is the reference with --set fetchers.replicas=3."""
    session.set("fetchers.replicas", 3)
    view = session.run()
    cli = gym.simulate(gym.load_design(REFERENCE, ["fetchers.replicas=3"]), CHAOS)
    assert view.verdict == "FAIL" == cli.verdict.upper()
    assert view.result.metrics.availability == cli.metrics.availability
    assert view.saturation["fetchers"] == list(cli.metrics.components["fetchers"].saturation)
    assert max(view.saturation["fetchers"]) == cli.to_dict()["metrics"]["peak_saturation"]
    assert view.cost_units == 6 and view.units["fetchers"] == 3


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("fetchers.replicas", 0),
        ("cache.hit_ratio", 1.5),
        ("frontier.drain_rps", -1),
        ("fetchers.on_crash", "retry"),
        ("page_store.rps", float("nan")),
        ("fetchers.rps_per_replica", 4001),  # over the catalog's 4,000 a replica
    ],
)
def test_a_bad_value_gets_the_command_lines_message_and_changes_nothing(
    session: Session, path: str, value: object, tmp_path: Path
) -> None:
    """The page's message for a bad value is what `gym validate` prints for a file with
    that value: the same file: field: message line."""
    before = session.design
    with pytest.raises(GymError) as err:
        session.set(path, value)
    # the design (what runs, what downloads) is unchanged; the draft shows the value
    assert session.design is before and not session.valid
    data = yaml.safe_load(REFERENCE.read_text())
    section, _, key = path.partition(".")
    data[section][key] = value if value == value else ".nan"
    bad = tmp_path / "reference.yaml"
    text = yaml.safe_dump(data).replace("'.nan'", ".nan")
    bad.write_text(text)
    out = subprocess.run(
        [sys.executable, "-m", "gym", "validate", "reference.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert messages(err.value.problems) == out.stderr.strip().splitlines()


def test_a_field_the_design_lacks_is_refused(session: Session) -> None:
    with pytest.raises(GymError, match="no such field"):
        session.set("fetchers.nonsense", 1)
    with pytest.raises(GymError, match="no such field"):
        session.set("async_writer.buffer", 10)  # the reference has no writer section


def test_the_downloaded_yaml_loads_back_to_the_same_design(
    session: Session, tmp_path: Path
) -> None:
    session.set("fetchers.replicas", 3)
    session.set("cache.hit_ratio", 0.96)
    path = tmp_path / "design.yaml"
    path.write_text(session.yaml())
    assert gym.load_design(path).model_dump() == session.design.model_dump()
    assert gym.load_design(path).fetchers.replicas == 3


def test_opening_a_file_replaces_the_design_and_its_fields(session: Session) -> None:
    text = (ROOT / "designs" / "writer-lossless.yaml").read_text()
    session.open(text, "writer-lossless.yaml")
    assert session.design.name == "writer-lossless"
    assert "async_writer.buffer" in {f.path for f in session.fields()}
    with pytest.raises(GymError) as err:
        session.open("frontier: [1, 2", "broken.yaml")
    assert str(err.value).startswith("broken.yaml:")
    assert session.design.name == "writer-lossless"  # unchanged


def test_a_graph_design_offers_its_nodes_fields() -> None:
    design = gym.load_design(ROOT / "designs" / "systems" / "url-shortener.yaml")
    specs = {f.path: f for f in fields(design)}
    assert {"graph.nodes.cache.hit_ratio", "graph.nodes.cache.rps", "graph.nodes.kv.rps"} <= set(
        specs
    )
    assert specs["graph.nodes.kv.rps"].part == "kv"
    assert not any(p.endswith(".kind") for p in specs)  # a node's kind is not a control
    session = Session(
        design,
        gym.load_scenario(ROOT / "scenarios" / "systems" / "url-shortener.yaml"),
        "url-shortener.yaml",
    )
    session.set("graph.nodes.kv.rps", 100)
    assert session.design.graph.nodes["kv"].rps == 100  # type: ignore[union-attr]
    assert session.run().verdict == "FAIL"


def test_what_the_page_shows_of_a_run(session: Session) -> None:
    view = session.run()
    n = len(view.t)
    assert n == 40 and view.t[0] == 0.0 and view.duration_s == 40
    assert set(view.saturation) >= {"frontier", "fetchers", "cache", "resolver", "page_store"}
    assert all(len(v) == n for v in view.saturation.values())
    assert len(view.offered) == len(view.served) == len(view.failed) == len(view.backlog) == n
    # what the windows say: served and failed summed over the components, per second
    assert sum(view.served) == view.result.metrics.served
    assert sum(view.failed) == view.result.metrics.failed
    assert [e[3] for e in view.events] == ["load", "load", "crash", "stall", "slowdown"]
    assert view.verdict == "PASS" and view.ceiling == 0.9 and view.buffer == 80000


def test_the_pass_probability_over_twenty_seeds(tmp_path: Path) -> None:
    """The page's odds are ``gym run --runs 20``'s: seeds 0-19, each its own run's verdict,
    and the Wilson interval of their passes. The availability SLO is set inside the spread
    of the reference's runs, so some seeds pass and some fail."""
    from gym.explore.montecarlo import wilson
    from gym.playground.texts import odds_html

    ones = [gym.simulate(REFERENCE, CHAOS, seed=seed) for seed in range(20)]
    values = sorted(r.metrics.availability for r in ones)
    target = (values[9] + values[10]) / 2  # half the runs above it
    edited = yaml.safe_load(CHAOS.read_text())
    edited["slos"]["availability"]["min"] = target
    path = tmp_path / "edge.yaml"
    path.write_text(yaml.safe_dump(edited))
    scenario = gym.load_scenario(path)
    odds = Session(gym.load_design(REFERENCE), scenario, "reference.yaml").odds()
    passes = [gym.simulate(REFERENCE, scenario, seed=seed).passed for seed in range(20)]
    assert [r["seed"] for r in odds.runs] == list(range(20))
    assert [r["verdict"] == "pass" for r in odds.runs] == passes
    assert odds.passes == sum(passes) == 10
    assert odds.ci == wilson(10, 20) and odds.verdict == "fail"  # 0.29 < 0.8
    text = odds_html(odds, 0)
    assert "data-passes='10'" in text and "data-runs='20'" in text
    assert "P(pass) 0.50</b> [0.30, 0.70]" in text and "(0-19," in text


def test_optional_sections_are_added_and_removed(session: Session) -> None:
    """An async writer added from the page is one catalog unit (100,000 writes), costs a
    unit, and its fields appear; removed, the design is the reference again."""
    assert session.sections() == {"async_writer": False, "retries": False, "discovery": False}
    session.toggle("async_writer", True)
    assert session.design.async_writer is not None  # type: ignore[union-attr]
    assert session.design.async_writer.buffer == 100_000  # type: ignore[union-attr]
    assert "async_writer.buffer" in {f.path for f in session.fields()}
    view = session.run()
    assert view.units["async_writer"] == 1 and view.cost_units == 8
    session.set("async_writer.buffer", 250_000)
    assert session.run().units["async_writer"] == 3
    session.toggle("async_writer", False)
    assert session.design.model_dump() == gym.load_design(REFERENCE).model_dump()
    for section in ("retries", "discovery"):
        session.toggle(section, True)
        assert session.run().verdict in ("PASS", "FAIL")
        session.toggle(section, False)
    with pytest.raises(GymError, match="not an optional section"):
        session.toggle("frontier", False)


def test_a_field_that_depends_on_another_can_be_set_first(session: Session) -> None:
    """A lognormal fetch needs a cv, and a deterministic one refuses it: the draft keeps
    cv 0.5 (with the message) until dist says lognormal, then the design takes both."""
    with pytest.raises(GymError, match="cv"):
        session.set("fetchers.service.cv", 0.5)
    assert session.design.fetchers.service.cv is None  # type: ignore[union-attr]
    assert session.value("fetchers.service.cv") == 0.5 and not session.valid
    session.set("fetchers.service.dist", "lognormal")
    assert session.valid
    assert session.design.fetchers.service.dist == "lognormal"  # type: ignore[union-attr]
    assert session.design.fetchers.service.cv == 0.5  # type: ignore[union-attr]


def test_a_design_that_cannot_run_under_the_scenario_is_not_opened(session: Session) -> None:
    """A graph design under the crawler scenario: refused with gym validate's message;
    the page keeps the design it had."""
    text = (ROOT / "designs" / "systems" / "url-shortener.yaml").read_text()
    with pytest.raises(GymError):
        session.open(text, "url-shortener.yaml")
    assert session.design.name == "reference" and session.valid


def test_timeline_rows_are_unique_when_events_share_a_label() -> None:
    """Two stalls of the page store have one label; the timeline's rows must differ (a
    repeated row name left the page blank)."""
    from gym.playground.figures import events

    scenario = gym.load_scenario(CHAOS).model_copy(deep=True)
    data = scenario.model_dump(mode="json")
    data["faults"][2] = {"kind": "stall", "at_s": 32, "for_s": 4, "target": "page_store"}
    data["faults"].append({"kind": "stall", "at_s": 20, "for_s": 4, "target": "page_store"})
    twice = gym.models.Scenario.model_validate(data)
    view = Session(gym.load_design(REFERENCE), twice, "reference.yaml").run()
    labels = events(view)["label"]
    assert len(set(e[2] for e in view.events)) < len(view.events)  # a repeated label
    assert len(set(labels)) == len(labels)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope.yaml"], "error: nope.yaml: file not found"),
        (["--host", ""], "error: --host: an address is needed, e.g. 127.0.0.1"),
        (["--host", "::1"], "error: --host: ::1: an IPv6 address;"),
        (["--host", "999.1.1.1"], "error: --host: cannot listen on 999.1.1.1:"),
        (
            ["designs/reference.yaml", "--set", "fetchers.replicas=0"],
            "error: designs/reference.yaml: fetchers.replicas: must be greater than 0",
        ),
    ],
)
def test_gym_serve_refuses_bad_input_before_listening(args: list[str], message: str) -> None:
    """Exit 2, one line naming the option or the file, no traceback, no server."""
    pytest.importorskip("bokeh")
    out = subprocess.run(
        [sys.executable, "-m", "gym", "serve", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert out.stderr.startswith(message), out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_gym_serve_refuses_a_port_in_use() -> None:
    pytest.importorskip("bokeh")
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run(
            [sys.executable, "-m", "gym", "serve", "--port", str(port)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert out.returncode == 2
    assert out.stderr.startswith(f"error: --port: cannot listen on 127.0.0.1:{port}: "), out.stderr


def test_the_page_runs_one_batch_of_odds_per_design(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The odds are worked out once per design, one batch at a time, and those shown are
    marked as the design before's until the new design's come: switching to the request
    engine and back reruns nothing; a change while a batch runs gets its own next."""
    import threading
    import time

    pytest.importorskip("bokeh")
    from bokeh.document import Document

    from gym.playground import page

    started: list[int] = []
    gates = [threading.Event() for _ in range(4)]  # each batch held until the test lets go
    real = Session.odds

    def odds(self: Session, runs: int | None = None) -> Any:
        started.append(self.design.fetchers.replicas)  # type: ignore[union-attr]
        gates[len(started) - 1].wait(10)
        return real(self, runs)

    monkeypatch.setattr(Session, "odds", odds)
    todo: list[Any] = []

    class Doc(Document):  # the server loop's turns, taken by the test
        def add_next_tick_callback(self, callback: Any) -> Any:
            todo.append(callback)

        def add_timeout_callback(self, callback: Any, timeout: Any) -> Any:
            return None

    def settle(done: Any) -> None:
        end = time.monotonic() + 30
        while not done() and time.monotonic() < end:
            while todo:
                todo.pop(0)()
            time.sleep(0.01)

    def change(replicas: int) -> None:
        p._change("fetchers.replicas", replicas)
        p._apply()

    p = page.Page(Doc(), session)
    p.engine.active = 1
    p.engine.active = 0  # back to the flow engine while the batch runs: the same design
    gates[0].set()
    settle(lambda: "data-odds-verdict='PASS'" in p.odds.text)
    time.sleep(0.2)
    settle(lambda: not todo)
    assert started == [4]
    change(3)
    # Until its batch has run, the odds shown are marked as the design before's.
    assert "data-stale" in p.odds.text and "data-odds-verdict" not in p.odds.text
    settle(lambda: len(started) == 2)
    change(5)  # a change while the batch of 3 replicas runs: 5's comes next
    gates[1].set()
    gates[2].set()
    settle(lambda: "data-units='8'" in p.odds.text)
    assert started == [4, 3, 5]
    assert "data-odds-verdict='PASS'" in p.odds.text and "data-stale" not in p.odds.text
    p._closed(None)


def test_the_title_counts_the_edits_and_the_slos_are_coloured(session: Session) -> None:
    """After edits the title says so (the design's name alone read as the file's
    design); the SLO table's PASS and FAIL carry their colour in the page itself."""
    from gym.playground.texts import slo_cards_html, title_html

    assert "edited" not in title_html(session)
    session.set("fetchers.replicas", 5)
    session.set("cache.hit_ratio", 0.5)
    assert "edited: 2 fields" in title_html(session)
    session.set("cache.hit_ratio", session.opened["cache"]["hit_ratio"])
    assert "edited: 1 field<" in title_html(session)
    view = session.run()
    cards = slo_cards_html(view.result)  # the SLOs as the page shows them
    assert "style='color:#c62828" in cards or "style='color:#1a7f37" in cards
