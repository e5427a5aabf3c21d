"""Limits that protect the user's machine, and Ctrl-C."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

import gym
from gym.cli import app
from gym.explore import sweep
from gym.explore.parallel import Serial
from tests.conftest import CHAOS, REFERENCE

runner = CliRunner()


def test_sweep_refuses_more_runs_than_allowed() -> None:
    """A sweep over the simulation budget is refused with how to allow it (exit 2)."""
    res = runner.invoke(
        app,
        [
            "sweep",
            str(REFERENCE),
            "--vary",
            "fetchers.replicas=1..10",
            "--runs",
            "16",
            "--max-runs",
            "159",
        ],
    )
    assert res.exit_code == 2
    assert "160 simulations" in res.stderr and "--max-runs 160" in res.stderr


def test_request_engine_sweep_refuses_too_many_urls() -> None:
    """With the request engine the budget is in URLs: 2 points x 300,000 URLs > 500,000."""
    res = runner.invoke(
        app,
        [
            "sweep",
            str(REFERENCE),
            "--vary",
            "fetchers.replicas=4..5",
            "--engine",
            "request",
            "--max-urls",
            "500000",
        ],
    )
    assert res.exit_code == 2 and "--max-urls" in res.stderr


class _StopAfter:
    """A progress callback that presses Ctrl-C after ``n`` finished simulations."""

    def __init__(self, n: int) -> None:
        self.left = n

    def __call__(self, done: int) -> None:
        self.left -= done
        if self.left <= 0:
            raise KeyboardInterrupt


def test_ctrl_c_keeps_the_finished_points() -> None:
    """Ctrl-C once 4 of 3 x 4 simulations are done: the first point (runs 0-3, one batch:
    progress comes a batch at a time) is kept; rows say which points finished and which
    did not run."""
    points = sweep.grid(REFERENCE, ["fetchers.replicas=3..5"])
    with pytest.raises(sweep.SweepInterrupted) as stop:
        sweep.run(
            points,
            gym.load_scenario(CHAOS),
            runs=4,
            confidence=0.3,
            executor=Serial(),
            progress=_StopAfter(4),
        )
    assert [r["status"] for r in stop.value.rows] == ["ok", "not run", "not run"]
    assert stop.value.rows[0]["runs"] == 4


def test_ctrl_c_in_the_cli_writes_what_is_done(tmp_path: Path, monkeypatch: Any) -> None:
    """gym sweep -o FILE interrupted: exit 130, one line, the finished rows written."""
    out = tmp_path / "rows.csv"
    real_run = sweep.run

    def interrupted_run(*args: Any, **kwargs: Any) -> Any:
        kwargs["progress"] = _StopAfter(2)
        kwargs["executor"] = Serial()
        return real_run(*args, **kwargs)

    monkeypatch.setattr(sweep, "run", interrupted_run)
    res = runner.invoke(
        app, ["sweep", str(REFERENCE), "--vary", "fetchers.replicas=3..5", "-o", str(out)]
    )
    assert res.exit_code == 130, res.output
    assert "interrupted: 2 of 3 points finished" in res.stderr
    assert "Traceback" not in res.output
    df = pd.read_csv(out)
    assert list(df["status"]) == ["ok", "ok", "not run"]


def test_ctrl_c_in_a_run_is_one_line(monkeypatch: Any) -> None:
    """Ctrl-C during gym run: 'interrupted', exit 130, no traceback."""
    import gym.api

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(gym.api, "simulate", boom)  # `gym run` loads it from there
    res = runner.invoke(app, ["run", str(REFERENCE)])
    assert res.exit_code == 130 and "interrupted" in res.stderr
    assert "Traceback" not in res.output


def test_many_request_engine_runs_respect_the_url_budget() -> None:
    """--runs with the request engine counts every run's URLs against --max-urls."""
    res = runner.invoke(app, ["run", str(REFERENCE), "--engine", "request", "--runs", "20"])
    assert res.exit_code == 2
    assert "--max-urls" in res.stderr and "6,000,000" in res.stderr
