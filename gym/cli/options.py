"""The options and arguments the commands share, and the checks of options made before
any work (nothing has run when one fails: exit 2)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from gym.core.errors import GymError, Problem
from gym.core.limits import (
    DEFAULT_CONFIDENCE,
    DEFAULT_MAX_RUNS,
    DEFAULT_MAX_URLS,
    ENGINES,
    MAX_RUNS,
    MAX_SEED,
)

DesignArg = Annotated[
    Path,
    typer.Argument(
        help="Design file (YAML), e.g. designs/reference.yaml.",
        show_default=False,
        metavar="DESIGN",
    ),
]
ScenarioOpt = Annotated[
    Path | None,
    typer.Option(
        "--scenario",
        "-s",
        help="Scenario file (YAML). Default: scenarios/crawler-chaos.yaml.",
        show_default=False,
        metavar="FILE",
    ),
]


SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="What-if on the design, PATH=VALUE (repeatable), e.g. "
        "--set cache.hit_ratio=0.6. Validated like the file.",
        show_default=False,
        metavar="PATH=VALUE",
    ),
]
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        help="Local worker processes, at most one per core (default: one per core; 1: none).",
        min=1,
        show_default=False,
    ),
]
SchedulerOpt = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        help="Run on a Dask distributed scheduler at this address "
        "(tcp://host:port) instead of local processes; needs the dask extra.",
        show_default=False,
        metavar="ADDRESS",
    ),
]
ConfidenceOpt = Annotated[
    float | None,
    typer.Option(
        "--confidence",
        help="Verdict rule over many runs: PASS only if the 95% "
        "Wilson lower bound of the pass probability is at least this (default 0.8).",
        min=0,
        max=1,
        show_default=False,
    ),
]
DesignsArg = Annotated[
    list[Path], typer.Argument(help="Design files (YAML).", show_default=False, metavar="DESIGN...")
]
SeedOpt = Annotated[int, typer.Option(help="Random seed (0 to 2^63 - 1).", min=0, max=MAX_SEED)]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace an existing file.")]
JunitOpt = Annotated[
    Path | None,
    typer.Option(
        "--junit",
        help="Also write the results as JUnit XML to this .xml file: a test case per SLO "
        "(per point of a sweep), failures with the measured value and the target.",
        show_default=False,
        metavar="FILE",
    ),
]


def _engine_name(value: str) -> str:
    if value not in ENGINES:
        raise typer.BadParameter(f"{value!r} is not an engine; choose one of {', '.join(ENGINES)}")
    return value


EngineOpt = Annotated[
    str,
    typer.Option(
        help=f"Engine: {' | '.join(ENGINES)}.", callback=_engine_name, metavar="|".join(ENGINES)
    ),
]
MaxRunsOpt = Annotated[
    int,
    typer.Option(
        "--max-runs",
        help=f"Refuse work of more simulations than this (default {DEFAULT_MAX_RUNS:,}; "
        "checked before any run).",
        min=1,
        show_default=False,
    ),
]


MaxUrlsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-urls",
        help="With the request engine, refuse work expected to simulate more URLs than "
        f"this in all (default {DEFAULT_MAX_URLS:,}).",
        min=1,
        show_default=False,
    ),
]


def check_many(
    runs: int,
    workers: int | None,
    scheduler: str | None,
    confidence: float | None,
    single_ok: bool = False,
    seed: int = 0,
    one_run: bool = True,
) -> float:
    """Options of many-run commands, checked before any work; returns the confidence.
    ``single_ok``: one run may take --workers and --confidence (a sweep's points);
    ``one_run``: one run gives a verdict of its own (not diff's gate)."""
    problems = _runs_problems(runs, seed) + _worker_problems(workers, scheduler)
    if not single_ok and runs == 1:
        problems += _single_run_problems(workers, scheduler, confidence)
    if scheduler is not None:
        problems += _scheduler_problems(scheduler)
    conf = DEFAULT_CONFIDENCE if confidence is None else confidence
    from gym.explore.montecarlo import too_few_runs

    few = too_few_runs(
        runs, conf, single_ok=one_run, hint_one=one_run and (single_ok or confidence is None)
    )
    if few is not None:
        problems.append(Problem(None, "--confidence" if conf >= 1 else "--runs", few))
    if problems:
        raise GymError(problems)
    return conf


def _runs_problems(runs: int, seed: int) -> list[Problem]:
    """--runs within its limit, and its seeds within the largest seed."""
    problems = []
    if seed + runs - 1 > MAX_SEED:
        problems.append(
            Problem(None, "--seed", f"{seed} + {runs} runs goes past the largest seed, 2^63 - 1")
        )
    if runs > MAX_RUNS:
        problems.append(Problem(None, "--runs", f"{runs:,} is more than the limit of {MAX_RUNS:,}"))
    return problems


def _worker_problems(workers: int | None, scheduler: str | None) -> list[Problem]:
    """--workers not with --scheduler, and no more than the machine's cores."""
    problems = []
    if workers is not None and scheduler is not None:
        problems.append(
            Problem(None, "--workers", "conflicts with --scheduler: work runs on one or the other")
        )
    cores = os.cpu_count() or 1
    if workers is not None and workers > cores:
        problems.append(
            Problem(
                None,
                "--workers",
                f"{workers} is more than this machine's {cores} cores; use 1 to {cores}",
            )
        )
    return problems


def _single_run_problems(
    workers: int | None, scheduler: str | None, confidence: float | None
) -> list[Problem]:
    """The first of the many-run options given to one run."""
    given = [
        name
        for name, value in (
            ("--workers", workers),
            ("--scheduler", scheduler),
            ("--confidence", confidence),
        )
        if value is not None
    ]
    if not given:
        return []
    return [
        Problem(None, given[0], "applies to many runs only; add --runs N (N >= 2) or leave it out")
    ]


def _scheduler_problems(scheduler: str) -> list[Problem]:
    """A Dask scheduler's address, and one a new gym process can reach."""
    from gym.explore.parallel import check_address

    try:
        check_address(scheduler)
    except GymError as err:
        return list(err.problems)
    if scheduler.partition("://")[0] == "inproc":
        # an in-process scheduler lives in the Python process that made it: a new gym
        # process can never reach one
        return [
            Problem(
                None,
                "--scheduler",
                f"{scheduler!r}: an inproc:// scheduler is only reachable "
                "from the process that started it; give tcp://HOST:PORT",
            )
        ]
    return []


def file_name(value: str | Path) -> Path:
    """An output file's path as typed: one ending in a slash names a directory, which
    Path() would silently turn into a file of that name (``-o x.html/`` wrote x.html)."""
    if isinstance(value, str) and value.endswith(("/", os.sep)) and value.strip("/" + os.sep):
        raise typer.BadParameter(f"{value!r} ends in a slash (a directory); give a file name")
    return Path(value)


def dir_name(value: str | Path) -> Path:
    """An output directory's path as typed: an empty one is refused (Path("") is the
    current directory: ``-o ""`` wrote a run's files into it)."""
    if isinstance(value, str) and not value.strip():
        raise typer.BadParameter("an empty path; give a directory")
    return Path(value)


def force_needs(force: bool, output: Path | None, option: str) -> None:
    if force and output is None:
        raise GymError.single(None, "--force", f"applies only with {option}; leave it out")


def url_limit(max_urls: int | None, engine: str) -> int:
    """--max-urls is a request-engine limit: refused with the flow engine, not ignored."""
    if max_urls is not None and engine != "request":
        raise GymError.single(
            None, "--max-urls", "limits the request engine only; add --engine request"
        )
    return DEFAULT_MAX_URLS if max_urls is None else max_urls


NoFixOpt = Annotated[
    bool,
    typer.Option(
        "--no-fix",
        help="When the design fails, do not search for the cheapest change that passes "
        "(the suggested fix).",
    ),
]
HeadroomOpt = Annotated[
    bool | None,
    typer.Option(
        "--headroom/--no-headroom",
        help="When the design passes, work out how far it is from failing (load, crash and "
        "hit-ratio margins: about 20 flow runs). Default: for runs of up to 20,000 ticks "
        "(a loop or retries count 50x).",
        show_default=False,
    ),
]
