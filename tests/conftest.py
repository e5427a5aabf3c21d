"""Shared helpers: the shipped files, and small designs/scenarios built in code."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from gym.inputs.loading import load_design
from gym.models import Design, Scenario

# Property tests explore at random on a developer's machine; in CI (CI=true) they are
# derandomized, so a CI run is reproducible.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Plain ``pytest`` runs the tests in parallel: pytest-xdist, one worker a core
    (``-n auto``). Each worker starts with an even, contiguous share of the tests, so
    that a module's fixtures mostly run in one of them, and takes tests from another
    once its own are done (``--dist worksteal``). Set here rather than in ``addopts``,
    so that ``-p no:xdist`` still works: ``-n0`` or ``-p no:xdist`` runs the tests in
    this process, ``-n N`` picks the count. Tests named one by one
    (``pytest tests/test_x.py::test_y``) run in this process, with no workers to start
    (``-s`` and ``--pdb`` work as usual)."""
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    if config.option.numprocesses is None:  # no -n given
        named = config.args and all("::" in arg for arg in config.args)
        config.option.numprocesses = 0 if named else "auto"
    if config.option.numprocesses != 0 and config.option.dist == "no":
        config.option.dist = "worksteal"


ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "designs" / "reference.yaml"
STARTER = ROOT / "designs" / "starter.yaml"
CHAOS = ROOT / "scenarios" / "crawler-chaos.yaml"


def design(**parts: Any) -> Design:
    """A design with roomy defaults; keyword arguments replace whole sections."""
    base: dict[str, Any] = {
        "name": "test",
        "frontier": {"drain_rps": 30_000, "buffer": 100_000},
        "fetchers": {"replicas": 4, "rps_per_replica": 4_000},
        "cache": {"hit_ratio": 0.92},
        "page_store": {"rps": 25_000},
    }
    base.update(parts)
    return Design.model_validate(base)


def variant(path: Path, **changes: Any) -> Design:
    """The design in ``path`` with values changed: ``section.field=value`` replaces one
    field, ``section=value`` a whole section (``async_writer=None`` removes it)."""
    data = load_design(path).model_dump()
    for key, value in changes.items():
        section, _, field = key.partition(".")
        if field:
            data[section][field] = value
        else:
            data[section] = value
    return Design.model_validate(data)


def stop(*procs: Any) -> None:
    """End helper processes started by a test: terminate, then kill what is still there
    after 20 s."""
    import subprocess

    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def forbid_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every kind of work (a run, a sweep, an optimization) fails loudly, with exit 3: a
    command that exits 2 under this refused its input before starting any work."""
    import gym.api
    from gym.explore import optimize, sweep

    def ran(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("work started before the input was checked")

    monkeypatch.setattr(gym.api, "simulate", ran)  # the commands load it from there
    monkeypatch.setattr(sweep, "run", ran)
    monkeypatch.setattr(sweep, "load_design", ran)
    monkeypatch.setattr(optimize, "search", ran)


def scenario(**parts: Any) -> Scenario:
    """A quiet, deterministic scenario: 1,000 URLs/s for 10 s, no faults, no SLOs."""
    base: dict[str, Any] = {
        "name": "test",
        "duration_s": 10,
        "base_rps": 1_000,
        "arrivals": "deterministic",
    }
    base.update(parts)
    return Scenario.model_validate(base)


@pytest.fixture(scope="session")
def chaos_results() -> dict[str, Any]:
    """The reference and the starter under the chaos scenario, seed 0 (run once)."""
    import gym

    sc = gym.load_scenario(CHAOS)
    return {
        "reference": gym.simulate(gym.load_design(REFERENCE), sc, seed=0),
        "starter": gym.simulate(gym.load_design(STARTER), sc, seed=0),
    }
