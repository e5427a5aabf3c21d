"""Sweeps: a grid of what-ifs over one design, every point run over the same seeds.

``--vary fetchers.replicas=2..6`` (integers, inclusive; ``2..10:2`` steps by 2) or
``--vary cache.hit_ratio=0.6,0.8,0.92`` (a list). Each point is the base design with those
values set, validated like a file: a value or combination the design model refuses is
refused before anything runs, and a point the scenario's catalog forbids becomes a row
that says why. Every
point runs seeds ``seed .. seed + runs - 1``: the same traffic for every point (common
random numbers), whichever executor runs it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym.analysis import rounding
from gym.api import url_budget
from gym.core.errors import GymError
from gym.core.limits import DEFAULT_CONFIDENCE, DEFAULT_MAX_RUNS, DEFAULT_MAX_URLS
from gym.explore.montecarlo import MonteCarloResult, Task, run_tasks, tasks_for
from gym.explore.parallel import Executor, Interrupted, Progress
from gym.inputs.loading import load_design, parse_override, whole_number
from gym.inputs.strict_yaml import read_yaml
from gym.models import Design, Scenario
from gym.system.compiled import graph_design
from gym.system.graph import GraphDesign

MAX_POINTS = 100_000
#: Simulations a sweep runs unless allowed more (``--max-runs``).


def _same_value(a: Any, b: Any) -> bool:
    """The same point: equal values of one type, or equal numbers however written (``3``
    and ``3.0``, ``30000`` and ``3e4``: a count written with nothing after the point is
    that count). ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def parse_vary(text: str) -> tuple[str, Sequence[Any]]:
    """``path=a..b[:step]`` or ``path=v1,v2,...`` -> (path, values).

    A range's size is computed before any list is built, so ``1..1000000000`` is refused
    at once; a value listed twice is refused (it would be the same point twice)."""
    key, sep, _ = text.partition("=")
    if not sep or not all(k.strip() for k in key.split(".")):
        raise _bad(text, "is not PATH=VALUES (for example fetchers.replicas=2..6)")
    keys, _ = parse_override(key + "=0", "--vary")
    path = ".".join(keys)
    raw = text.partition("=")[2].strip()
    if not raw:
        raise _bad(text, f"give values, e.g. {path}=2..6 or {path}=1,2")
    if ".." in raw and "," not in raw:
        lo_hi, _, step_text = raw.partition(":")
        lo_text, _, hi_text = lo_hi.partition("..")
        try:
            lo, hi, step = (
                whole_number(lo_text),
                whole_number(hi_text),
                whole_number(step_text or "1"),
            )
        except ValueError:
            raise _bad(text, f"a range takes whole numbers, e.g. {path}=2..6") from None
        if step <= 0 or hi < lo:
            raise _bad(text, "the range is empty")
        count = (hi - lo) // step + 1
        if count > MAX_POINTS:
            raise _bad(text, f"{count:,} values; the limit is {MAX_POINTS:,} points")
        return path, range(lo, hi + 1, step)
    items = raw.split(",")
    if len(items) > MAX_POINTS:
        raise _bad(text, f"{len(items):,} values; the limit is {MAX_POINTS:,} points")
    values = [parse_override(f"{path}={item.strip()}", "--vary")[1] for item in items]
    seen: set[Any] = set()
    unhashable: list[Any] = []
    for value in values:
        key = _value_key(value)
        if key is None:
            if any(_same_value(value, v) for v in unhashable):
                raise _bad(text, f"{_yaml_scalar(value)} is listed twice")
            unhashable.append(value)
        elif key in seen:
            raise _bad(text, f"{_yaml_scalar(value)} is listed twice")
        else:
            seen.add(key)
    return path, values


def _value_key(value: Any) -> Any:
    """A key equal for :func:`_same_value` values (numbers compare and hash alike in
    Python, 3 and 3.0; a bool is kept apart from 1), so duplicates are found in one pass
    over up to 100,000 values; None for a list or mapping."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", value)
    try:
        hash(value)
    except TypeError:
        return None
    return (type(value).__name__, value)


def _bad(text: str, message: str) -> GymError:
    return GymError.single(None, "--vary", f"{text!r}: {message}")


def _overlaps(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def plan(varies: list[str], fixed: list[str] | None = None) -> list[tuple[str, Sequence[Any]]]:
    """The axes of the grid, checked: each path varied once, none also fixed by ``--set``,
    at most :data:`MAX_POINTS` points in all (computed, not built)."""
    if not varies:
        raise GymError.single(None, "--vary", "give at least one PATH=VALUES")
    axes = [parse_vary(v) for v in varies]
    for i, (path, _) in enumerate(axes):
        for j in range(i):
            if _overlaps(path, axes[j][0]):
                raise GymError.single(
                    None,
                    "--vary",
                    f"{varies[j]!r} and {varies[i]!r} vary the same field; give each once",
                )
        for text in fixed or []:
            keys, _ = parse_override(text)
            if _overlaps(path, ".".join(keys)):
                raise GymError.single(
                    None,
                    "--vary",
                    f"{varies[i]!r} varies what --set {text} sets; give it one way only",
                )
    if size(axes) > MAX_POINTS:
        raise GymError.single(None, "--vary", f"{size(axes):,} points; the limit is {MAX_POINTS:,}")
    return axes


def size(axes: list[tuple[str, Sequence[Any]]]) -> int:
    """Points in the grid of ``axes``."""
    return math.prod(len(values) for _, values in axes)


@dataclass(frozen=True)
class Point:
    """One grid point: the values set, and the design they give (or why not)."""

    values: dict[str, Any]
    design: Design | GraphDesign | None
    error: str | None


def grid(base: Path, varies: list[str], fixed: list[str] | None = None) -> list[Point]:
    """Every combination of the ``--vary`` values over the base design.

    A value the design file itself would refuse (a wrong path, type or range) is an input
    error (GymError) found before anything runs: each value is first tried alone."""
    axes = plan(varies, fixed)
    # read once: up to 100,000 values and points, each a load of the base with its values
    contents = read_yaml(base)
    _check_base(base, fixed or [], contents, [path for path, _ in axes])
    _check_values(base, varies, fixed or [], contents, axes)
    return _points(base, fixed or [], contents, axes)


def _check_base(base: Path, fixed: list[str], contents: Any, varied: list[str]) -> None:
    """Refuse what is wrong with the base (or a --set) whatever the varied values: said as
    it is, by file and field, not as a fault of each --vary value."""
    try:
        load_design(base, fixed, contents=contents)
    except GymError as err:
        own = [p for p in err.problems if not _about(p.field, varied)]
        if own:
            raise GymError(own) from None


def _check_values(
    base: Path,
    varies: list[str],
    fixed: list[str],
    contents: Any,
    axes: list[tuple[str, Sequence[Any]]],
) -> None:
    """Refuse a value the design file would refuse, each tried alone: the ends of every
    axis first, then whole axes from the shortest (a bad value is usually found in
    milliseconds, not after loading 100,000 good ones)."""
    ends = [(path, v) for path, values in axes for v in dict.fromkeys([values[0], values[-1]])]
    whole = [(path, v) for path, values in sorted(axes, key=lambda a: len(a[1])) for v in values]
    for path, value in itertools.chain(ends, whole):
        try:
            load_design(base, [*fixed, f"{path}={_yaml_scalar(value)}"], contents=contents)
        except GymError as err:
            raise _point_error(path, value, varies, axes, err) from None


def _points(
    base: Path, fixed: list[str], contents: Any, axes: list[tuple[str, Sequence[Any]]]
) -> list[Point]:
    """Each combination of the axes' values, as a point with the design it gives; a
    combination the design model refuses is an input error."""
    points = []
    for combo in itertools.product(*(vals for _, vals in axes)):
        chosen = {path: value for (path, _), value in zip(axes, combo, strict=True)}
        sets = [*fixed, *(f"{p}={_yaml_scalar(v)}" for p, v in chosen.items())]
        try:
            points.append(Point(chosen, load_design(base, sets, contents=contents), None))
        except GymError as err:
            shown = ", ".join(f"{p}={_yaml_scalar(v)}" for p, v in chosen.items())
            raise GymError.single(
                None,
                "--vary",
                f"the point {shown} is not a valid design: "
                + "; ".join(str(p) for p in err.problems),
            ) from None
    return points


def _about(field: str | None, paths: list[str]) -> bool:
    """Whether a problem's field is one of ``paths``, inside one, or holds one."""
    if not field:
        return False
    return any(field == p or field.startswith(p + ".") or p.startswith(field + ".") for p in paths)


def check_system(points: list[Point], scenario: Scenario) -> None:
    """Refuse, before it runs, a grid whose designs and scenario are of different systems
    (a graph design needs a ``system: graph`` scenario, a crawler design a crawler one),
    or whose scenario is wrong for them (a fault naming a node they do not have)."""
    from gym.api import validate

    design = next((p.design for p in points if p.design is not None), None)
    if design is None:
        return
    graph = graph_design(design)
    if (graph is not None) == (scenario.system == "graph"):
        # What is wrong with the scenario for these designs (a fault naming a node they
        # do not have) is wrong at every point: say it once, before anything runs.
        own = [p for p in validate(design, scenario) if p.file == scenario._source]
        if own:
            raise GymError(own)
        return
    if graph is not None:
        why = f"{graph.name or 'the design'} is a graph design; its scenario needs system: graph"
    else:
        why = "is for graph designs; a crawler design runs under a crawler scenario"
    raise GymError.single(scenario._source, "system", f"{scenario.system}: {why}")


def _point_error(
    path: str,
    value: Any,
    varies: list[str],
    axes: list[tuple[str, Sequence[Any]]],
    err: GymError,
) -> GymError:
    text = varies[[p for p, _ in axes].index(path)]
    own = f" (from --set {path}={_yaml_scalar(value)})"  # this --vary, not a --set
    reasons = "; ".join(str(p).replace(own, "") for p in err.problems)
    return GymError.single(
        None, "--vary", f"{text!r}: {path}={_yaml_scalar(value)} is not valid: {reasons}"
    )


def _yaml_scalar(value: Any) -> str:
    return (
        "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    )


def run(
    points: list[Point],
    scenario: Scenario,
    *,
    runs: int = 1,
    seed: int = 0,
    engine: str = "flow",
    confidence: float = DEFAULT_CONFIDENCE,
    executor: Executor | None = None,
    progress: Progress | None = None,
    max_runs: int = DEFAULT_MAX_RUNS,
    max_urls: int | None = None,
) -> list[dict[str, Any]]:
    """One row per point: its values, cost, each SLO's mean and pass rate, pass probability.

    Refuses (GymError) more than ``max_runs`` simulations, and with the request engine more
    than ``max_urls`` simulated URLs in all. Ctrl-C raises :class:`SweepInterrupted` with
    the rows finished so far.
    """
    from gym.explore.montecarlo import too_few_runs

    if (few := too_few_runs(runs, confidence)) is not None:
        raise GymError.single(None, "--confidence" if confidence >= 1 else "--runs", few)
    tasks, owners, errors = _tasks(points, scenario, range(seed, seed + runs), engine, max_urls)
    _check_size(tasks, points, scenario, engine, max_runs, max_urls)
    interrupted: Interrupted | None = None
    try:
        results = run_tasks(tasks, executor, progress)
    except Interrupted as stop:
        results, interrupted = stop.done, stop
    by_point: dict[int, list[dict[str, Any]]] = {}
    for owner, res in zip(owners, results, strict=False):
        by_point.setdefault(owner, []).append(res)
    grid_notes = rounding.scenario_warnings(scenario, 10)  # the same for every point
    rows = []
    for i, p in enumerate(points):
        row: dict[str, Any] = dict(p.values)
        if i in errors:
            row.update(status="invalid", error=errors[i])
        elif len(by_point.get(i, [])) < runs:
            row.update(
                status="not run", error="interrupted (Ctrl-C or SIGTERM) before this point ran"
            )
        else:
            assert p.design is not None
            row.update(_figures(p.design, scenario, by_point[i], confidence, engine, grid_notes))
        rows.append(row)
    if interrupted is not None:
        raise SweepInterrupted(rows)
    return rows


def _tasks(
    points: list[Point], scenario: Scenario, seeds: range, engine: str, max_urls: int | None
) -> tuple[list[Task], list[int], dict[int, str]]:
    """The runs of every point the scenario allows, each run's point, and why each point
    it does not allow is invalid."""
    from gym.api import validate

    tasks: list[Task] = []
    owners: list[int] = []
    errors: dict[int, str] = {}
    for i, p in enumerate(points):
        if p.design is None:
            errors[i] = p.error or "invalid"
            continue
        problems = validate(p.design, scenario)
        if problems:
            errors[i] = "; ".join(f"{q.field}: {q.message}" for q in problems)
            continue
        tasks += tasks_for(
            p.design,
            scenario,
            seeds,
            engine,
            max_urls=max_urls if max_urls is not None else DEFAULT_MAX_URLS,
        )
        owners += [i] * len(seeds)
    return tasks, owners, errors


def _check_size(
    tasks: list[Task],
    points: list[Point],
    scenario: Scenario,
    engine: str,
    max_runs: int,
    max_urls: int | None,
) -> None:
    """Refuse, before anything runs, more than ``max_runs`` simulations, and with the
    request engine more than ``max_urls`` simulated URLs in all."""
    if len(tasks) > max_runs:
        raise GymError.single(
            None,
            "--max-runs",
            f"the sweep would run {len(tasks):,} simulations, more than the limit of "
            f"{max_runs:,}; allow it with --max-runs {len(tasks)}",
        )
    if engine == "request" and max_urls is not None:
        over = url_budget(
            scenario,
            len(tasks),
            max_urls,
            designs=[q.design for q in points if q.design is not None],
        )
        if over is not None:
            raise GymError([over])


def _figures(
    design: Design | GraphDesign,
    scenario: Scenario,
    results: list[dict[str, Any]],
    confidence: float,
    engine: str,
    grid_notes: list[str],
) -> dict[str, Any]:
    """A point's figures over its runs: its cost, warnings, each SLO's mean and pass rate,
    and its pass probability."""
    from gym.system.compiled import units_of

    mc = MonteCarloResult(results, confidence)
    row: dict[str, Any] = {"status": "ok"}
    row["cost_units"] = sum(units_of(design, scenario.catalog).values())
    from gym.explore.montecarlo import unchecked

    warned = rounding.design_warnings(design, scenario, engine=engine, tick_ms=10)
    warned += grid_notes + unchecked(results)
    if warned:  # the engine's grid changed one of this point's figures by over 1%
        row["warnings"] = " | ".join(warned)
    for s in mc.slos:
        row[f"{s.name}_mean"] = s.mean
        row[f"{s.name}_pass_rate"] = s.pass_rate
    low, high = mc.ci
    row.update(
        runs=mc.n,
        pass_probability=mc.pass_probability,
        pass_ci_low=low,
        pass_ci_high=high,
        verdict=mc.verdict,
    )
    return row


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep: the rows, those of points that did not finish marked."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        super().__init__()
        self.rows = rows


SUFFIXES = (".csv", ".parquet", ".pq")


def warnings(rows: list[dict[str, Any]]) -> list[str]:
    """The roundings the points' runs were warned about, each once, in order."""
    return sorted({w for r in rows for w in str(r.get("warnings", "")).split(" | ") if w})


def check_output(path: Path, force: bool) -> Path:
    """Check ``-o`` before the sweep runs: a new (or, with ``force``, replaceable) .csv or
    .parquet file in a writable directory; Parquet needs pyarrow."""
    import importlib.util

    from gym.core.outputs import check_file

    target = check_file(path, "-o", suffixes=SUFFIXES, force=force)
    if target.suffix.lower() != ".csv" and importlib.util.find_spec("pyarrow") is None:
        raise GymError.single(
            str(path), None, "-o: writing Parquet needs pyarrow: pip install pyarrow"
        )
    return target


def write(rows: list[dict[str, Any]], path: Path) -> None:
    """Rows to CSV or Parquet, by the file's extension, written atomically."""
    import pandas as pd

    from gym.core.outputs import write_file

    df = pd.DataFrame(rows)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise GymError.single(str(path), None, "-o takes a .csv or a .parquet file")
    if suffix == ".csv":
        write_file(path, lambda tmp: df.to_csv(tmp, index=False, float_format="%.12g"), "-o")
    else:
        write_file(path, lambda tmp: df.to_parquet(tmp, index=False), "-o")
