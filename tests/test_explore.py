"""Exploring designs: --set what-ifs, many seeds, sweeps, the optimizer, the executors."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

import gym
from gym.cli import app
from gym.explore import optimize, sweep
from gym.explore.montecarlo import run_many, runs_needed, wilson
from gym.explore.parallel import LocalPool, Serial
from tests.conftest import CHAOS, REFERENCE, ROOT, design, scenario, stop

runner = CliRunner()


@pytest.mark.parametrize(
    ("passes", "n", "low", "high"),
    [
        # Wilson score interval, z = 1.96: hand-computable from
        # (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)
        (0, 10, 0.0, 0.27753),
        (10, 10, 0.72247, 1.0),
        (5, 10, 0.23659, 0.76341),
        (20, 20, 0.83887, 1.0),
        (81, 100, 0.72221, 0.87485),  # centre 0.79853, half-width 0.07632
    ],
)
def test_wilson_interval_on_known_counts(passes: int, n: int, low: float, high: float) -> None:
    """The 95% Wilson interval on known counts."""
    got = wilson(passes, n)
    assert got == pytest.approx((low, high), abs=1e-5)


def test_runs_needed_for_a_confidence() -> None:
    """All-pass lower bound is n / (n + z^2): 16 runs reach 0.8 (0.806), 15 do not (0.796)."""
    assert runs_needed(0.8) == 16
    assert wilson(16, 16)[0] == pytest.approx(16 / (16 + 1.959963984540054**2))


def test_set_changes_the_design_and_is_validated(tmp_path: Path) -> None:
    """--set is a what-if on the file, checked like the file; a bad one names --set."""
    d = gym.load_design(REFERENCE, ["cache.hit_ratio=0.6", "fetchers.replicas=5"])
    assert (d.cache.hit_ratio, d.fetchers.replicas) == (0.6, 5)
    res = runner.invoke(app, ["run", str(REFERENCE), "--set", "cache.hit_ratio=1.5"])
    assert res.exit_code == 2
    assert "cache.hit_ratio" in res.stderr and "--set cache.hit_ratio=1.5" in res.stderr
    res = runner.invoke(app, ["run", str(REFERENCE), "--set", "fetchers.replicas=3", "--json"])
    assert res.exit_code == 1 and json.loads(res.stdout)["metrics"]["cost_units"] == 6


def test_runs_summarize_seeds_and_decide_by_the_rule() -> None:
    """--runs N: the seeds are seed..seed+N-1, each a plain run; the JSON has the pass
    probability, its interval and the per-SLO spread."""
    res = runner.invoke(
        app, ["run", str(REFERENCE), "--runs", "16", "--seed", "3", "--json", "--workers", "1"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["seeds"] == list(range(3, 19))
    assert data["pass_probability"] == 1.0
    assert data["pass_probability_ci"] == pytest.approx([16 / (16 + 1.96**2), 1.0], abs=1e-3)
    avail = next(s for s in data["slos"] if s["name"] == "availability")
    single = [gym.simulate(REFERENCE, CHAOS, seed=s).metrics.availability for s in range(3, 19)]
    assert avail["mean"] == pytest.approx(sum(single) / len(single))
    assert avail["min"] == pytest.approx(min(single))


def test_few_runs_cannot_clear_the_confidence() -> None:
    """10 passing runs give a Wilson lower bound of 10 / (10 + 1.96^2) = 0.72 < 0.8; 16
    give 0.806, the fewest that can: so fewer than 16 are refused before any work, by
    every command that takes --runs (one rule), exit 2, naming the least. One run keeps
    its own verdict; diff needs the rule on both sides."""
    from gym.explore.montecarlo import runs_needed

    assert runs_needed(0.8) == 16 and runs_needed(0.9) == 35
    sweep_args = ["sweep", str(REFERENCE), "--vary", "fetchers.replicas=3..4"]
    for args in (
        ["run", str(REFERENCE)],
        sweep_args,
        ["optimize"],
        ["diff", str(REFERENCE), str(REFERENCE)],
    ):
        res = runner.invoke(app, [*args, "--runs", "10"])
        assert res.exit_code == 2, args
        assert res.stderr.startswith("error: --runs: 10 runs cannot show a pass probability")
        assert "use --runs 16 or more" in res.stderr and res.stdout == ""
    res = runner.invoke(app, ["run", str(REFERENCE), "--runs", "20", "--confidence", "0.9"])
    assert res.exit_code == 2 and "use --runs 35 or more" in res.stderr
    assert runner.invoke(app, ["run", str(REFERENCE), "--runs", "16"]).exit_code == 0
    with pytest.raises(gym.GymError, match="use --runs 16 or more"):
        run_many(gym.load_design(REFERENCE), gym.load_scenario(CHAOS), runs=10)


def test_sweep_rows_equal_individual_runs() -> None:
    """Each row's means are those of plain runs of that design over the same seeds."""
    sc = gym.load_scenario(CHAOS)
    points = sweep.grid(REFERENCE, ["fetchers.replicas=3..4", "cache.hit_ratio=0.6,0.92"])
    rows = sweep.run(points, sc, runs=2, confidence=0.3, seed=5)
    assert len(rows) == 4
    for row in rows:
        d = gym.load_design(
            REFERENCE,
            [
                f"fetchers.replicas={row['fetchers.replicas']}",
                f"cache.hit_ratio={row['cache.hit_ratio']}",
            ],
        )
        single = [gym.simulate(d, sc, seed=s) for s in (5, 6)]
        assert row["availability_mean"] == pytest.approx(
            sum(r.metrics.availability for r in single) / 2
        )
        assert row["cost_units"] == single[0].metrics.cost_units


def test_sweep_marks_invalid_points_and_writes_files(tmp_path: Path) -> None:
    """A point the catalog forbids is a row that says why; -o writes CSV or Parquet."""
    out = tmp_path / "rows.csv"
    res = runner.invoke(
        app,
        ["sweep", str(REFERENCE), "--vary", "fetchers.rps_per_replica=4000,5000", "-o", str(out)],
    )
    assert res.exit_code == 0, res.output
    df = pd.read_csv(out)
    assert list(df["status"]) == ["ok", "invalid"]
    assert "more than one replica can give" in df["error"].iloc[1]
    pytest.importorskip("pyarrow")
    pq = tmp_path / "rows.parquet"
    res = runner.invoke(
        app, ["sweep", str(REFERENCE), "--vary", "fetchers.replicas=3..4", "-o", str(pq)]
    )
    assert res.exit_code == 0
    assert len(pd.read_parquet(pq)) == 2


def test_sweep_is_the_same_on_one_process_and_on_a_pool() -> None:
    """Seeds belong to points, not workers: serial and pooled sweeps give identical rows."""
    sc = gym.load_scenario(CHAOS)
    points = sweep.grid(REFERENCE, ["fetchers.replicas=2..5"])
    serial = sweep.run(points, sc, runs=3, confidence=0.3, executor=Serial())
    pooled = sweep.run(points, sc, runs=3, confidence=0.3, executor=LocalPool(2))
    assert serial == pooled


def test_optimizer_finds_the_hand_worked_answer() -> None:
    """Constant 10,000 URLs/s, SLO peak saturation <= 0.9: fetchers need ceil(10,000 /
    (0.9 x 4,000)) = 3 replicas (83%); one unit each of frontier (33%), cache and store is
    enough. Cheapest: 1 + 3 + 1 + 1 = 6 units; at 5, two replicas run at 125%."""
    sc = scenario(
        duration_s=5,
        base_rps=10_000,
        arrivals="poisson",
        slos={"peak_saturation": {"max": 0.9}, "cost_units": {"max": 12}},
    )
    opt = optimize.search(sc, runs=16)
    assert opt.best is not None
    assert opt.best.units == {
        "frontier": 1,
        "fetchers": 3,
        "cache": 1,
        "page_store": 1,
        "async_writer": 0,
    }
    assert opt.best.cost == 6
    five = opt.cheaper[-1]
    assert five.cost == 5 and five.units["fetchers"] == 2
    assert any("peak_saturation" in line for line in opt.why_nothing_cheaper())
    again = optimize.search(sc, runs=16)
    assert again.to_dict() == opt.to_dict()


@pytest.mark.parametrize(
    ("scenario_file", "runs", "confidence"),
    [
        (CHAOS, 20, 0.8),
        (CHAOS, 12, 0.5),
        (CHAOS, 1, 0.8),
        (ROOT / "scenarios" / "levers" / "freshness.yaml", 20, 0.8),
    ],
)
def test_staged_search_gives_the_answer_of_every_design_running_every_seed(
    scenario_file: Path, runs: int, confidence: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The optimizer stops running a design once it has failed more runs than the
    confidence allows; its answer (best, runner-ups, the best try of each cheaper cost,
    chosen by its first run) is that of running every seed of every design, for a
    fraction of the runs."""
    sc = gym.load_scenario(scenario_file)
    staged = optimize.search(sc, runs=runs, confidence=confidence, max_cost=7, beyond=0)
    monkeypatch.setattr(optimize, "_stages", lambda n: [range(n)])
    every = optimize.search(sc, runs=runs, confidence=confidence, max_cost=7, beyond=0)
    a, b = staged.to_dict(), every.to_dict()
    fewer, all_runs = a.pop("simulations"), b.pop("simulations")
    assert all_runs == b["designs_evaluated"] * runs
    assert fewer < all_runs if runs > 1 else fewer == all_runs
    assert a["found"] and a == b


def test_allowed_failures_is_the_wilson_rule() -> None:
    """At 20 runs and confidence 0.8 one failure already fails the design (19/20 has a
    Wilson lower bound of 0.764); at 100 runs the rule allows a count f that passes where
    f + 1 does not."""
    from gym.explore.montecarlo import wilson

    assert wilson(19, 20)[0] == pytest.approx(0.7639, abs=1e-4)
    assert optimize.allowed_failures(20, 0.8) == 0
    assert optimize.allowed_failures(1, 0.8) == 0
    f = optimize.allowed_failures(100, 0.8)
    assert wilson(100 - f, 100)[0] >= 0.8 > wilson(99 - f, 100)[0]


def test_optimize_cli_on_the_crawler_scenario(tmp_path: Path) -> None:
    """gym optimize: a passing design of at most 7 units, written as a loadable design."""
    out = tmp_path / "best.yaml"
    res = runner.invoke(app, ["optimize", "--json", "-o", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["cost_units"] <= 7
    best = gym.load_design(out)
    assert gym.simulate(best, CHAOS, seed=0).verdict == "pass"
    assert gym.Design.model_validate(data["design"]).model_dump() == best.model_dump()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def dask_scheduler(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A real Dask scheduler and worker on loopback, started for these tests."""
    pytest.importorskip("distributed", reason="the dask extra is not installed")
    dask = shutil.which("dask", path=os.path.dirname(sys.executable)) or shutil.which("dask")
    if dask is None:
        pytest.skip("the dask command is not installed")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    workdir = tmp_path_factory.mktemp("dask")
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    sched = subprocess.Popen(
        [dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    worker = subprocess.Popen(
        [
            dask,
            "worker",
            address,
            "--nworkers",
            "1",
            "--nthreads",
            "1",
            "--no-dashboard",
            "--local-directory",
            str(workdir),
        ],
        cwd=Path(__file__).resolve().parents[1],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        from distributed import Client

        deadline = time.monotonic() + 60
        while True:
            try:
                with Client(address, timeout=5) as client:
                    client.wait_for_workers(1, timeout=30)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield address
    finally:
        stop(worker, sched)


def test_sweep_on_a_dask_cluster_gives_identical_rows(dask_scheduler: str) -> None:
    """A 200-point sweep on a Dask scheduler and worker (loopback), on the local pool and
    in one process: identical rows."""
    from gym.explore.parallel import DaskCluster

    sc = gym.load_scenario(CHAOS)
    points = sweep.grid(
        REFERENCE,
        ["fetchers.replicas=1..20", "cache.hit_ratio=0.5,0.6,0.7,0.8,0.9,0.92,0.94,0.96,0.97,0.98"],
    )
    assert len(points) == 200
    cluster = DaskCluster(dask_scheduler)
    try:
        remote = sweep.run(points, sc, runs=1, executor=cluster)
    finally:
        cluster.close()
    assert remote == sweep.run(points, sc, runs=1, executor=LocalPool(2))
    assert remote == sweep.run(points, sc, runs=1, executor=Serial())


def test_cli_sweep_with_scheduler(dask_scheduler: str) -> None:
    """--scheduler ADDRESS runs the sweep there and prints the same table."""
    args = ["sweep", str(REFERENCE), "--vary", "fetchers.replicas=3..4", "--json"]
    remote = runner.invoke(app, [*args, "--scheduler", dask_scheduler])
    local = runner.invoke(app, [*args, "--workers", "1"])
    assert remote.exit_code == 0, remote.output
    assert json.loads(remote.stdout) == json.loads(local.stdout)


def test_unreachable_scheduler_is_a_clear_error() -> None:
    """A scheduler that is not there: exit 2, the address named."""
    pytest.importorskip("distributed")
    port = _free_port()
    res = runner.invoke(
        app,
        [
            "sweep",
            str(REFERENCE),
            "--vary",
            "fetchers.replicas=3..4",
            "--scheduler",
            f"tcp://127.0.0.1:{port}",
        ],
    )
    assert res.exit_code == 2
    assert f"127.0.0.1:{port}" in res.stderr


def test_run_many_is_deterministic() -> None:
    """Same seeds, same summaries, on any executor."""
    d, sc = design(), scenario(arrivals="poisson")
    a = run_many(d, sc, runs=4, confidence=0.3, executor=Serial()).to_dict()
    b = run_many(d, sc, runs=4, confidence=0.3, executor=LocalPool(2)).to_dict()
    assert a == b
    assert not math.isnan(a["pass_probability"])


def test_sweep_names_the_file_and_field_of_a_bad_base_not_the_vary(tmp_path: Path) -> None:
    """A fault of the base design or of a --set is said by file and field, as `gym run`
    says it, not as a fault of each --vary value; a field that only --vary gives is no
    fault of the base."""
    starter = str(ROOT / "designs" / "starter.yaml")
    res = runner.invoke(
        app, ["sweep", starter, "--set", "fetchers.bogus=1", "--vary", "cache.hit_ratio=0.6,0.9"]
    )
    assert res.exit_code == 2
    assert res.stderr.startswith(f"error: {starter}: fetchers.bogus: unknown key")
    assert "--vary" not in res.stderr
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    res = runner.invoke(app, ["sweep", str(empty), "--vary", "cache.hit_ratio=0.6,0.9"])
    assert res.exit_code == 2 and "the file is empty" in res.stderr and "--vary" not in res.stderr
    no_replicas = tmp_path / "no-replicas.yaml"
    no_replicas.write_text(
        (ROOT / "designs" / "starter.yaml").read_text().replace("replicas: 3, ", "")
    )
    res = runner.invoke(app, ["sweep", str(no_replicas), "--vary", "fetchers.replicas=3..4"])
    assert res.exit_code in (0, 1), res.stderr  # every point is a whole design


def test_more_units_can_hurt_so_the_optimizer_does_not_prune_on_it() -> None:
    """Monotonicity fails in the model (docs/explore.md): 8,000 URLs/s, hit ratio 0.5, a
    2,000 writes/s store behind a frontier that holds the backlog. One replica (4,000
    fetches/s) sends 2,000 misses/s, the store's capacity: it loses only Erlang's share
    and the rest waits in the frontier. Two replicas send 4,000/s: the store loses about
    half, (4,000 - 2,000) x 20 s = 40,000 writes, and availability falls from above 0.95
    to about 0.75, though throughput rises."""
    sc = scenario(duration_s=20, base_rps=8_000, arrivals="poisson")
    runs = {}
    for replicas in (1, 2):
        d = design(
            frontier={"drain_rps": 30_000, "buffer": 1_000_000},
            fetchers={"replicas": replicas, "rps_per_replica": 4_000},
            cache={"hit_ratio": 0.5},
            page_store={"rps": 2_000},
        )
        runs[replicas] = gym.simulate(d, sc, seed=0).metrics
    assert runs[1].availability > 0.95
    assert runs[2].availability < 0.76
    assert runs[2].failed == pytest.approx(40_000, rel=0.02)
    assert runs[2].throughput_rps > runs[1].throughput_rps
