"""The playground in a real browser: `gym serve` in a subprocess, driven by headless
Chromium (the system's, /usr/bin/chromium; .ci/run installs it) through Playwright.

Without Chromium or Playwright these tests are skipped, unless GYM_REQUIRE_BROWSER=1
(as .ci/run sets it): then they fail. The page's screenshot after the replicas change is
kept in test-artifacts/playground.png.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gym
from benchmarks.bench_serve import CHROMIUM_ARGS  # headless, as root, offline
from gym.playground.app import free_port
from tests.conftest import ROOT

ARTIFACTS = ROOT / "test-artifacts"
SATURATION = (
    "(name) => Array.from(Bokeh.documents[0].get_model_by_name('saturation_data').data[name])"
)


def _chromium() -> str | None:
    return (
        os.environ.get("GYM_CHROMIUM")
        or shutil.which("chromium")
        or shutil.which("chromium-browser")
    )


def _unavailable(why: str) -> None:
    if os.environ.get("GYM_REQUIRE_BROWSER") == "1":
        pytest.fail(f"browser tests required (GYM_REQUIRE_BROWSER=1) but {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """`gym serve` on a free loopback port, as a user starts it; its address."""
    pytest.importorskip("bokeh")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gym", "serve", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    try:
        assert line.startswith(f"playground at http://127.0.0.1:{port}/"), line
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        try:
            # A run the page asked for may be under way; on a loaded machine its end can
            # take more than 10 s (the exit status below is what is checked).
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    # SIGTERM: "interrupted", exit 130, as for every command (README, exit status)
    assert proc.returncode == 130, proc.stderr.read() if proc.stderr else ""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = _chromium()
    if executable is None:
        _unavailable("no Chromium found (apt install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright is not installed (pip install playwright)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any, server: str) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1400}, accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server)
    page.wait_for_selector("[data-verdict='PASS']", timeout=30_000)
    yield page
    context.close()
    assert errors == []  # no script error on the page


def _verdict(page: Any, want: str) -> None:
    page.wait_for_selector(f"[data-verdict='{want}']", timeout=15_000)


def test_replicas_slider_4_to_3_fails_and_redraws_the_saturation(page: Any) -> None:
    """The issue's test: move the replicas slider from 4 to 3 (the keyboard moves the
    slider's handle one step), the verdict turns to FAIL and the saturation plot changes:
    its data is the fetchers' saturation of the reference with 3 replicas, and its
    pixels differ."""
    before = page.evaluate(SATURATION, "fetchers")
    picture = page.locator(".gym-plot-saturation").screenshot()
    handle = page.locator(".gym-slider-fetchers-replicas .noUi-handle")
    assert handle.get_attribute("aria-valuenow") == "4.0"
    handle.focus()
    page.keyboard.press("ArrowLeft")
    _verdict(page, "FAIL")
    assert handle.get_attribute("aria-valuenow") == "3.0"
    assert page.locator(".gym-input-fetchers-replicas input").input_value() == "3"
    want = gym.simulate(gym.load_design(ROOT / "designs/reference.yaml", ["fetchers.replicas=3"]))
    expected = [float(x) for x in want.metrics.components["fetchers"].saturation]
    page.wait_for_function(
        f"() => Math.max(...({SATURATION})('fetchers')) > 1.1"
    )  # the overloaded seconds of the crash, 1.15 with 3 replicas
    after = page.evaluate(SATURATION, "fetchers")
    assert after == pytest.approx(expected) and after != pytest.approx(before)
    time.sleep(0.3)  # the canvas repaints after the data arrives
    assert page.locator(".gym-plot-saturation").screenshot() != picture
    page.wait_for_selector("text=fetchers.replicas", timeout=15_000)  # the fix's table
    # (the page's widgets live in shadow roots: text= locators look inside them)
    assert page.locator("text=Why it fails").count() == 1
    assert page.locator("text=peak saturation 1.15 is above 0.9").count() == 1
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "playground.png"), full_page=True)


def test_the_pass_probability_over_twenty_seeds_follows_each_change(page: Any) -> None:
    """The odds over seeds 0-19 come after the verdict of seed 0 and follow every change:
    the figures of ``gym run --runs 20`` for the design shown."""
    from gym.playground.state import Session

    scenario = gym.load_scenario(ROOT / "scenarios/crawler-chaos.yaml")
    for replicas, verdict in ((4, "PASS"), (3, "FAIL")):
        design = gym.load_design(ROOT / "designs/reference.yaml", [f"fetchers.replicas={replicas}"])
        want = Session(design, scenario, "reference.yaml").odds()
        if replicas == 3:
            box = page.locator(".gym-input-fetchers-replicas input")
            box.fill("3")
            box.press("Enter")
            _verdict(page, "FAIL")
        page.wait_for_selector(
            f"[data-odds-verdict='{verdict}'][data-runs='20'][data-passes='{want.passes}']",
            timeout=30_000,
        )
    text = page.locator("[data-odds-verdict]").inner_text()
    assert "P(pass) 0.00 [0.00, 0.16]" in text and "0 of 20 seeds pass (0-19" in text


def test_the_alerts_follow_each_change(page: Any) -> None:
    """Under the error budget, the burn-rate alerts replayed on the run shown: none for
    the reference, and those ``gym run`` reports once replicas=2, with their detection
    lines. And, for the passing reference, its headroom in the fix's place."""
    assert page.locator("text=No alert fired.").count() == 1
    page.wait_for_selector("text=crash: can lose 1 replica of 4 at once", timeout=30_000)
    box = page.locator(".gym-input-fetchers-replicas input")
    box.fill("2")
    box.press("Enter")
    _verdict(page, "FAIL")
    want = gym.simulate(gym.load_design(ROOT / "designs/reference.yaml", ["fetchers.replicas=2"]))
    assert want.alerts is not None and want.alerts.firings
    first = want.alerts.firings[0]
    page.wait_for_selector(f"text={first.alert} ({first.severity})", timeout=15_000)
    assert page.locator("text=No alert fired.").count() == 0
    for line in want.alerts.detection_lines():
        assert page.locator(f"text={line}").count() == 1, line
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("text=Alerts").first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "playground-alerts.png"), full_page=True)


def test_download_gives_a_design_gym_run_loads(page: Any, tmp_path: Path) -> None:
    box = page.locator(".gym-input-fetchers-replicas input")
    box.fill("5")
    box.press("Enter")
    page.wait_for_selector("[data-cost='8']", timeout=15_000)
    with page.expect_download() as download:
        page.locator(".gym-download button").click()
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert saved.name == "reference.yaml"
    design = gym.load_design(saved)
    assert design.fetchers.replicas == 5  # type: ignore[union-attr]
    out = subprocess.run(
        [sys.executable, "-m", "gym", "run", str(saved)], cwd=ROOT, capture_output=True
    )
    assert out.returncode == 0  # the reference with 5 replicas passes, as on the page


def test_a_bad_value_shows_its_message_beside_its_field(page: Any) -> None:
    """The model's message, under the field (not naming the file: the user edits the page),
    with the value the page keeps running; gone with the bad value."""
    box = page.locator(".gym-input-cache-hit-ratio input")
    box.fill("1.5")
    box.press("Enter")
    beside = page.locator(".gym-msg-cache-hit-ratio")
    beside.locator("text=must be less than or equal to 1 (got 1.5)").wait_for(timeout=15_000)
    assert beside.locator("text=the page runs 0.92 meanwhile").count() == 1
    assert page.locator("text=designs/reference.yaml").count() == 0
    _verdict(page, "PASS")  # nothing changed: the last good design still shows
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "playground-bad-value.png"), full_page=True)
    box.fill("0.6")
    box.press("Enter")
    _verdict(page, "FAIL")
    page.wait_for_function(
        "() => !document.querySelector('.gym-msg-cache-hit-ratio')"
        " || document.querySelector('.gym-msg-cache-hit-ratio').offsetParent === null",
        timeout=15_000,
    )
    assert page.locator("text=must be less than or equal to 1").count() == 0


def _value(page: Any, css: str) -> str:
    value: str = page.locator(f"{css} input").input_value()
    return value


def _wait_value(page: Any, css: str, want: str) -> None:
    """Wait for an input's value to become ``want`` (set by the server: a round trip)."""
    deadline = time.monotonic() + 15
    while _value(page, css) != want:
        assert time.monotonic() < deadline, f"{css}: {_value(page, css)!r}, not {want!r}"
        time.sleep(0.1)


def test_the_address_is_a_share_link(browser: Any, page: Any) -> None:
    """After an edit and a new seed, the address carries the design, scenario and seed:
    opened in another tab, it shows the same run."""
    box = page.locator(".gym-input-fetchers-replicas input")
    box.fill("5")
    box.press("Enter")
    page.wait_for_selector("[data-cost='8']", timeout=15_000)
    seed = page.locator(".gym-seed input")
    seed.fill("7")
    seed.press("Enter")
    page.wait_for_selector("text=seed 7", timeout=15_000)
    page.wait_for_function("() => location.search.includes('seed=7')", timeout=15_000)
    url = page.url
    assert "scenario=scenarios/crawler-chaos.yaml" in url and "design=" in url
    other = browser.new_context(viewport={"width": 1400, "height": 1400}).new_page()
    other.goto(url)
    other.wait_for_selector("[data-cost='8']", timeout=30_000)
    assert _value(other, ".gym-input-fetchers-replicas") == "5"
    assert _value(other, ".gym-seed") == "7"
    other.wait_for_selector("text=seed 7", timeout=15_000)
    other.context.close()


def test_another_scenario_from_the_menu(page: Any) -> None:
    """The menu offers the project's scenarios: the timeline, the title and the address
    follow."""
    menu = page.locator(".gym-scenario select")
    assert "scenarios/levers/deep-crawl.yaml" in menu.inner_text()
    menu.select_option("scenarios/recrawl.yaml")
    page.wait_for_selector("text=under recrawl", timeout=15_000)
    page.wait_for_function(
        "() => location.search.includes('scenario=scenarios/recrawl.yaml')", timeout=15_000
    )
    rows = "() => Bokeh.documents[0].get_model_by_name('timeline').y_range.factors.length"
    from gym.playground.state import view

    recrawl = gym.load_scenario(ROOT / "scenarios/recrawl.yaml")
    events = view(gym.simulate(gym.load_design(ROOT / "designs/reference.yaml"), recrawl)).events
    assert len(events) != 5  # the chaos scenario's five rows: a change to see
    page.wait_for_function(f"() => ({rows})() == {max(1, len(events))}", timeout=15_000)


def test_a_bad_link_opens_the_servers_design_and_says_why(browser: Any, server: str) -> None:
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.goto(server + "?design=zzz&seed=x&scenario=/etc/passwd")
    page.wait_for_selector("[data-verdict='PASS']", timeout=30_000)
    for says in (
        "error: the link: design: not a design a playground link carries",
        "error: the link: seed: 'x': a whole number",
        "error: the link: scenario: '/etc/passwd' is not one of the scenarios this page offers",
    ):
        assert page.locator(f"text={says}").count() == 1, says
    page.context.close()


def test_a_graph_design_gets_a_new_node(browser: Any, server: str) -> None:
    """A link opens the url-shortener under its scenario; a queue put on cache -> kv
    costs its unit, and its fields appear; a fleet with no queue is refused, saying why."""
    from gym.playground.links import query

    design = gym.load_design(ROOT / "designs/systems/url-shortener-undersized.yaml")
    link = query(design, "scenarios/systems/url-shortener.yaml", 0)
    page = browser.new_context(viewport={"width": 1400, "height": 1400}).new_page()
    page.goto(f"{server}?{link}")
    page.wait_for_selector("text=url-shortener-undersized", timeout=30_000)
    page.wait_for_selector("[data-cost='2']", timeout=15_000)
    page.locator(".gym-node-edge select").select_option(index=1)  # cache -> kv
    page.locator(".gym-node-kind select").select_option("fleet")
    page.locator(".gym-add-node button").click()
    page.wait_for_selector("text=a fleet takes its work from one queue", timeout=15_000)
    # the kind's own words, once, naming no file (it came from a link: "the link")
    said = page.evaluate("Bokeh.documents[0].get_model_by_name('node-message').text")
    assert "the link" not in said and said.count("a fleet takes its work") == 1, said
    page.locator(".gym-node-kind select").select_option("queue")
    _wait_value(page, ".gym-node-name", "queue")  # the name follows the kind
    page.locator(".gym-add-node button").click()
    page.wait_for_selector(".gym-input-graph-nodes-queue-drain-rps input", timeout=15_000)
    page.wait_for_selector("[data-cost='3']", timeout=15_000)
    assert page.locator("text=a fleet takes its work").count() == 0
    assert "cache \u2192 queue" in page.locator(".gym-node-edge select").inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "playground-graph.png"), full_page=True)
    page.context.close()


def test_the_first_paint_needs_no_script(browser: Any, server: str) -> None:
    """The server's HTML shows the run (verdict, SLOs, the busiest component) before any
    script runs; the drawn page replaces it."""
    plain = browser.new_context(viewport={"width": 1400, "height": 900}, java_script_enabled=False)
    page = plain.new_page()
    page.goto(server)
    first = page.locator("#gym-first-paint")
    assert first.locator("text=reference").count() >= 1
    assert "PASS" in first.inner_text() and "peak_saturation" in first.inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "playground-first-paint.png"), full_page=True)
    plain.close()
    drawn = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    drawn.goto(server)
    drawn.wait_for_selector("[data-verdict='PASS']", timeout=30_000)
    drawn.wait_for_function("() => !document.getElementById('gym-first-paint')")
    drawn.context.close()


def test_two_users_do_not_see_each_others_changes(browser: Any, server: str, page: Any) -> None:
    other = browser.new_context(viewport={"width": 1400, "height": 1400}).new_page()
    other.goto(server)
    other.wait_for_selector("[data-verdict='PASS']", timeout=30_000)
    box = page.locator(".gym-input-fetchers-replicas input")
    box.fill("2")
    box.press("Enter")
    _verdict(page, "FAIL")
    time.sleep(0.5)
    assert other.locator("[data-verdict]").get_attribute("data-verdict") == "PASS"
    assert other.locator(".gym-input-fetchers-replicas input").input_value() == "4"
    other.context.close()


def test_open_a_design_file(page: Any, tmp_path: Path) -> None:
    page.locator(".gym-open input[type=file]").set_input_files(str(ROOT / "designs/starter.yaml"))
    _verdict(page, "FAIL")
    page.wait_for_selector("text=starter", timeout=15_000)
    assert page.locator(".gym-input-fetchers-replicas input").input_value() == "3"
    box = page.locator(".gym-input-fetchers-replicas input")
    box.fill("6")
    box.press("Enter")
    page.wait_for_selector("[data-cost='9']", timeout=15_000)
    # the same file again: back to what it says
    page.locator(".gym-open input[type=file]").set_input_files(str(ROOT / "designs/starter.yaml"))
    page.wait_for_selector("[data-cost='6']", timeout=15_000)
    assert box.input_value() == "3"
    broken = tmp_path / "broken.yaml"
    broken.write_text("frontier: {drain_rps: 10, buffer: 10}\nfetchers: [1,\n")
    page.locator(".gym-open input[type=file]").set_input_files(str(broken))
    page.wait_for_selector("text=error: broken.yaml:", timeout=15_000)
    _verdict(page, "FAIL")  # still the starter
    binary = tmp_path / "image.yaml"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    page.locator(".gym-open input[type=file]").set_input_files(str(binary))
    page.wait_for_selector("text=error: image.yaml: not UTF-8 text", timeout=15_000)


def test_the_request_engine_on_demand(page: Any) -> None:
    page.locator(".gym-engine button", has_text="request").click()
    run = page.locator(".gym-run button")
    page.wait_for_selector(".gym-run button:not([disabled])", timeout=15_000)
    run.click()
    page.wait_for_selector("text=request engine: done.", timeout=60_000)
    assert page.locator("text=request engine ·").count() == 1  # the figures shown are its
    _verdict(page, "PASS")
    page.locator(".gym-engine button", has_text="flow").click()
    page.wait_for_selector("text=flow engine", timeout=15_000)


def test_the_server_survives_bad_requests(server: str, page: Any) -> None:
    """Requests the page never sends do not bring the server down."""
    import urllib.error
    import urllib.request

    for path in ("nope", "ws?bokeh-session-id=x", "static/../../etc/passwd", "%00"):
        try:
            urllib.request.urlopen(server + path, timeout=10).read()
        except urllib.error.HTTPError as err:
            assert 400 <= err.code < 500
    box = page.locator(".gym-input-fetchers-replicas input")
    box.fill("3")
    box.press("Enter")
    _verdict(page, "FAIL")  # still serving


def test_an_optional_section_is_added_from_the_page(page: Any) -> None:
    """Ticking async_writer adds a writer of one unit: its fields appear, the cost is
    8 units; unticking takes it away."""
    page.locator(".gym-sections label", has_text="async_writer").click()
    page.wait_for_selector(".gym-input-async-writer-buffer input", timeout=15_000)
    page.wait_for_selector("[data-cost='8']", timeout=15_000)
    assert page.locator(".gym-input-async-writer-buffer input").input_value() == "100000"
    # the saturation plot has a line for the writer now (5 components before, 6 after)
    lines = "() => Bokeh.documents[0].get_model_by_name('saturation').renderers.length"
    page.wait_for_function(f"() => ({lines})() == 6", timeout=15_000)
    page.locator(".gym-sections label", has_text="async_writer").click()
    page.wait_for_selector("[data-cost='7']", timeout=15_000)
    assert page.locator(".gym-input-async-writer-buffer input").count() == 0


def test_the_plots_keep_their_width_after_an_edit(page: Any) -> None:
    """The plots are laid out at their full width from the first render: the same width
    before and after the first edit (they drew at about half, then jumped), and as
    wide as the results column leaves them (no wide empty margin on the right)."""
    plot = page.locator(".gym-plot-saturation")
    time.sleep(0.5)  # the first layout pass
    before = plot.bounding_box()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "playground-before-edit.png"), full_page=True)
    box = page.locator(".gym-input-fetchers-replicas input")
    box.fill("5")
    box.press("Enter")
    page.wait_for_selector("[data-cost='8']", timeout=15_000)
    time.sleep(0.5)
    after = plot.bounding_box()
    assert before is not None and after is not None
    assert after["width"] == pytest.approx(before["width"], abs=2)
    assert before["x"] + before["width"] > 1400 * 0.85  # the plots reach the right side
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "playground-after-edit.png"), full_page=True)


def test_a_bad_seed_is_said_and_goes(page: Any) -> None:
    """The seed box says what is wrong with what was typed; the message goes once a seed
    holds, even the one running."""
    seed = page.locator(".gym-seed input")
    seed.fill("-1")
    seed.press("Enter")
    page.wait_for_selector("text='-1': a whole number from 0 to", timeout=15_000)
    seed.fill("0")
    seed.press("Enter")
    page.wait_for_function(
        "() => !Bokeh.documents[0].get_model_by_name('run-message').visible", timeout=15_000
    )
    assert page.locator("text=a whole number from 0").count() == 0
    page.wait_for_selector("text=seed 0", timeout=15_000)


def test_a_section_ticked_while_a_field_is_bad_comes_with_its_fields(page: Any) -> None:
    """Retries ticked while replicas is 0 join the design when replicas holds again: their
    fields appear with them."""
    box = page.locator(".gym-input-fetchers-replicas input")
    box.fill("0")
    box.press("Enter")
    page.wait_for_selector("text=must be greater than 0 (got 0)", timeout=15_000)
    page.locator(".gym-sections label", has_text="retries").click()
    box.fill("4")
    box.press("Enter")
    page.wait_for_selector(".gym-input-retries-attempts input", timeout=15_000)
    assert page.locator("text=must be greater than 0").count() == 0


def test_long_words_wrap_in_the_panel(browser: Any, server: str) -> None:
    """A link's long scenario name is cut in its message, which wraps in the panel: the
    page stays as wide as the window."""
    page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    page.goto(server + "?scenario=" + "x" * 5000)
    page.wait_for_selector("[data-verdict='PASS']", timeout=30_000)
    page.wait_for_selector("text=is not one of the scenarios this page offers", timeout=15_000)
    time.sleep(0.5)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400
    page.context.close()
