"""The Python API's entry point: one call from models (or file paths) to a scored result."""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gym.core.errors import GymError, Problem
from gym.core.limits import DEFAULT_MAX_URLS, ENGINE_MODULES, ENGINES
from gym.inputs.loading import design_parts, load_design, load_scenario
from gym.models import Design, Scenario
from gym.sim.timeline import MAX_TICKS, VALID_TICKS_MS, Timeline
from gym.system import compiled, costing, crawler, kinds
from gym.system.graph import GraphDesign, graph_scenario, node_problems

if TYPE_CHECKING:
    from gym.analysis.result import Result
    from gym.sim.record import RunRecord

Engine = Callable[..., "RunRecord"]

DEFAULT_SCENARIO = Path("scenarios/crawler-chaos.yaml")
DEFAULT_DESIGN = Path("designs/reference.yaml")


def default_design() -> Path:
    """designs/reference.yaml under the working directory, else the packaged copy."""
    if DEFAULT_DESIGN.exists():
        return DEFAULT_DESIGN
    return Path(str(resources.files("gym") / "data" / "reference.yaml"))


def default_scenario() -> Path:
    """scenarios/crawler-chaos.yaml under the working directory, else the packaged copy."""
    if DEFAULT_SCENARIO.exists():
        return DEFAULT_SCENARIO
    return Path(str(resources.files("gym") / "data" / "crawler-chaos.yaml"))


def url_budget(
    scenario: Scenario,
    runs: int,
    max_urls: int,
    *,
    what: str = "run",
    designs: Sequence[Design | GraphDesign] = (),
) -> Problem | None:
    """The request engine's limit on work, for ``runs`` runs of ``scenario``: a problem
    when they would simulate more than ``max_urls`` URLs in all (minutes of work), with
    the ``--max-urls`` that would allow them. ``what`` names the runs ("run", "sweep");
    ``designs``: the designs run (a crawler's link-discovery loop adds its links; the
    largest counts for every run)."""
    expected = max(
        (compiled.expected_urls(scenario, d) for d in designs),
        default=compiled.expected_urls(scenario),
    )
    total = expected * runs
    if total <= max_urls:
        return None
    unit = (designs[0] if designs else Design).unit  # a sweep's first check has none yet
    many = f"{runs:,} request-engine {what}s" if runs > 1 else f"the request-engine {what}"
    return Problem(
        scenario._source if runs == 1 else None,
        "duration_s" if runs == 1 else "--max-urls",
        f"{many} would simulate about {total:,.0f} {unit.many}, more than the limit of "
        f"{max_urls:,} (minutes of work); allow it with --max-urls "
        f"{math.ceil(total * 11 / 10 - 1e-6):d}, or use the flow engine",
    )


def validate(
    design: Design | GraphDesign | str | Path,
    scenario: Scenario | str | Path | None = None,
    *,
    tick_ms: int = 10,
) -> list[Problem]:
    """Problems that stop ``design`` from running under ``scenario`` (empty when it can);
    models or paths, as :func:`simulate` takes them (a file that does not load raises
    :class:`gym.GymError`)."""
    design, scenario = _loaded(design, scenario)
    problems = compiled.problems_under(design, scenario)
    if tick_ms not in VALID_TICKS_MS:
        problems.append(
            Problem(None, "tick_ms", f"{tick_ms} must be a whole number of ms dividing 1000")
        )
    else:
        n_ticks = Timeline(scenario, tick_ms).n_ticks
        if n_ticks > MAX_TICKS:
            problems.append(
                Problem(
                    scenario._source,
                    "duration_s",
                    f"{scenario.duration_s:g} s is {n_ticks:,} ticks of {tick_ms} ms; the "
                    f"limit is {MAX_TICKS:,} (use a longer tick)",
                )
            )
    return problems


def load_inputs(
    designs: Sequence[str | Path],
    scenario: str | Path | None = None,
    overrides: list[str] | None = None,
) -> tuple[list[Design | GraphDesign], Scenario]:
    """The design files (each with the ``--set`` ``overrides``) and the scenario file
    (default: the chaos one), loaded; every problem raised at once as one
    :class:`GymError`: each file's own and, for a design that does not load, what
    :func:`validate` finds of its sections that are valid on their own (the catalog's
    limits, the scenario's faults), so that no problem waits for the others' fixing; when
    any does not load, what :func:`validate` finds of those that do. Each problem once.
    When all load, the caller checks them with :func:`validate`."""
    problems: list[Problem] = []
    scenario_problems: list[Problem] = []
    loaded_scenario: Scenario | None = None
    try:
        loaded_scenario = load_scenario(default_scenario() if scenario is None else scenario)
    except GymError as err:
        scenario_problems = err.problems
    loaded: list[Design | GraphDesign] = []
    for path in designs:
        try:
            loaded.append(load_design(path, overrides))
        except GymError as err:
            problems += err.problems
            if loaded_scenario is not None:
                problems += section_checks(path, loaded_scenario, overrides)
    if problems and loaded_scenario is not None:  # the designs that loaded: checked too
        problems += [p for d in loaded for p in validate(d, loaded_scenario)]
    problems += scenario_problems
    if problems or loaded_scenario is None:
        raise GymError(list(dict.fromkeys(problems)))  # a file given twice: said once
    return loaded, loaded_scenario


def section_checks(
    path: str | Path,
    scenario: Scenario,
    overrides: list[str] | None = None,
    *,
    contents: Any = None,
) -> list[Problem]:
    """For a design that does not load: what :func:`validate` finds of its sections (a
    graph's nodes) that are valid on their own (the catalog's limits, the scenario's
    faults and system), to be said with its own problems. ``contents``: the file's
    mapping, already read."""
    parts = design_parts(path, overrides, contents=contents)
    if parts is None:
        return []
    if parts.graph:  # the system, and the catalog's limits on each node valid alone
        return graph_scenario(scenario, parts.name) + node_problems(
            str(path), parts.valid, scenario.catalog
        )
    problems = costing.check_sections(parts.valid, scenario.catalog, str(path))
    return problems + crawler.fits(scenario, parts.name, discovery="discovery" in parts.given)


def simulate(
    design: Design | GraphDesign | str | Path,
    scenario: Scenario | str | Path | None = None,
    *,
    seed: int = 0,
    engine: str = "flow",
    tick_ms: int = 10,
    warmup_s: float = 0.0,
    max_urls: int = DEFAULT_MAX_URLS,
    progress: Callable[[float], None] | None = None,
) -> Result:
    """Run ``design`` through ``scenario`` and score it.

    ``design`` and ``scenario`` are models (from :func:`gym.load_design` and
    :func:`gym.load_scenario`) or paths to YAML files; without a scenario, the crawler
    chaos scenario. Same inputs and seed, same result.
    ``warmup_s`` drops URLs that arrived before then from latency statistics. The request
    engine refuses a run expected to offer more than ``max_urls`` URLs (it would take
    minutes); ``progress`` is called with the simulated time as a long run goes.
    Raises :class:`gym.GymError` for anything invalid.
    """
    return simulate_many(
        design,
        scenario,
        seeds=[seed],
        engine=engine,
        tick_ms=tick_ms,
        warmup_s=warmup_s,
        max_urls=max_urls,
        progress=progress,
    )[0]


def simulate_many(
    design: Design | GraphDesign | str | Path,
    scenario: Scenario | str | Path | None = None,
    *,
    seeds: Sequence[int],
    engine: str = "flow",
    tick_ms: int = 10,
    warmup_s: float = 0.0,
    max_urls: int = DEFAULT_MAX_URLS,
    progress: Callable[[float], None] | None = None,
) -> list[Result]:
    """:func:`simulate` for each of ``seeds``: the inputs checked once, and the flow
    engine's runs advanced together (one batch), each result the one :func:`simulate`
    gives for its seed, to the last digit. The request engine runs them one by one
    (``max_urls`` is per run).

    The flow engine's results of one call share their per-tick arrays (a row each of the
    batch's): one result kept keeps the whole batch's, some megabytes a run. To keep a
    few results of many seeds, call :func:`simulate` for those seeds, or this with fewer."""
    design, scenario = _loaded(design, scenario)
    _check_run(design, scenario, seeds, engine, tick_ms, warmup_s, max_urls)
    if not seeds:
        return []
    timeline = Timeline(scenario, tick_ms)
    # The design's topology, built once: the engine runs it, the metrics read it.
    topology = compiled.system_topology(design, scenario)
    timeline.affected_by = kinds.affected_by(topology)  # whose faults explain what
    # The engines, and what scores their record, load on first use: validating and the
    # commands that only read files do not pay for numpy and SimPy.
    module = importlib.import_module(ENGINE_MODULES[engine])
    if engine == "flow":
        records = module.run_many(
            scenario, seeds=seeds, timeline=timeline, topology=topology, warmup_s=warmup_s
        )
    else:
        run: Engine = module.run
        kw = {"timeline": timeline, "topology": topology, "warmup_s": warmup_s}
        records = [run(scenario, seed=s, progress=progress, **kw) for s in seeds]
    for record in records:
        record.topology = topology
    return [
        _scored(record, seed, design, scenario, engine, tick_ms, warmup_s)
        for seed, record in zip(seeds, records, strict=True)
    ]


def _loaded(
    design: Design | GraphDesign | str | Path, scenario: Scenario | str | Path | None
) -> tuple[Design | GraphDesign, Scenario]:
    """The design and the scenario as models (read from their files where given as
    paths; the crawler chaos scenario when none is given)."""
    if not isinstance(design, Design | GraphDesign):
        design = load_design(design)
    if scenario is None:
        scenario = default_scenario()
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    return design, scenario


def _check_run(
    design: Design | GraphDesign,
    scenario: Scenario,
    seeds: Sequence[int],
    engine: str,
    tick_ms: int,
    warmup_s: float,
    max_urls: int,
) -> None:
    """Raise :class:`GymError` with every problem of a run's arguments at once: the
    engine, the seeds, the design against the scenario, the warm-up, the request
    engine's limit on work."""
    if engine not in ENGINES:
        raise GymError.single(
            None, "engine", f"{engine!r} is not an engine; choose one of {', '.join(ENGINES)}"
        )
    if isinstance(seeds, str | bytes) or not isinstance(seeds, Sequence):
        raise GymError.single(None, "seeds", f"must be a list of seeds (got {seeds!r})")
    for seed in seeds:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise GymError.single(None, "seed", f"must be a whole number >= 0 (got {seed!r})")
    problems = validate(design, scenario, tick_ms=tick_ms)
    if not 0 <= warmup_s < scenario.duration_s:
        problems.append(
            Problem(None, "warmup_s", f"{warmup_s:g} must be >= 0 and before the end of the run")
        )
    if (
        engine == "request"
        and (over := url_budget(scenario, 1, max_urls, designs=[design])) is not None
    ):
        problems.append(over)
    if problems:
        raise GymError(problems)


def _scored(
    record: RunRecord,
    seed: int,
    design: Design | GraphDesign,
    scenario: Scenario,
    engine: str,
    tick_ms: int,
    warmup_s: float,
) -> Result:
    """A run's record measured and checked against the scenario's SLOs."""
    from gym.analysis import metrics, scoring
    from gym.analysis.result import Result

    m = metrics.compute(record, design, scenario)
    checks = scoring.check(m, scenario.slos)
    return Result(
        design=design,
        scenario=scenario,
        engine=engine,
        seed=seed,
        tick_ms=tick_ms,
        metrics=m,
        checks=checks,
        verdict=scoring.verdict(checks),
        warmup_s=warmup_s,
    )
