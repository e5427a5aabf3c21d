"""The CLI against a hostile tester (issue 11): user text through markup engines, options
dropped or conflicting, limits on every option, Dask addresses, and the exit-status
contract. Each test tries several members of its class."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gym.cli import app, guard, render
from gym.explore import optimize, parallel, sweep, unit_space
from tests.conftest import CHAOS, REFERENCE, ROOT, STARTER, forbid_work, stop

runner = CliRunner()

# -- helpers ------------------------------------------------------------------------------


def _invoke(*args: str, **kwargs: Any) -> Any:
    res = runner.invoke(app, list(args), **kwargs)
    assert "Traceback" not in res.output, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res


def _error(*args: str) -> str:
    """Run a command that must be refused: exit 2, one line, no traceback."""
    res = _invoke(*args)
    assert res.exit_code == 2, (args, res.output)
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith(("error: ", "Error: ")), res.stderr
    if lines[0].startswith("error: "):
        assert len(lines) == 1, res.stderr
    return lines[-1]


def _design(tmp: Path, name: str, file: str = "d.yaml") -> Path:
    text = (ROOT / "designs" / "reference.yaml").read_text()
    lines = [line for line in text.splitlines() if not line.startswith("name:")]
    path = tmp / file
    path.write_text(f"name: {json.dumps(name)}\n" + "\n".join(lines) + "\n")
    return path


def _scenario(tmp: Path, name: str, label: str, extra: str = "") -> Path:
    path = tmp / "s.yaml"
    path.write_text(
        f"name: {json.dumps(name)}\nduration_s: 10\nbase_rps: 6000\n"
        f"load:\n  - {{at_s: 0, multiplier: 1.0}}\n"
        f"  - {{at_s: 4, multiplier: 1.5, label: {json.dumps(label)}}}\n"
        "faults:\n  - {kind: stall, at_s: 6, for_s: 2, target: page_store}\n"
        "slos:\n  availability: {min: 0.5}\n" + extra
    )
    return path


# -- class 3: user text is printed literally ------------------------------------------------

MARKUP_NAMES = [
    "[/]",
    "[red]x[/red]",
    "[bold]b",
    r"$\foo$",
    "$x^2$ and _under",
    "_hidden",
    ":smile: :thumbs_up:",
    "<script>alert(1)</script>",
    "50% {braces} \\n",
]


@pytest.mark.parametrize("name", MARKUP_NAMES)
def test_markup_in_names_is_printed_literally(name: str, tmp_path: Path) -> None:
    """A design and a scenario (and a load stage) named with rich markup, math text, emoji
    codes or HTML: every command prints the name as written and judges normally."""
    d = _design(tmp_path, name)
    s = _scenario(tmp_path, name, name)
    res = _invoke("run", str(d), "-s", str(s))
    assert res.exit_code == 0 and name in res.stdout, res.output
    res = _invoke("validate", str(d), "-s", str(s))
    assert res.exit_code == 0 and f"valid design '{name}'" in res.stdout
    res = _invoke("compare", str(d), str(d), "-s", str(s))
    assert res.exit_code == 0 and f"scenario {name}," in res.stdout
    res = _invoke(
        "run", str(d), "-s", str(s), "--runs", "2", "--confidence", "0.3", "--workers", "1"
    )
    assert res.exit_code == 0 and name in res.stdout  # 2 passing runs show 0.3: 2 / 5.84
    res = _invoke("sweep", str(d), "-s", str(s), "--vary", "fetchers.replicas=3..4")
    assert res.exit_code == 0 and f"scenario {name}," in res.stdout
    res = _invoke("estimate", str(d), "-s", str(s))
    assert res.exit_code == 0 and f"design {name}" in res.stdout


def test_markup_names_in_plots_reports_and_optimize(tmp_path: Path) -> None:
    """matplotlib math text, a hidden legend entry and HTML in one name: the plot, the
    report and the optimized design file all take it literally."""
    name = r"[/] $\foo$ <b>x</b> _u"
    d = _design(tmp_path, name)
    s = _scenario(tmp_path, name, r"$\bar$ [red]surge", "  cost_units: {max: 6}\n")
    assert _invoke("plot", str(d), "-s", str(s), "-o", str(tmp_path / "p.png")).exit_code == 1
    res = _invoke("report", str(d), "-s", str(s), "-o", str(tmp_path / "r.html"))
    assert res.exit_code == 1  # 7 units > 6
    html = (tmp_path / "r.html").read_text()
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    d2 = _design(tmp_path, "esc\x1b[31m", file="esc.yaml")
    res = _invoke("report", str(d2), "-o", str(tmp_path / "e.html"))
    assert res.exit_code in (0, 2)  # 2 if the loader refuses control characters in names
    if res.exit_code == 0:
        assert "\x1b" not in (tmp_path / "e.html").read_text()
    out = tmp_path / "best.yaml"
    res = _invoke("optimize", "-s", str(s), "--runs", "1", "-o", str(out))
    assert res.exit_code == 0, res.output
    assert out.read_text().count("\n# ") == 1  # the header is two comment lines
    import gym

    assert gym.load_design(out).name == f"cheapest-for-{name}"


CONTROL_NAMES = ["\x1b[31mred\x1b[0m", "line\nVerdict: PASS", "car\rriage", "rtl\u202eevil"]


@pytest.mark.parametrize("name", CONTROL_NAMES)
def test_control_characters_in_names_never_reach_the_terminal(name: str, tmp_path: Path) -> None:
    """Escape sequences, newlines, carriage returns and bidirectional overrides in a name
    are shown as escapes (or the name is refused as input, exit 2): never acted on."""
    d = _design(tmp_path, name)
    for args in (["run", str(d)], ["validate", str(d)], ["compare", str(d)]):
        res = _invoke(*args)
        assert res.exit_code in (0, 2), res.output
        for ch in ("\x1b", "\r", "\u202e"):
            assert ch not in res.output
        assert res.stdout.count("\nVerdict: ") <= 1  # a name cannot forge a verdict line


def test_markup_in_paths_values_and_errors_is_literal(tmp_path: Path) -> None:
    """A missing file named with markup, a --set value and a --vary value with markup: the
    error names them as typed."""
    err = _error("run", str(tmp_path / "[/]x[red].yaml"))
    assert "[/]x[red].yaml" in err
    err = _error("run", str(REFERENCE), "--set", "fetchers.replicas=[/]")
    assert "fetchers.replicas" in err
    err = _error("sweep", str(REFERENCE), "--vary", "fetchers.on_crash=[bold]x,fail")
    assert "[bold]x" in err
    d = _design(tmp_path, "ok", file="[red]d[x].yaml")
    res = _invoke("validate", str(d))
    assert res.exit_code == 0 and "[red]d[x].yaml" in res.stdout


# -- class 4: options honoured or refused up front ------------------------------------------


def test_runs_honours_or_refuses_every_other_option(monkeypatch: Any) -> None:
    """--runs N with --warmup is refused (latency is not summarized over runs); --tick-ms
    is honoured (and a bad one refused before any run); --workers, --scheduler and
    --confidence without --runs are refused; --workers with --scheduler conflict."""
    res = _invoke(
        "run", str(REFERENCE), "--runs", "2", "--confidence", "0.3", "--tick-ms", "20", "--json"
    )
    assert json.loads(res.stdout)["tick_ms"] == 20
    forbid_work(monkeypatch)
    assert "--warmup" in _error(
        "run", str(REFERENCE), "--runs", "2", "--confidence", "0.3", "--warmup", "5"
    )
    assert "--tick-ms: 7" in _error(
        "run", str(REFERENCE), "--runs", "2", "--confidence", "0.3", "--tick-ms", "7"
    )
    for extra in (
        ["--workers", "1"],
        ["--scheduler", "tcp://127.0.0.1:1"],
        ["--confidence", "0.5"],
    ):
        assert extra[0] in _error("run", str(REFERENCE), *extra)
    err = _error(
        "run",
        str(REFERENCE),
        "--runs",
        "2",
        "--confidence",
        "0.3",
        "--workers",
        "1",
        "--scheduler",
        "tcp://h:1",
    )
    assert "--scheduler" in err
    assert "--confidence" in _error(
        "sweep", str(REFERENCE), "--vary", "fetchers.replicas=3..4", "--confidence", "0.9"
    )


@pytest.mark.parametrize(
    "varies",
    [
        ["fetchers.nope=1..3"],  # a path the design does not have
        ["nope=1,2"],
        ["fetchers.replicas=3,x"],  # a value of the wrong type
        ["fetchers.replicas=0..3"],  # a value out of range
        ["cache.hit_ratio=0.5,1.5"],
        ["fetchers.replicas=3..4", "fetchers.replicas=5,6"],  # the same path twice
        ["fetchers.replicas=3..4", " fetchers . replicas =5,6"],  # spelled differently
        ["cache=null", "cache.hit_ratio=0.5,0.6"],  # a section and its field
        ["fetchers.replicas=3,4,3"],  # a value twice
        ["fetchers.replicas="],
        ["fetchers.replicas=4..3"],
        ["fetchers.replicas=1..9:0"],
        ["fetchers.replicas=1.5..3"],
        ["=1,2"],
        ["fetchers..replicas=1,2"],
        ["fetchers.replicas"],
    ],
)
def test_sweep_refuses_bad_vary_before_running(varies: list[str], monkeypatch: Any) -> None:
    """A --vary that names no field, gives a value the file would refuse, or repeats a
    path or value is an input error (exit 2), not a sweep of "invalid" rows exiting 0."""
    monkeypatch.setattr(sweep, "run", lambda *a, **k: pytest.fail("the sweep ran"))
    args = [x for v in varies for x in ("--vary", v)]
    err = _error("sweep", str(REFERENCE), *args)
    assert "--vary" in err and "--set" not in err


def test_sweep_vary_conflicting_with_set_is_refused(monkeypatch: Any) -> None:
    """--vary and --set on the same field (or a section of it): refused."""
    forbid_work(monkeypatch)
    for sets in ("fetchers.replicas=2", "fetchers={replicas: 2, rps_per_replica: 4000}"):
        err = _error("sweep", str(REFERENCE), "--vary", "fetchers.replicas=3..4", "--set", sets)
        assert "--set" in err


def test_options_that_would_do_nothing_are_refused(monkeypatch: Any) -> None:
    """--force without the output it is about, --confidence with one run per candidate,
    --max-urls with the flow engine: refused, not silently ignored."""
    forbid_work(monkeypatch)
    assert "--force" in _error("run", str(REFERENCE), "--force")
    assert "--force" in _error(
        "sweep", str(REFERENCE), "--vary", "fetchers.replicas=3..4", "--force"
    )
    assert "--force" in _error("optimize", "--force")
    assert "--confidence" in _error("optimize", "--runs", "1", "--confidence", "0.5")
    for command in (
        ["run", str(REFERENCE)],
        ["compare", str(REFERENCE)],
        ["sweep", str(REFERENCE), "--vary", "fetchers.replicas=3..4"],
    ):
        assert "--engine request" in _error(*command, "--max-urls", "10")


RUN_OPTIONS = {
    "runs": ["--runs", "2", "--confidence", "0.3"],
    "json": ["--json"],
    "out": ["--out", "OUT"],
    "request": ["--engine", "request"],
    "warmup": ["--warmup", "1"],
    "bad tick": ["--tick-ms", "7"],
    "workers": ["--workers", "1"],
    "force": ["--force"],
}


def _expected_refusal(chosen: set[str]) -> bool:
    return (
        {"runs", "warmup"} <= chosen
        or "bad tick" in chosen
        or ("workers" in chosen and "runs" not in chosen)
        or ("force" in chosen and "out" not in chosen)
    )


def test_every_run_option_with_every_other(tmp_path: Path) -> None:
    """All 256 combinations of eight gym run options on a small scenario: each is honoured
    (exit 0/1; --json is one object; --out gets its files) or refused in one line (exit
    2), never a traceback, never silently half-done."""
    import itertools

    s = _scenario(tmp_path, "small", "surge").read_text().replace("6000", "500")
    small = tmp_path / "small.yaml"
    small.write_text(s)
    names = list(RUN_OPTIONS)
    for n, combo in enumerate(itertools.product([False, True], repeat=len(names))):
        chosen = {name for name, on in zip(names, combo, strict=True) if on}
        out = tmp_path / f"out{n}"
        args = ["run", str(REFERENCE), "-s", str(small)]
        for name in sorted(chosen):
            args += [str(out) if a == "OUT" else a for a in RUN_OPTIONS[name]]
        res = _invoke(*args)
        if _expected_refusal(chosen):
            assert res.exit_code == 2, (chosen, res.output)
            assert not out.exists()
            continue
        assert res.exit_code in (0, 1), (chosen, res.output)
        if "json" in chosen:
            data = json.loads(res.stdout)
            assert ("runs" in data) == ("runs" in chosen)
        if "out" in chosen:
            written = {p.name for p in out.iterdir()}
            assert "summary.json" in written
            assert ("runs.csv" in written) == ("runs" in chosen)


def test_catalog_limits_stay_rows_not_errors() -> None:
    """A value the design file accepts but the scenario's catalog forbids is a result of the
    sweep (an invalid row), not an input error."""
    res = _invoke("sweep", str(REFERENCE), "--vary", "fetchers.rps_per_replica=4000,5000")
    assert res.exit_code == 0 and "invalid" in res.stdout


def test_optimize_refuses_searches_that_cannot_find_anything(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Too few runs for the confidence, a confidence of 1, a --max-cost over the cost SLO,
    a cost SLO under 4 units: refused before the search."""
    forbid_work(monkeypatch)
    assert "--runs 16" in _error("optimize", "--runs", "5")
    assert "--runs 35" in _error("optimize", "--runs", "20", "--confidence", "0.9")
    assert "--confidence" in _error("optimize", "--confidence", "1")
    assert "--max-cost" in _error("optimize", "--max-cost", "12")
    s = _scenario(tmp_path, "cheap", "surge", "  cost_units: {max: 3}\n")
    assert "cost_units" in _error("optimize", "-s", str(s))


def test_json_with_every_other_option(tmp_path: Path) -> None:
    """--json with -o/--out, --runs, --set and --engine: stdout is one JSON object (or
    list); messages go to stderr; the exit status is the verdict."""
    res = _invoke("run", str(STARTER), "--json", "--out", str(tmp_path / "a"), "--seed", "2")
    assert res.exit_code == 1 and json.loads(res.stdout)["seed"] == 2
    assert "wrote" in res.stderr
    res = _invoke(
        "run",
        str(REFERENCE),
        "--json",
        "--runs",
        "2",
        "--confidence",
        "0.3",
        "--workers",
        "1",
        "--set",
        "fetchers.replicas=5",
    )
    assert json.loads(res.stdout)["cost_units"] == 8
    res = _invoke(
        "sweep",
        str(REFERENCE),
        "--vary",
        "fetchers.replicas=1..2",
        "--json",
        "-o",
        str(tmp_path / "rows.csv"),
    )
    assert res.exit_code == 1 and len(json.loads(res.stdout)) == 2
    res = _invoke("compare", str(REFERENCE), "--json", "--engine", "request", "--seed", "1")
    assert res.exit_code == 0 and json.loads(res.stdout)["engine"] == "request"


# -- class 5: limits on every option, checked before allocation -----------------------------


def test_limits_on_options_are_checked_before_any_work(monkeypatch: Any) -> None:
    """--runs, --workers, --vary ranges and grids, --max-runs and compare's design count:
    refused before anything is loaded or built."""
    forbid_work(monkeypatch)
    assert "100,000" in _error("run", str(REFERENCE), "--runs", "1000000")
    assert "100,000" in _error("sweep", str(REFERENCE), "--vary", "x=1..2", "--runs", "200000")
    assert "cores" in _error(
        "run", str(REFERENCE), "--runs", "2", "--confidence", "0.3", "--workers", "300"
    )
    assert "cores" in _error(
        "sweep", str(REFERENCE), "--vary", "fetchers.replicas=3..4", "--workers", "100000"
    )
    err = _error("sweep", str(REFERENCE), "--vary", "fetchers.replicas=1..1000000000000")
    assert "1,000,000,000,000 values" in err
    err = _error(
        "sweep",
        str(REFERENCE),
        "--vary",
        "fetchers.replicas=1..1000",
        "--vary",
        "frontier.buffer=1..1000",
    )
    assert "1,000,000 points" in err
    err = _error(
        "sweep",
        str(REFERENCE),
        "--vary",
        "fetchers.replicas=1..100",
        "--runs",
        "16",
        "--max-runs",
        "1599",
    )
    assert "--max-runs 1600" in err
    err = _error(
        "sweep", str(REFERENCE), "--vary", "fetchers.replicas=1..40", "--engine", "request"
    )
    assert "--max-urls" in err
    for opt in ("--pages-per-s", "--page-kb", "--urls", "--compression"):
        _error("estimate", opt, "1e308")
    many = [str(REFERENCE)] * 51
    assert "limit is 50" in _error("compare", *many)
    assert "--max-urls" in _error(
        "compare", str(REFERENCE), str(STARTER), "--engine", "request", "--max-urls", "400000"
    )
    assert "--seed" in _error("run", str(REFERENCE), "--seed", str(2**63))
    assert "--seed" in _error(
        "run",
        str(REFERENCE),
        "--seed",
        str(2**63 - 1),
        "--runs",
        "2",
        "--confidence",
        "0.3",
        "--workers",
        "1",
    )
    for opt, value in (
        ("--seed", "-1"),
        ("--confidence", "nan"),
        ("--confidence", "2"),
        ("--runs", "0"),
        ("--workers", "0"),
        ("--max-runs", "0"),
    ):
        _error("run", str(REFERENCE), opt, value)


def test_optimize_search_space_is_computed_not_tried(tmp_path: Path, monkeypatch: Any) -> None:
    """A scenario without a cost SLO and --max-cost 1000: C(1001, 5) designs are refused at
    once with how to allow them."""
    forbid_work(monkeypatch)
    s = _scenario(tmp_path, "open", "surge")
    err = _error("optimize", "-s", str(s), "--max-cost", "1000")
    assert "--max-runs" in err and "designs" in err
    assert unit_space.designs_up_to(9) == sum(len(unit_space.unit_sets(c)) for c in range(4, 10))


def test_the_python_api_has_the_same_limits() -> None:
    """The limits hold on the API too: optimize.search on a huge or hopeless space and
    run_many over a million seeds raise GymError before running anything."""
    import gym
    from gym.core.errors import GymError
    from gym.explore.montecarlo import run_many

    sc = gym.load_scenario(CHAOS)
    with pytest.raises(GymError, match="--max-runs"):
        optimize.search(
            sc.model_copy(update={"slos": sc.slos.model_copy(update={"cost_units": None})}),
            max_cost=1000,
        )
    with pytest.raises(GymError, match="--runs 16"):
        optimize.search(sc, runs=5)
    with pytest.raises(GymError, match="100,000"):
        run_many(gym.load_design(REFERENCE), sc, runs=1_000_000)


def test_many_runs_share_one_copy_of_the_inputs() -> None:
    """Tasks for many seeds share the dumped design and scenario (memory per run is the
    seed), so --runs 100000 does not hold 100,000 copies."""
    import gym
    from gym.explore.montecarlo import tasks_for

    tasks = tasks_for(gym.load_design(REFERENCE), gym.load_scenario(CHAOS), range(5))
    assert all(t.design is tasks[0].design and t.scenario is tasks[0].scenario for t in tasks)


# -- class 7: Dask addresses ----------------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "notaurl",
        "tcp://",
        "tcp://host",
        "tcp://host:port",
        "tcp://h:99999",
        "tcp://h:8\u00b2",
        "http://h:80",
        "",
    ],
)
def test_bad_scheduler_addresses_are_one_line(address: str, monkeypatch: Any) -> None:
    """A scheduler address that is not SCHEME://HOST:PORT: exit 2 before anything runs."""
    forbid_work(monkeypatch)
    err = _error(
        "sweep", str(REFERENCE), "--vary", "fetchers.replicas=3..4", "--scheduler", address
    )
    assert "--scheduler" in err


def test_nothing_listening_or_an_unknown_host_is_reported_at_once(monkeypatch: Any) -> None:
    """A refused connection or a host that does not resolve: exit 2 naming the address
    (found by a plain connection, not after Dask's connection timeout)."""
    pytest.importorskip("distributed")
    forbid_work(monkeypatch)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    for address in (f"tcp://127.0.0.1:{port}", "tcp://no-such-host.invalid:8786"):
        err = _error(
            "run", str(REFERENCE), "--runs", "2", "--confidence", "0.3", "--scheduler", address
        )
        assert address in err and "nothing answers" in err


@pytest.mark.parametrize("banner", [b"", b"SSH-2.0-OpenSSH_9.0\r\n", b"HTTP/1.1 400 Bad\r\n\r\n"])
def test_a_listener_that_is_not_dask_does_not_hang(banner: bytes, monkeypatch: Any) -> None:
    """Something that accepts the connection and then says nothing, or says something
    that is not Dask (an SSH banner, an HTTP reply): exit 2 within the timeouts, naming
    the address."""
    pytest.importorskip("distributed")
    monkeypatch.setattr(parallel, "DASK_TIMEOUT_S", 1.0)
    monkeypatch.setattr(parallel, "DASK_GREETING_S", 0.5)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn = server.accept()[0]
                if banner:
                    conn.sendall(banner)
                held.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        err = _error(
            "run",
            str(REFERENCE),
            "--runs",
            "2",
            "--confidence",
            "0.3",
            "--scheduler",
            f"tcp://127.0.0.1:{port}",
        )
        assert f"127.0.0.1:{port}" in err and "not a Dask scheduler" in err
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()


def test_a_scheduler_without_workers_is_refused(tmp_path: Path, monkeypatch: Any) -> None:
    """A real Dask scheduler with no worker: exit 2 after the wait, not work queued forever."""
    pytest.importorskip("distributed")
    import os
    import shutil
    import subprocess
    import sys
    import time

    dask = shutil.which("dask", path=os.path.dirname(sys.executable)) or shutil.which("dask")
    if dask is None:
        pytest.skip("the dask command is not installed")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sched = subprocess.Popen(
        [dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:  # wait until the scheduler listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        # only the wait for a worker is shortened: connecting keeps its deadline, which a
        # loaded machine can need in full
        monkeypatch.setattr(parallel, "DASK_WORKER_WAIT_S", 2.0)
        err = _error(
            "sweep",
            str(REFERENCE),
            "--vary",
            "fetchers.replicas=3..4",
            "--scheduler",
            f"tcp://127.0.0.1:{port}",
        )
        assert "no workers" in err
    finally:
        stop(sched)


# -- class 8: the exit-status contract ------------------------------------------------------


def test_judging_commands_exit_with_the_verdict(tmp_path: Path) -> None:
    """compare, plot and report: 0 when every design passes, 1 when any fails; sweep: 0
    when some point passes, 1 when none does; optimize: 0 when found."""
    assert _invoke("compare", str(REFERENCE)).exit_code == 0
    assert _invoke("compare", str(REFERENCE), str(STARTER)).exit_code == 1
    assert _invoke("compare", str(REFERENCE), str(STARTER), "--json").exit_code == 1
    assert _invoke("plot", str(REFERENCE), "-o", str(tmp_path / "a.png")).exit_code == 0
    assert _invoke("plot", str(STARTER), "-o", str(tmp_path / "b.png")).exit_code == 1
    assert _invoke("report", str(REFERENCE), "-o", str(tmp_path / "a.html")).exit_code == 0
    assert _invoke("report", str(STARTER), "-o", str(tmp_path / "b.html")).exit_code == 1
    assert _invoke("sweep", str(REFERENCE), "--vary", "fetchers.replicas=3..4").exit_code == 0
    assert _invoke("sweep", str(REFERENCE), "--vary", "fetchers.replicas=1..2").exit_code == 1


@pytest.mark.parametrize(
    "args",
    [
        ["run", str(REFERENCE)],
        ["compare", str(REFERENCE)],
        ["validate", str(REFERENCE)],
        ["estimate"],
        ["sweep", str(REFERENCE), "--vary", "fetchers.replicas=3..4"],
    ],
)
def test_an_internal_error_exits_3_in_one_line(args: list[str], monkeypatch: Any) -> None:
    """A bug is not a FAIL: exit 3, one line, the traceback only with --debug."""
    import gym.analysis.estimate
    import gym.api
    import gym.inputs.loading

    def bug(*a: Any, **k: Any) -> Any:
        raise ZeroDivisionError("boom")

    # the commands load it from there, or with a design through the API's load_inputs
    monkeypatch.setattr(gym.inputs.loading, "load_scenario", bug)
    monkeypatch.setattr(gym.api, "load_scenario", bug)
    monkeypatch.setattr(gym.analysis.estimate, "estimate", bug)
    res = _invoke(*args)
    assert res.exit_code == 3
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "internal error: ZeroDivisionError: boom" in lines[0]
    res = runner.invoke(app, [*args, "--debug"])
    assert res.exit_code == 3 and "Traceback" in res.stderr
    monkeypatch.setenv("GYM_DEBUG", "1")
    assert "Traceback" in runner.invoke(app, args).stderr


def test_a_closed_pipe_is_not_a_verdict(monkeypatch: Any) -> None:
    """`gym run ... | head`: the reader went away; exit 141, not 1 (FAIL) or a traceback."""

    def closed(*a: Any, **k: Any) -> Any:
        raise BrokenPipeError

    monkeypatch.setattr(render, "print_result", closed)
    monkeypatch.setattr(guard, "discard_stdout", lambda: None)
    res = runner.invoke(app, ["run", str(REFERENCE)])
    assert res.exit_code == 141 and "Traceback" not in res.output


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("redirect", ["full", "closed"])
def test_unwritable_stdout_is_exit_74_not_a_bug(redirect: str) -> None:
    """`gym run ... > /dev/full` or with stdout closed: the result cannot be printed. Not a
    verdict (0/1), not a gym bug (3): exit 74 (EX_IOERR) and one line naming stdout. A
    real process, so the write really fails."""
    import subprocess
    import sys

    code = "import sys; from gym.cli import main; sys.argv = ['gym', 'run', sys.argv[1]]; main()"
    stdout: Any = open("/dev/full", "w") if redirect == "full" else subprocess.DEVNULL  # noqa: SIM115
    cmd = [sys.executable, "-c", code, str(REFERENCE)]
    if redirect == "closed":
        cmd = ["sh", "-c", '"$0" "$@" >&-', *cmd]
    try:
        res = subprocess.run(
            cmd, stdout=stdout, capture_output=False, stderr=subprocess.PIPE, text=True, timeout=120
        )
    finally:
        if redirect == "full":
            stdout.close()
    assert res.returncode == 74, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("cannot write to standard output: "), lines
    assert "Traceback" not in res.stderr


# -- found by the second hostile pass ----------------------------------------------------


@pytest.mark.parametrize("as_json", [False, True])
def test_an_interrupted_sweep_prints_what_it_finished(monkeypatch: Any, as_json: bool) -> None:
    """Ctrl-C during a sweep without -o: the finished points are printed (table or JSON),
    the others marked "not run", and the exit status is 130 (they were lost before)."""
    ok = {
        "fetchers.replicas": 3,
        "status": "ok",
        "cost_units": 7,
        "throughput_rps_mean": 7000.0,
        "throughput_rps_pass_rate": 1.0,
        "runs": 1,
        "pass_probability": 1.0,
        "pass_ci_low": 0.2,
        "pass_ci_high": 1.0,
        "verdict": "pass",
    }
    not_run = {"fetchers.replicas": 4, "status": "not run", "error": "interrupted"}

    def interrupted(*a: Any, **k: Any) -> Any:
        raise sweep.SweepInterrupted([ok, not_run])

    monkeypatch.setattr(sweep, "run", interrupted)
    args = ["sweep", str(REFERENCE), "--vary", "fetchers.replicas=3,4"]
    res = _invoke(*args, *(["--json"] if as_json else []))
    assert res.exit_code == 130, res.output
    assert "interrupted: 1 of 2 points finished" in res.stderr
    if as_json:
        assert json.loads(res.stdout) == [ok, not_run]
    else:
        assert "7,000" in res.stdout and "not run" in res.stdout


def test_an_abandoned_save_does_not_claim_the_rows_were_written(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A third Ctrl-C abandons saving an interrupted sweep's rows: the message must say
    they were not written, not "written to rows.csv" for a file that does not exist."""
    out = tmp_path / "rows.csv"

    def interrupted(*a: Any, **k: Any) -> Any:
        raise sweep.SweepInterrupted([{"fetchers.replicas": 3, "status": "not run", "error": "-"}])

    def abandoned(rows: Any, path: Path) -> None:
        raise KeyboardInterrupt  # the third Ctrl-C, during the write

    monkeypatch.setattr(sweep, "run", interrupted)
    monkeypatch.setattr(sweep, "write", abandoned)
    res = _invoke("sweep", str(REFERENCE), "--vary", "fetchers.replicas=3,4", "-o", str(out))
    assert res.exit_code == 130, res.output
    assert not out.exists()
    assert "written to" not in res.stderr.replace("not written to", ""), res.stderr
    assert "not written" in res.stderr


@pytest.mark.parametrize(
    "vary", ["fetchers.replicas=3,3.0", "fetchers.replicas=4,4e0", "frontier.drain_rps=30000,3e4"]
)
def test_a_number_listed_twice_in_another_spelling_is_refused(vary: str) -> None:
    """`3` and `3.0` (or `30000` and `3e4`) are the same point: the sweep would run it
    twice, so the value counts as listed twice, like `3,03` and `0.5,5e-1`."""
    assert "listed twice" in _error("sweep", str(REFERENCE), "--vary", vary)


def test_true_and_one_are_still_different_values() -> None:
    """The type still matters where it makes a different value: true is not 1."""
    assert sweep.parse_vary("dedup.content_hash=true,1")[1] == [True, 1]


@pytest.mark.parametrize(
    "sets",
    [
        ["fetchers.replicas=4", "fetchers.replicas=5"],
        ["fetchers.replicas=4", " fetchers . replicas =5"],
        ["fetchers={replicas: 3, rps_per_replica: 4000}", "fetchers.replicas=5"],
        ["async_writer.buffer=1000", "async_writer={buffer: 2000}"],
    ],
)
def test_a_field_set_twice_is_refused_not_silently_dropped(sets: list[str]) -> None:
    """Two --set for one field (however spelled, or a section and one of its fields):
    the later one would silently drop the earlier, so both commands that take --set refuse
    it, as a sweep refuses a field varied twice."""
    args = [a for s in sets for a in ("--set", s)]
    for command in (["validate"], ["run"], ["estimate"]):
        assert "set the same field" in _error(*command, str(REFERENCE), *args)


def test_different_fields_of_one_section_can_each_be_set() -> None:
    res = _invoke(
        "validate",
        str(REFERENCE),
        *("--set", "async_writer.buffer=1000", "--set", "async_writer.flush_ceiling=0.5"),
    )
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("address", ["inproc://x", "inproc://127.0.0.1/1/2"])
def test_an_inproc_scheduler_is_refused_before_connecting(address: str, monkeypatch: Any) -> None:
    """inproc:// names a scheduler inside another Python process, which a new gym process
    can never reach: refused by the option check, not after an attempt to connect that
    ends in Dask's "not enough values to unpack"."""

    def no_connect(*a: Any, **k: Any) -> Any:
        raise AssertionError("must not try to connect")

    monkeypatch.setattr(parallel, "DaskCluster", no_connect)
    for args in (
        ["run", str(REFERENCE), "--runs", "2", "--confidence", "0.3"],
        ["sweep", str(REFERENCE), "--vary", "fetchers.replicas=3,4"],
        ["optimize", "--runs", "16"],
    ):
        assert "inproc://" in _error(*args, "--scheduler", address)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["validate", "nosuch.yaml"], 2),
        (["run", str(REFERENCE), "--set", "fetchers.replicas=0"], 2),
        (["estimate", "--page-kb", "1e300"], 2),
    ],
)
def test_an_unwritable_stderr_keeps_the_exit_status(args: list[str], status: int) -> None:
    """`gym ... 2>/dev/full`: the error line cannot be written, but the exit status must
    still say invalid input (2), not Python's 1 for the failed write, which a CI gate
    reads as FAIL."""
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        res = subprocess.run(
            [sys.executable, "-m", "gym", *args],
            stdout=subprocess.DEVNULL,
            stderr=full,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
    assert res.returncode == status


@pytest.mark.parametrize(
    "value",
    [
        "fetchers.replicas=1",
        " cache . hit_ratio =0.5",
        "frontier.back_queues=5",
        "page_store.rps=1",
        "frontier={drain_rps: 1, buffer: 2}",
    ],
)
def test_optimize_refuses_a_set_the_search_would_drop(value: str, monkeypatch: Any) -> None:
    """`optimize DESIGN --set fetchers.replicas=1`: the search chooses the replicas (and
    the other unit-aligned figures) of every candidate, so the value was silently dropped;
    it is refused before anything runs."""

    def ran(*a: Any, **k: Any) -> Any:
        raise AssertionError("must not search")

    monkeypatch.setattr(optimize, "search", ran)
    err = _error("optimize", str(REFERENCE), "--runs", "16", "--set", value)
    assert "--set" in err and "optimizer chooses" in err


def test_optimize_takes_a_set_the_base_keeps(monkeypatch: Any) -> None:
    """What the base keeps (service times, crash policy, dedup, a writer's flush ceiling)
    may still be set."""
    seen: dict[str, Any] = {}

    def ran(scenario: Any, **k: Any) -> Any:
        seen.update(k)
        raise KeyboardInterrupt

    monkeypatch.setattr(optimize, "search", ran)
    res = _invoke(
        "optimize",
        str(REFERENCE),
        "--runs",
        "16",
        *("--set", "fetchers.service.mean_ms=100", "--set", "fetchers.on_crash=requeue"),
        *("--set", "async_writer={buffer: 1, flush_ceiling: 0.5}"),
    )
    assert res.exit_code == 130, res.output
    base = seen["base"]
    assert base.fetchers.service.mean_ms == 100 and base.async_writer.flush_ceiling == 0.5


def test_a_bad_vary_value_is_found_without_loading_every_other_point(
    monkeypatch: Any,
) -> None:
    """`--vary fetchers.replicas=1..100000 --vary frontier.drain_rps=abc` took 14 s (one
    file read and load per value) before refusing `abc`, and a list of 20,000 values took
    minutes (a quadratic duplicate check): the base is read once, the ends of every axis
    and the short axes are tried first, and duplicates are found in one pass."""
    from gym.core.errors import GymError

    reads, loads = [0], [0]
    real_read, real_load = sweep.read_yaml, sweep.load_design

    def counted_read(*a: Any, **k: Any) -> Any:
        reads[0] += 1
        return real_read(*a, **k)

    def counted_load(*a: Any, **k: Any) -> Any:
        loads[0] += 1
        return real_load(*a, **k)

    monkeypatch.setattr(sweep, "read_yaml", counted_read)
    monkeypatch.setattr(sweep, "load_design", counted_load)
    err = _error(
        "sweep",
        str(REFERENCE),
        "--vary",
        "fetchers.replicas=1..100000",
        "--vary",
        "frontier.drain_rps=abc",
    )
    assert "abc" in err and reads[0] == 1 and loads[0] <= 4, (reads, loads)
    many = ",".join(str(i) for i in range(1, 20_001))
    assert len(sweep.parse_vary(f"fetchers.replicas={many}")[1]) == 20_000
    with pytest.raises(GymError, match="listed twice"):  # found in the same single pass
        sweep.parse_vary(f"fetchers.replicas={many},20000.0")


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("bad\nfake.yaml", "bad\\nfake.yaml"),
        ("my  design.yaml", "my  design.yaml"),
        ("a\tb.yaml", "a\\tb.yaml"),
    ],
)
def test_a_file_name_in_an_error_is_shown_as_written(name: str, shown: str, tmp_path: Path) -> None:
    """A path's newline became a space and two spaces one ("bad fake.yaml: file not
    found"), naming a file that is not the one given: the file is shown as written, its
    control characters as escapes."""
    err = _error("validate", str(tmp_path / name))
    assert f"{tmp_path}/{shown}: file not found" in err, err


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("report", "x.html/"),
        ("plot", "fig.png/"),
        ("sweep", "rows.csv/"),
        ("optimize", "best.yaml/"),
    ],
)
def test_a_file_output_ending_in_a_slash_is_refused(
    command: str, name: str, tmp_path: Path, monkeypatch: Any
) -> None:
    """``-o x.html/`` names a directory; Path() drops the slash, and the report used to be
    written to a file called x.html. Refused before any work, nothing written."""
    monkeypatch.chdir(tmp_path)
    args = {
        "report": ["report", str(REFERENCE)],
        "plot": ["plot", str(REFERENCE)],
        "sweep": ["sweep", str(REFERENCE), "--vary", "fetchers.replicas=3,4"],
        "optimize": ["optimize", "--scenario", str(CHAOS)],
    }[command]
    message = _error(*args, "-o", name)
    assert name in message and "slash" in message
    assert list(tmp_path.iterdir()) == []
