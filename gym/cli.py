"""The ``gym`` command: parse, call the API, print. No model logic lives here."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import json
import os
import signal
import sys
import textwrap
import threading
import traceback
import typing
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gym.core.errors import GymError, Problem
from gym.core.limits import DEFAULT_CONFIDENCE, DEFAULT_MAX_URLS, ENGINES, MAX_RUNS
from gym.core.text import printable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from gym.analysis.explain import Explanation
    from gym.analysis.result import Result
    from gym.explore.fix import Fix, NoFix
    from gym.explore.parallel import Executor

# Everything else loads inside the command that needs it: ``gym --help`` imports no
# numpy, SimPy, pydantic model or rich, and ``gym validate`` no numpy or SimPy.

#: Exit statuses: the table in the README.
EXIT_PASS, EXIT_FAIL, EXIT_INVALID, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # Ctrl-C (or SIGTERM), as shells report Ctrl-C
EXIT_BROKEN_PIPE = 141  # the reader of stdout went away (`gym run ... | head`), as for SIGPIPE
EXIT_OUTPUT_ERROR = 74  # stdout cannot be written (full disk, closed): sysexits' EX_IOERR

DebugOpt = Annotated[
    bool,
    typer.Option(
        "--debug",
        help="On an unexpected internal error, print the traceback (also: GYM_DEBUG=1).",
    ),
]


def _typer_exits() -> tuple[type[BaseException], ...]:
    """The exceptions typer turns into exit statuses itself (usage errors, exits, aborts).

    typer 0.2x carries its own copy of click (``typer.TyperException`` is its errors'
    base) and no longer installs click; older typers raise click's own, and have imported
    click by now (an installed click that typer does not use is not imported for
    nothing). Both kinds pass through the contract untouched."""
    kinds: list[type[BaseException]] = [typer.Exit, typer.Abort]
    base = getattr(typer, "TyperException", None)
    if base is not None:
        kinds.append(base)
    click = sys.modules.get("click")
    if click is None:
        return tuple(kinds)
    return (*kinds, click.exceptions.Exit, click.ClickException, click.Abort)


_TYPER_EXITS = _typer_exits()


def _guarded(command: Callable[..., None]) -> Callable[..., None]:
    """The exit-status contract for every command: invalid input exits 2 with one line per
    problem; Ctrl-C or SIGTERM exit 130 with ``interrupted``; an unexpected internal error
    exits 3 with one line (the traceback only with ``--debug``). Adds ``--debug``."""

    @functools.wraps(command)
    def wrapper(*args: Any, debug: bool = False, **kwargs: Any) -> None:
        restore = _interrupt_handlers()
        real_stdout = sys.stdout
        sys.stdout = _Stdout(real_stdout)
        try:
            try:
                command(*args, **kwargs)
            finally:
                sys.stdout.flush()  # a closed pipe shows here, inside the contract
        except _TYPER_EXITS:
            raise
        except _StdoutError as err:
            with _unwritable_ok():
                _console(stderr=True).print(f"cannot write to standard output: {err}")
            raise typer.Exit(EXIT_OUTPUT_ERROR) from None
        except GymError as err:
            raise _fail_invalid(err) from None
        except KeyboardInterrupt:
            with _unwritable_ok():
                _console(stderr=True).print("interrupted")
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except BrokenPipeError:
            _discard_stdout()
            raise typer.Exit(EXIT_BROKEN_PIPE) from None
        except Exception as exc:
            err_console = _console(stderr=True)
            with _unwritable_ok():
                if debug or os.environ.get("GYM_DEBUG", "") not in ("", "0"):
                    sys.stderr.write(traceback.format_exc())
                err_console.print(
                    f"internal error: {type(exc).__name__}: {_one_line(str(exc))} (a bug in "
                    "the gym; --debug shows the traceback)"
                )
            raise typer.Exit(EXIT_INTERNAL) from None
        finally:
            sys.stdout = real_stdout
            restore()

    sig = inspect.signature(command, eval_str=True)
    debug_param = inspect.Parameter(
        "debug", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=DebugOpt
    )
    wrapper.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[*sig.parameters.values(), debug_param]
    )
    hints = typing.get_type_hints(command, include_extras=True)
    wrapper.__annotations__ = {**hints, "debug": DebugOpt}
    return wrapper


class _StdoutError(Exception):
    """Standard output cannot be written: not a gym bug, not a broken pipe."""


class _Stdout:
    """sys.stdout, with a failed write (``> /dev/full``; closed with ``>&-``) raised as
    :class:`_StdoutError`; a broken pipe stays a :class:`BrokenPipeError` (exit 141)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _call(self, name: str, *args: Any) -> Any:
        if self._stream is None:
            raise _StdoutError("it is closed")
        try:
            return getattr(self._stream, name)(*args)
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise _StdoutError(reason) from None

    def write(self, text: str) -> int:
        result: int = self._call("write", text)
        return result

    def flush(self) -> None:
        self._call("flush")

    def isatty(self) -> bool:
        return bool(self._stream is not None and self._stream.isatty())

    def fileno(self) -> int:
        result: int = self._call("fileno")
        return result

    def __getattr__(self, name: str) -> Any:
        if self._stream is None:
            raise _StdoutError("it is closed")
        return getattr(self._stream, name)


def _interrupt_handlers() -> Callable[[], None]:
    """Ctrl-C and SIGTERM end a command: the first raises KeyboardInterrupt, so finished
    work is kept (a sweep writes its rows); a second one is ignored while that happens
    (with a note); a third ends at once. Returns the undo."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    count = [0]

    def interrupt(_signum: int, _frame: object) -> None:
        count[0] += 1
        if count[0] == 2:
            sys.stderr.write("still saving what is done; interrupt again to abandon it\n")
            return
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for s, handler in previous.items():
            signal.signal(s, handler)

    return restore


def _discard_stdout() -> None:
    """After a broken pipe, send what is left (and the final flush) nowhere."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


@functools.cache
def _plain_console() -> type[Console]:
    """rich's Console, printing user text literally: no markup, no emoji codes, no
    highlighting, and control characters (escape sequences, carriage returns) shown as
    escapes instead of acting on the terminal. Built on first use (rich loads then)."""
    from rich.console import Console

    class PlainConsole(Console):
        def render_str(self, text: str, *args: Any, **kwargs: Any) -> Text:
            return super().render_str(printable(text, keep_newlines=True), *args, **kwargs)

        def on_broken_pipe(self) -> None:
            """Not exit status 1 (FAIL): the command ends with :data:`EXIT_BROKEN_PIPE`."""
            raise BrokenPipeError

    return PlainConsole


def _console(stderr: bool = False, width: int | None = None) -> Console:
    return _plain_console()(
        stderr=stderr,
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=True,
        width=width,
    )


def _one_line(text: object) -> str:
    """User text (a name, a path, a value) for one line of output: literally, newlines and
    other control characters as escapes."""
    return printable(str(text))


def _styled(text: str, style: str) -> Text:
    from rich.text import Text

    return Text(text, style=style)


def _verdict(passed: bool, bold: bool = True) -> Text:
    from rich.text import Text

    weight = "bold " if bold else ""
    return Text("PASS", style=weight + "green") if passed else Text("FAIL", style=weight + "red")


app = typer.Typer(
    name="gym",
    help="The crawler SLO gym: score a web crawler's capacity design against SLOs under chaos.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click usage errors: short, no boxes
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
    ),
]


def _unwritable_ok() -> contextlib.AbstractContextManager[None]:
    """For the last words on stderr: when stderr cannot be written (``2>/dev/full``, or
    closed), the message is lost but the exit status still tells what happened (2, 3,
    130), instead of Python's exit status 1 for the failed write, which reads as FAIL."""
    return contextlib.suppress(OSError, ValueError, AttributeError)


#: The Python API's argument names, as the options that set them are typed.
_OPTION_NAMES = {
    "tick_ms": "--tick-ms",
    "warmup_s": "--warmup",
    "seed": "--seed",
    "runs": "--runs",
    "engine": "--engine",
    "confidence": "--confidence",
}


def _fail_invalid(err: GymError) -> typer.Exit:
    err_console = _console(stderr=True)
    with _unwritable_ok():
        for problem in err.problems:
            if problem.file is None and problem.field in _OPTION_NAMES:
                problem = dataclasses.replace(problem, field=_OPTION_NAMES[problem.field])
            err_console.print(f"error: {_one_line(problem)}")
    return typer.Exit(EXIT_INVALID)


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
#: The largest seed (with --runs N, seeds go up to seed + N - 1): a 64-bit signed integer,
#: so every tool that reads the JSON or CSV output holds it.
MAX_SEED = 2**63 - 1
SeedOpt = Annotated[int, typer.Option(help="Random seed (0 to 2^63 - 1).", min=0, max=MAX_SEED)]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace an existing file.")]


def _engine_name(value: str) -> str:
    if value not in ENGINES:
        raise typer.BadParameter(f"{value!r} is not an engine; choose one of {', '.join(ENGINES)}")
    return value


EngineOpt = Annotated[
    str,
    typer.Option(help=f"Engine: {' | '.join(ENGINES)}.", callback=_engine_name),
]
MaxRunsOpt = Annotated[
    int,
    typer.Option(
        "--max-runs",
        help="Refuse work of more simulations than this (checked before any run).",
        min=1,
    ),
]


def _check_many(
    runs: int,
    workers: int | None,
    scheduler: str | None,
    confidence: float | None,
    single_ok: bool = False,
    seed: int = 0,
) -> float:
    """Options of many-run commands, checked before any work; returns the confidence."""
    problems = []
    if seed + runs - 1 > MAX_SEED:
        problems.append(
            Problem(None, "--seed", f"{seed} + {runs} runs goes past the largest seed, 2^63 - 1")
        )
    if runs > MAX_RUNS:
        problems.append(Problem(None, "--runs", f"{runs:,} is more than the limit of {MAX_RUNS:,}"))
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
    if not single_ok and runs == 1:
        given = [
            name
            for name, value in (
                ("--workers", workers),
                ("--scheduler", scheduler),
                ("--confidence", confidence),
            )
            if value is not None
        ]
        if given:
            problems.append(
                Problem(
                    None,
                    given[0],
                    "applies to many runs only; add --runs N (N >= 2) or leave it out",
                )
            )
    if scheduler is not None:
        from gym.explore.parallel import check_address

        try:
            check_address(scheduler)
        except GymError as err:
            problems += err.problems
        else:
            if scheduler.partition("://")[0] == "inproc":
                # an in-process scheduler lives in the Python process that made it: a new
                # gym process can never reach one
                problems.append(
                    Problem(
                        None,
                        "--scheduler",
                        f"{scheduler!r}: an inproc:// scheduler is only reachable "
                        "from the process that started it; give tcp://HOST:PORT",
                    )
                )
    if problems:
        raise GymError(problems)
    return DEFAULT_CONFIDENCE if confidence is None else confidence


def _file_name(value: str | Path) -> Path:
    """An output file's path as typed: one ending in a slash names a directory, which
    Path() would silently turn into a file of that name (``-o x.html/`` wrote x.html)."""
    if isinstance(value, str) and value.endswith(("/", os.sep)) and value.strip("/" + os.sep):
        raise typer.BadParameter(f"{value!r} ends in a slash (a directory); give a file name")
    return Path(value)


def _force_needs(force: bool, output: Path | None, option: str) -> None:
    if force and output is None:
        raise GymError.single(None, "--force", f"applies only with {option}; leave it out")


@app.command()
@_guarded
def run(
    design: DesignArg,
    scenario: ScenarioOpt = None,
    seed: SeedOpt = 0,
    engine: EngineOpt = "flow",
    tick_ms: Annotated[
        int,
        typer.Option(
            "--tick-ms",
            help="Tick in ms (divides 1000): time step of the flow "
            "engine, bucket of the per-tick counts in both.",
        ),
    ] = 10,
    warmup: Annotated[
        float,
        typer.Option(
            "--warmup",
            help="Leave URLs that arrived before this many seconds out of the latency "
            "statistics (one run only).",
            min=0,
        ),
    ] = 0.0,
    max_urls: Annotated[
        int | None,
        typer.Option(
            "--max-urls",
            help="The request engine refuses runs expected to offer more URLs than this "
            f"(with --runs: all runs together; default {DEFAULT_MAX_URLS:,}).",
            min=1,
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead of tables.")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Also write the per-window CSV, the summary JSON, the "
            "resolved design and scenario and the plots into this directory (with --runs: "
            "the summary JSON and one CSV row per run).",
            show_default=False,
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Write into an --out directory that holds files.")
    ] = False,
    sets: SetOpt = None,
    runs: Annotated[
        int,
        typer.Option(
            "--runs",
            help="Run this many seeds (seed, seed+1, ...) and report the "
            "spread, pass rate and pass probability.",
            min=1,
        ),
    ] = 1,
    confidence: ConfidenceOpt = None,
    workers: WorkersOpt = None,
    scheduler: SchedulerOpt = None,
    no_fix: Annotated[
        bool,
        typer.Option(
            "--no-fix",
            help="When the design fails, do not search for the cheapest change that "
            "passes (the suggested fix).",
        ),
    ] = False,
) -> None:
    """Simulate DESIGN under a scenario and score it; when it fails, suggest the cheapest
    change that passes. Exit 0 PASS, 1 FAIL, 2 invalid input."""
    from gym.api import default_scenario, simulate
    from gym.inputs.loading import load_design, load_scenario
    from gym.system.crawler import expected_urls

    conf = _check_many(runs, workers, scheduler, confidence, seed=seed)
    if no_fix and runs > 1:
        raise GymError.single(
            None,
            "--no-fix",
            "--runs reports the spread over seeds and suggests no fix; leave --no-fix out",
        )
    _force_needs(force, out, "--out")
    url_limit = _url_limit(max_urls, engine)
    if out is not None:
        from gym.core.outputs import check_dir

        check_dir(out, "--out", force=force)
    if runs > 1:
        if warmup:
            raise GymError.single(
                None,
                "--warmup",
                "applies to one run's latency statistics, which --runs does not report; "
                "leave it out or drop --runs",
            )
        _run_many(
            design,
            scenario,
            sets,
            seed,
            engine,
            runs,
            conf,
            workers,
            scheduler,
            as_json,
            url_limit,
            tick_ms,
            out,
            force,
        )
    d = load_design(design, sets)
    s = load_scenario(scenario or default_scenario())
    long_run = engine == "request" and expected_urls(s, d) > _PROGRESS_ABOVE_URLS
    with _progress(long_run, s.duration_s) as report:
        result = simulate(
            d,
            s,
            seed=seed,
            engine=engine,
            tick_ms=tick_ms,
            warmup_s=warmup,
            max_urls=url_limit,
            progress=report,
        )
    _warn(result.warnings)
    fix = None
    if not result.passed and not no_fix:
        from gym.explore.fix import suggest

        with _status("searching for the cheapest change that passes"):
            fix = suggest(result, user_sets=sets or ())
    if as_json:
        payload = result.to_json()
        payload["fix"] = None if fix is None else fix.to_json()
        sys.stdout.write(json.dumps(payload, indent=2, allow_nan=False) + "\n")
    else:
        console = _console()
        _print_result(result, console)
        if fix is not None:
            _print_fix(fix, console)
    if out is not None:
        from gym.report.files import write_run

        written = write_run(result, out, force=force, fix=fix)
        _console(stderr=True).print(
            f"wrote {len(written)} files to {_one_line(out)}/: "
            + ", ".join(p.name for p in written)
        )
    raise typer.Exit(EXIT_PASS if result.passed else EXIT_FAIL)


def _run_many(
    design: Path,
    scenario: Path | None,
    sets: list[str] | None,
    seed: int,
    engine: str,
    runs: int,
    confidence: float,
    workers: int | None,
    scheduler: str | None,
    as_json: bool,
    max_urls: int,
    tick_ms: int,
    out: Path | None,
    force: bool,
) -> None:
    from rich.table import Table
    from rich.text import Text

    from gym.analysis import rounding
    from gym.analysis.scoring import format_measured as _fmt_measured
    from gym.api import default_scenario, url_budget, validate
    from gym.explore.montecarlo import run_many, runs_needed
    from gym.explore.parallel import make_executor
    from gym.inputs.loading import load_design, load_scenario

    d = load_design(design, sets)
    s = load_scenario(scenario or default_scenario())
    problems = validate(d, s, tick_ms=tick_ms)
    if engine == "request" and (over := url_budget(s, runs, max_urls, designs=[d])) is not None:
        problems.append(over)
    if problems:
        raise GymError(problems)
    warned = rounding.warnings(d, s, engine=engine, tick_ms=tick_ms)
    _warn(warned)
    executor = _closing(make_executor(workers, scheduler))
    with _count_progress(runs, f"{runs} runs") as report:
        mc = run_many(
            d,
            s,
            runs=runs,
            seed=seed,
            engine=engine,
            confidence=confidence,
            executor=executor,
            progress=report,
            tick_ms=tick_ms,
            max_urls=max_urls,
        )
    data = {
        "design": d.name,
        "design_file": d._source,
        "scenario": s.name,
        "scenario_file": s._source,
        "engine": engine,
        "seed": seed,
        "tick_ms": tick_ms,
        "executor": executor.name,
        "warnings": warned,
        **mc.to_json(),
    }
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2, allow_nan=False) + "\n")
    else:
        console = _console()
        console.print(
            Text.assemble(
                "design ",
                (_one_line(d.name), "bold"),
                f" ({_one_line(d._source)}), scenario ",
                (_one_line(s.name), "bold"),
                f", engine {engine}, seeds {seed}..{seed + runs - 1} ({executor.name})",
            )
        )
        table = Table(show_edge=False, pad_edge=False)
        for col in ("SLO", "target", "mean", "std", "min", "max", "pass rate"):
            table.add_column(col, justify="left" if col == "SLO" else "right")
        for st in mc.slos:
            table.add_row(
                st.name,
                f"{st.op} {st.target:g}",
                *(_fmt_measured(st.name, v) for v in (st.mean, st.std, st.min, st.max)),
                f"{st.pass_rate:.0%}",
            )
        console.print(table)
        low, high = mc.ci
        console.print(
            f"\nPasses every SLO in {mc.passes}/{mc.n} runs: pass probability "
            f"{mc.pass_probability:.2f}, 95% interval [{low:.2f}, {high:.2f}] (Wilson)."
        )
        console.print(
            Text.assemble(
                "Verdict: ",
                _verdict(mc.verdict == "pass"),
                f" (rule: PASS if the lower bound >= {confidence:g})",
            )
        )
        if mc.passes == mc.n and mc.verdict == "fail":
            console.print(
                f"Every run passed, but {runs} runs cannot show a pass probability of "
                f"{confidence:g} with 95% confidence; use --runs "
                f"{runs_needed(confidence)} or more."
            )
    if out is not None:
        from gym.report.files import write_runs

        written = write_runs(data, mc.runs, out, force=force)
        _console(stderr=True).print(
            f"wrote {len(written)} files to {_one_line(out)}/: "
            + ", ".join(p.name for p in written)
        )
    raise typer.Exit(EXIT_PASS if mc.verdict == "pass" else EXIT_FAIL)


_OPEN: list[Executor] = []


def _closing(executor: Executor) -> Executor:
    """Remember an executor so that it is closed when the command ends (Dask clients)."""
    _OPEN.append(executor)
    return executor


@app.callback()
def _main_callback(ctx: typer.Context) -> None:
    """The crawler SLO gym: score a web crawler's capacity design against SLOs under chaos."""
    ctx.call_on_close(_close_executors)


def _close_executors() -> None:
    while _OPEN:
        _OPEN.pop().close()


@contextmanager
def _count_progress(total: int, what: str) -> Iterator[Callable[[int], None] | None]:
    """A progress bar on stderr (terminals only), advanced once per finished task."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not console.is_terminal or total < 2:
        yield None
        return
    columns = (
        TextColumn(what),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("work", total=total)
        yield lambda n: bar.advance(task, n)


@contextmanager
def _status(text: str) -> Iterator[None]:
    """A spinner with ``text`` on stderr while a step runs (terminals only)."""
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        yield
        return
    with console.status(text):
        yield


#: A progress callback: called with a count (runs planned, or runs finished).
_Counter = Callable[[int], None]


@contextmanager
def _search_progress() -> Iterator[tuple[_Counter | None, _Counter | None]]:
    """A progress bar on stderr (terminals only) for a search whose work is planned as it
    goes: ``plan`` changes the total, ``advance`` counts finished runs. The total starts
    at every design's first run up to the cost limit, so the time left is at most that
    and shrinks when the search stops early."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    if not console.is_terminal:
        yield None, None
        return
    columns = (
        TextColumn("searching"),
        BarColumn(),
        TextColumn("{task.completed:,.0f}/{task.total:,.0f} runs"),
        TimeElapsedColumn(),
        TextColumn("elapsed, at most"),
        TimeRemainingColumn(),
        TextColumn("left"),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("search", total=0)
        planned = [0]

        def plan(n: int) -> None:
            planned[0] += n
            bar.update(task, total=planned[0])

        yield (lambda n: bar.advance(task, n)), plan


#: The most designs one compare or plot runs side by side.
MAX_DESIGNS = 50

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


def _url_limit(max_urls: int | None, engine: str) -> int:
    """--max-urls is a request-engine limit: refused with the flow engine, not ignored."""
    if max_urls is not None and engine != "request":
        raise GymError.single(
            None, "--max-urls", "limits the request engine only; add --engine request"
        )
    return DEFAULT_MAX_URLS if max_urls is None else max_urls


def _results(
    designs: list[Path],
    scenario: Path | None,
    seed: int,
    engine: str,
    sets: list[str] | None = None,
    max_urls: int = DEFAULT_MAX_URLS,
) -> list[Result]:
    """Load and check everything, then run each design (nothing runs if anything is
    invalid or over a limit)."""
    from gym.api import default_scenario, simulate, url_budget, validate
    from gym.inputs.loading import load_design, load_scenario

    if len(designs) > MAX_DESIGNS:
        raise GymError.single(
            None, "DESIGN", f"{len(designs)} designs; the limit is {MAX_DESIGNS} at once"
        )
    s = load_scenario(scenario or default_scenario())
    loaded = [load_design(d, sets) for d in designs]
    problems = [p for d in loaded for p in validate(d, s)]
    if (
        engine == "request"
        and (over := url_budget(s, len(loaded), max_urls, designs=loaded)) is not None
    ):
        problems.append(over)
    if problems:
        raise GymError(problems)
    results = [simulate(d, s, seed=seed, engine=engine, max_urls=max_urls) for d in loaded]
    for r in results:
        _warn(r.warnings, r.design.name if len(results) > 1 else None)
    return results


def _warn(warnings: Sequence[str], design: str | None = None) -> None:
    """Print each rounding the engine's grid made (:mod:`gym.analysis.rounding`) to stderr."""
    if not warnings:
        return
    console = _console(stderr=True)
    where = f" ({_one_line(design)})" if design else ""
    for text in warnings:
        console.print(f"warning{where}: {text}")


def _exit_all_pass(results: list[Result]) -> typer.Exit:
    """compare, plot and report: 0 when every design passes, 1 when any fails."""
    return typer.Exit(EXIT_PASS if all(r.passed for r in results) else EXIT_FAIL)


@app.command("compare")
@_guarded
def compare_cmd(
    designs: DesignsArg,
    scenario: ScenarioOpt = None,
    seed: SeedOpt = 0,
    engine: EngineOpt = "flow",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    sets: SetOpt = None,
    max_urls: MaxUrlsOpt = None,
) -> None:
    """Run several designs under one scenario and seed; show them side by side.
    Exit 0 when every design passes, 1 when any fails."""
    from rich.table import Table
    from rich.text import Text

    from gym.analysis.scoring import format_measured as _fmt_measured
    from gym.explore.compare import Comparison, shown

    urls = _url_limit(max_urls, engine)
    comparison = Comparison(_results(designs, scenario, seed, engine, sets, urls))
    rs = comparison.results
    if as_json:
        sys.stdout.write(json.dumps(comparison.to_json(), indent=2, allow_nan=False) + "\n")
        raise _exit_all_pass(rs)
    console = _console()
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("")
    for r in rs:
        table.add_column(_one_line(r.design.name), justify="right")
    table.add_row("verdict", *[_verdict(r.passed, bold=False) for r in rs])
    for i, chk in enumerate(rs[0].checks):
        cells = []
        for r in rs:
            c = r.checks[i]
            cell = Text(_fmt_measured(c.name, c.measured))
            if not c.passed:
                cell.append(" x", style="red")
            cells.append(cell)
        table.add_row(f"{chk.name} ({chk.op} {chk.target:g})", *cells)
    if not any(c.name == "cost_units" for c in rs[0].checks):
        table.add_row("cost_units", *[str(r.metrics.cost_units) for r in rs])
    table.add_row("failed URLs", *[f"{r.metrics.failed:,}" for r in rs])
    table.add_row(
        "peak at",
        *[f"{r.metrics.peak_saturation()[1]} t={r.metrics.peak_saturation()[2]:g}s" for r in rs],
    )
    console.print(
        f"scenario {_one_line(rs[0].scenario.name)}, engine {rs[0].engine}, seed {rs[0].seed}"
    )
    console.print(table)
    inputs = comparison.input_differences()
    if inputs:
        console.print(Text("\nInputs that differ", style="bold"))
        given = Table(show_edge=False, pad_edge=False)
        given.add_column("field", no_wrap=True)  # a path cut short names no field
        for r in rs:
            given.add_column(_one_line(r.design.name), justify="right")
        for path, values in inputs.items():
            given.add_row(_one_line(path), *[_one_line(shown(v)) for v in values])
        console.print(given)
    console.print(Text("\nDifferences that matter", style="bold"))
    for line in comparison.differences():
        console.print(f"- {_one_line(line)}")
    raise _exit_all_pass(rs)


@app.command("grade")
@_guarded
def grade_cmd(
    design: DesignArg,
    scenario: ScenarioOpt = None,
    seed: SeedOpt = 0,
    engine: EngineOpt = "flow",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    sets: SetOpt = None,
    max_urls: MaxUrlsOpt = None,
) -> None:
    """Grade a crawler design on the problem's rubric from one run's measurements, beside
    its SLO verdict. Exit 0 when the design passes its SLOs, 1 when it fails (as run), 2
    on bad input."""
    from rich.table import Table
    from rich.text import Text

    from gym.analysis import rubric
    from gym.inputs.loading import load_design
    from gym.models import Design

    urls = _url_limit(max_urls, engine)
    loaded = load_design(design, sets)
    if not isinstance(loaded, Design):
        raise GymError.single(
            str(design), None, "the rubric grades crawler designs (this is a graph design)"
        )
    (r,) = _results([design], scenario, seed, engine, sets, urls)
    grades = rubric.grade(r)
    points, counted = rubric.credit_points(grades)
    if as_json:
        out = {
            "design": r.design.name,
            "scenario": r.scenario.name,
            "engine": r.engine,
            "seed": r.seed,
            "verdict": r.verdict,
            "slos": [c.to_json() for c in r.checks],
            "rubric": [g.to_json() for g in grades],
            "points": points,
            "out_of": counted,
        }
        sys.stdout.write(json.dumps(out, indent=2, allow_nan=False) + "\n")
        raise _exit_all_pass([r])
    console = _console()
    console.print(
        f"design {_one_line(r.design.name)}, scenario {_one_line(r.scenario.name)}, engine "
        f"{r.engine}, seed {r.seed}: SLOs {_verdict(r.passed, bold=False)}"
    )
    table = Table(show_edge=False, pad_edge=False)
    for col in ("rubric item", "credit", "measured"):
        table.add_column(col)
    styles = {"full": "green", "partial": "yellow", "none": "red"}
    for g in grades:
        measured = Text(_one_line(g.measured))
        if g.trap:
            measured.append(f"\ntrap: {_one_line(g.trap)}", style="red")
        table.add_row(g.item, Text(g.credit, style=styles.get(g.credit, "dim")), measured)
    console.print(table)
    console.print(
        f"\n{points:g} of {counted} points on the items this model can grade "
        "(full 1, partial 0.5); untested and not gradable items are not counted."
    )
    raise _exit_all_pass([r])


#: Image formats ``gym plot`` writes; a name without an extension gets ``.png``.
PLOT_SUFFIXES = (".png", ".svg", ".pdf")


@app.command("plot")
@_guarded
def plot_cmd(
    designs: DesignsArg,
    output: Annotated[
        Path,
        typer.Option(
            "-o",
            "--output",
            help="Image file to write: .png, .svg or .pdf (no extension: .png is added).",
            parser=_file_name,
        ),
    ],
    scenario: ScenarioOpt = None,
    seed: SeedOpt = 0,
    engine: EngineOpt = "flow",
    force: ForceOpt = False,
    sets: SetOpt = None,
    max_urls: MaxUrlsOpt = None,
) -> None:
    """Overlay several designs: saturation, served URLs and frontier backlog over time.
    Exit 0 when every design passes, 1 when any fails."""
    from gym.core.outputs import check_file, write_file

    target = check_file(output, "-o", suffixes=PLOT_SUFFIXES, force=force, default_suffix=".png")
    results = _results(designs, scenario, seed, engine, sets, _url_limit(max_urls, engine))
    from gym.report import plots

    fig = plots.overlay(results)
    fmt = target.suffix.lower().lstrip(".")
    write_file(target, lambda tmp: fig.savefig(tmp, format=fmt, dpi=110, bbox_inches="tight"), "-o")
    _console().print(f"wrote {_one_line(target)}")
    raise _exit_all_pass(results)


@app.command("report")
@_guarded
def report_cmd(
    design: DesignArg,
    output: Annotated[
        Path,
        typer.Option(
            "-o", "--output", help="HTML file to write (.html or .htm).", parser=_file_name
        ),
    ],
    scenario: ScenarioOpt = None,
    seed: SeedOpt = 0,
    engine: EngineOpt = "flow",
    force: ForceOpt = False,
    sets: SetOpt = None,
    max_urls: MaxUrlsOpt = None,
) -> None:
    """Write a self-contained HTML report of one run (verdict, tables, plots, timeline,
    the suggested fix when it fails, the resolved inputs). Exit 0 when the design passes,
    1 when it fails."""
    from gym.core.outputs import check_file, write_file

    target = check_file(output, "-o", suffixes=(".html", ".htm"), force=force)
    results = _results([design], scenario, seed, engine, sets, _url_limit(max_urls, engine))
    from gym.explore.fix import suggest
    from gym.report.html import render

    write_file(target, render(results[0], suggest(results[0], user_sets=sets or ())), "-o")
    _console().print(
        f"wrote {_one_line(target)} ({_one_line(results[0].design.name)}: "
        f"{results[0].verdict.upper()})"
    )
    raise _exit_all_pass(results)


@app.command("sweep")
@_guarded
def sweep_cmd(
    design: DesignArg,
    vary: Annotated[
        list[str],
        typer.Option(
            "--vary",
            metavar="PATH=VALUES",
            help="PATH=a..b[:step] or PATH=v1,v2,... (repeatable): the grid.",
            show_default=False,
        ),
    ],
    scenario: ScenarioOpt = None,
    runs: Annotated[int, typer.Option("--runs", help="Seeds per point.", min=1)] = 1,
    seed: SeedOpt = 0,
    engine: EngineOpt = "flow",
    confidence: ConfidenceOpt = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="Also write the rows to a .csv or .parquet file.",
            show_default=False,
            parser=_file_name,
        ),
    ] = None,
    force: ForceOpt = False,
    sets: SetOpt = None,
    workers: WorkersOpt = None,
    scheduler: SchedulerOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
    max_runs: MaxRunsOpt = 200_000,
    max_urls: MaxUrlsOpt = None,
) -> None:
    """Run a grid of what-ifs over DESIGN: one row per point (cost, SLOs, pass rate).
    Exit 0 when at least one point passes, 1 when none does. Ctrl-C (or SIGTERM) stops it
    and keeps (and writes, with -o) the rows finished so far."""
    from gym.api import default_scenario, url_budget
    from gym.explore import sweep
    from gym.explore.parallel import make_executor
    from gym.inputs.loading import load_scenario

    conf = _check_many(runs, workers, scheduler, confidence, single_ok=True, seed=seed)
    _force_needs(force, output, "-o")
    if runs == 1 and confidence is not None:
        raise GymError.single(
            None, "--confidence", "applies to many runs per point only; add --runs N (N >= 2)"
        )
    url_limit = _url_limit(max_urls, engine)
    target = sweep.check_output(output, force) if output is not None else None
    axes = sweep.plan(vary, sets)
    if (planned := sweep.size(axes) * runs) > max_runs:
        raise GymError.single(
            None,
            "--max-runs",
            f"the sweep would run {planned:,} simulations, more than the limit of "
            f"{max_runs:,}; allow it with --max-runs {planned}",
        )
    s = load_scenario(scenario or default_scenario())
    if engine == "request" and (over := url_budget(s, planned, url_limit)) is not None:
        raise GymError([over])
    points = sweep.grid(design, vary, sets)
    if (
        engine == "request"
        and (
            over := url_budget(
                s, planned, url_limit, designs=[q.design for q in points if q.design is not None]
            )
        )
        is not None
    ):
        raise GymError([over])
    sweep.check_system(points, s)
    executor = _closing(make_executor(workers, scheduler))
    total = sum(runs for p in points if p.design is not None)
    try:
        with _count_progress(total, f"{len(points)} points x {runs} runs") as report:
            rows = sweep.run(
                points,
                s,
                runs=runs,
                seed=seed,
                engine=engine,
                confidence=conf,
                executor=executor,
                progress=report,
                max_runs=max_runs,
                max_urls=url_limit,
            )
    except sweep.SweepInterrupted as stop:
        rows, interrupted = stop.rows, True
    else:
        interrupted = False
    notes = sorted({w for r in rows for w in str(r.get("warnings", "")).split(" | ") if w})
    _warn(notes)
    # The rows are printed before the file is written (a write that fails, a full disk or
    # a third Ctrl-C, then loses nothing); an interrupted sweep prints the points it
    # finished and marks the others "not run".
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2, allow_nan=False) + "\n")
    else:
        _print_sweep(rows, [path for path, _ in axes], s.name, engine, runs, seed, conf, executor)
    if interrupted:
        done = sum(1 for r in rows if r["status"] == "ok")
        where = ""
        if target is not None:
            # a second Ctrl-C during the write waits for it; a third abandons the write,
            # and then nothing was written, so the message must not say it was
            try:
                sweep.write(rows, target)
            except KeyboardInterrupt:
                where = f"; not written to {_one_line(target)} (abandoned)"
            else:
                where = f"; written to {_one_line(target)}"
        _console(stderr=True).print(f"interrupted: {done} of {len(rows)} points finished{where}")
        raise typer.Exit(EXIT_INTERRUPTED)
    if target is not None:
        sweep.write(rows, target)
        _console(stderr=True).print(f"wrote {len(rows)} rows to {_one_line(target)}")
    any_pass = any(r.get("verdict") == "pass" for r in rows)
    raise typer.Exit(EXIT_PASS if any_pass else EXIT_FAIL)


def _print_sweep(
    rows: list[dict[str, Any]],
    params: list[str],
    scenario: str | None,
    engine: str,
    runs: int,
    seed: int,
    conf: float,
    executor: Executor,
) -> None:
    from rich.table import Table
    from rich.text import Text

    from gym.analysis.scoring import format_measured as _fmt_measured

    console = _wide_console()
    table = Table(show_edge=False, pad_edge=False)
    slo_cols = [n for n in _slo_names(rows) if n != "cost_units"]
    for col in (*params, "cost", *[_SHORT.get(n, n) for n in slo_cols], "passes", "verdict"):
        table.add_column(_one_line(col), justify="right")
    for row in rows:
        cells: list[str | Text] = [_one_line(row[p]) for p in params]
        if row["status"] != "ok":
            label = "invalid" if row["status"] == "invalid" else str(row["status"])
            table.add_row(
                *cells,
                "-",
                *["-" for _ in slo_cols],
                "-",
                Text.assemble((label, "red"), f": {_one_line(row['error'])}"),
            )
            continue
        cells.append(str(row["cost_units"]))
        for n in slo_cols:
            rate = row[f"{n}_pass_rate"]
            cell = Text(_fmt_measured(n, row[f"{n}_mean"]))
            if rate == 0:
                cell.append(" x", style="red")
            elif rate != 1:
                cell.append(f" ({rate:.0%})")
            cells.append(cell)
        cells.append(f"{round(row['pass_probability'] * row['runs'])}/{row['runs']}")
        cells.append(_verdict(row["verdict"] == "pass", bold=False))
        table.add_row(*cells)
    rule = (
        "each point's verdict is its run's"
        if runs == 1
        else f"verdict: PASS if the 95% Wilson lower bound of the pass rate >= {conf:g}"
    )
    console.print(
        f"scenario {_one_line(scenario)}, engine {engine}, {runs} run(s) per point from seed "
        f"{seed} ({executor.name}); SLO columns are means, x: failed in every run; {rule}"
    )
    console.print(table)


_SHORT = {"throughput_rps": "throughput/s", "peak_saturation": "peak sat."}


def _wide_console() -> Console:
    """Tables of many columns: the terminal's width, or 160 columns when not a terminal."""
    from rich.console import Console

    probe = Console()
    return _console(width=None if probe.is_terminal else 160)


def _slo_names(rows: list[dict[str, object]]) -> list[str]:
    from gym.analysis.scoring import SLO_NAMES

    return [n for n in SLO_NAMES if any(f"{n}_mean" in r for r in rows)]


@app.command("optimize")
@_guarded
def optimize_cmd(
    design: Annotated[
        Path | None,
        typer.Argument(
            help="Optional base design: its service times and crash policy are kept.",
            show_default=False,
            metavar="DESIGN",
        ),
    ] = None,
    scenario: ScenarioOpt = None,
    runs: Annotated[int, typer.Option("--runs", help="Seeds per candidate design.", min=1)] = 20,
    seed: SeedOpt = 0,
    confidence: ConfidenceOpt = None,
    max_cost: Annotated[
        int | None,
        typer.Option(
            "--max-cost",
            help="Search up to this many units (default: the scenario's cost SLO, else 20).",
            min=1,
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="Write the design to this YAML file (.yaml or .yml).",
            show_default=False,
            parser=_file_name,
        ),
    ] = None,
    force: ForceOpt = False,
    workers: WorkersOpt = None,
    scheduler: SchedulerOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    sets: SetOpt = None,
    max_runs: MaxRunsOpt = 500_000,
) -> None:
    """Find the cheapest design that passes every SLO, and say why nothing cheaper does.
    Exit 0 when one is found, 1 when none within the cost limit passes."""
    from rich.text import Text

    from gym.api import default_scenario
    from gym.explore import optimize, unit_space
    from gym.explore.parallel import make_executor
    from gym.inputs.loading import load_design, load_scenario
    from gym.inputs.strict_yaml import dump_yaml

    conf = _check_many(runs, workers, scheduler, confidence, single_ok=True, seed=seed)
    _force_needs(force, output, "-o")
    if runs == 1 and confidence is not None:
        raise GymError.single(
            None, "--confidence", "applies to many runs only; add --runs N (N >= 2)"
        )
    target = None
    if output is not None:
        from gym.core.outputs import check_file

        target = check_file(output, "-o", suffixes=(".yaml", ".yml"), force=force)
    if sets and design is None:
        raise GymError.single(None, "--set", "needs a base DESIGN to change")
    unit_space.check_sets(sets or [])
    s = load_scenario(scenario or default_scenario())
    base = load_design(design, sets) if design is not None else None
    space = unit_space.space_for(s, base)
    unit_space.check_sets(sets or [], space.searched)
    optimize.check(s, runs=runs, confidence=conf, max_cost=max_cost, max_runs=max_runs, space=space)
    executor = _closing(make_executor(workers, scheduler))
    with _search_progress() as (report, plan):
        opt = optimize.search(
            s,
            base=base,
            runs=runs,
            seed=seed,
            confidence=conf,
            max_cost=max_cost,
            executor=executor,
            progress=report,
            plan=plan,
            max_runs=max_runs,
        )
    text = None
    if opt.best is not None:
        low, high = opt.best.result.ci
        header = (
            f"# The cheapest design found by `gym optimize` for scenario "
            f"{_one_line(s.name)}: {opt.best.cost} units.\n# Passes every SLO in "
            f"{opt.best.result.passes}/{opt.best.result.n} runs (seeds {seed}..{seed + runs - 1}); "
            f"pass probability 95% interval [{low:.2f}, {high:.2f}].\n"
        )
        text = header + dump_yaml(unit_space.design_mapping(opt.best.design))
    # The answer is printed before the file is written: a write that fails loses nothing.
    if as_json:
        sys.stdout.write(json.dumps(opt.to_json(), indent=2, allow_nan=False) + "\n")
    else:
        console = _console()
        console.print(
            f"scenario {_one_line(s.name)}: {opt.evaluated} unit-aligned designs, up to "
            f"{runs} runs each ({opt.simulations:,} runs: a design stops when it cannot "
            f"pass), confidence {conf:g} ({executor.name})"
        )
        if text is None or opt.best is None:
            console.print(Text("No design within the cost limit passes every SLO.", style="red"))
        else:
            console.print(
                Text.assemble(
                    "\n",
                    (f"Cheapest passing design: {opt.best.cost} units", "bold"),
                    f" ({opt.best.describe()})\n",
                )
            )
            console.print(text)
        console.print(Text("Why nothing cheaper passes", style="bold"))
        for line in opt.why_nothing_cheaper():
            console.print(f"- {_one_line(line)}")
        if opt.runner_ups:
            console.print(Text("\nMore margin for more units", style="bold"))
            for c in opt.runner_ups:
                console.print(
                    f"- {c.cost} units ({c.describe()}): smallest SLO margin {c.margin():.1%}"
                )
    if target is not None and text is not None:
        from gym.core.outputs import write_file

        write_file(target, text, "-o")
        _console(stderr=as_json).print(f"\nwrote {_one_line(target)}")
    raise typer.Exit(EXIT_PASS if opt.best is not None else EXIT_FAIL)


@app.command("estimate")
@_guarded
def estimate_cmd(
    design: Annotated[
        Path | None,
        typer.Argument(
            help="Optional design: its cache hit ratio sets the DNS figures.",
            show_default=False,
            metavar="DESIGN",
        ),
    ] = None,
    scenario: ScenarioOpt = None,
    pages_per_s: Annotated[
        float | None,
        typer.Option(
            "--pages-per-s",
            help="Base load (default: the scenario's base_rps).",
            min=0,
            show_default=False,
        ),
    ] = None,
    page_kb: Annotated[
        float, typer.Option("--page-kb", help="Page size on the wire, KB.", min=0)
    ] = 100,
    urls: Annotated[
        float, typer.Option("--urls", help="URLs the seen set remembers.", min=1)
    ] = 1e9,
    fp: Annotated[
        float, typer.Option("--fp", help="Bloom filter false-positive rate.", min=1e-12, max=0.999)
    ] = 0.01,
    compression: Annotated[
        float, typer.Option("--compression", help="HTML compression ratio.", min=1)
    ] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    sets: SetOpt = None,
) -> None:
    """Back-of-the-envelope figures: pages/day, bandwidth, storage, Bloom filter, DNS, hosts."""
    from rich.table import Table

    from gym.analysis.estimate import Inputs, estimate
    from gym.api import default_scenario
    from gym.inputs.loading import load_design, load_scenario
    from gym.models import Design

    try:
        s = load_scenario(scenario or default_scenario())
        if s.system != "crawler":
            raise GymError.single(
                s._source, "system", "estimate works out a crawler's figures (a crawler scenario)"
            )
        if sets and design is None:
            raise GymError.single(None, "--set", "needs a DESIGN to change")
        d = load_design(design, sets) if design is not None else None
        if d is not None and not isinstance(d, Design):
            raise GymError.single(
                str(design), None, "estimate reads crawler designs only (this is a graph)"
            )
        inputs = Inputs.of(
            s,
            d,
            pages_per_s=pages_per_s,
            page_kb=page_kb,
            compression=compression,
            urls=urls,
            fp_rate=fp,
        )
    except GymError as err:
        raise _fail_invalid(err) from None
    figures = estimate(inputs)
    if as_json:
        data = {"inputs": dict(inputs.__dict__), "figures": [f.to_json() for f in figures]}
        sys.stdout.write(json.dumps(data, indent=2, allow_nan=False) + "\n")
        return
    console = _wide_console()
    table = Table(show_edge=False, pad_edge=False)
    for col in ("figure", "value", "unit", "formula"):
        table.add_column(col, justify="right" if col == "value" else "left")
    for f in figures:
        whole = abs(f.value) >= 100 or float(f.value).is_integer()
        value = f"{f.value:,.0f}" if whole else f"{f.value:,.2f}"
        table.add_row(f.label, value, f.unit, f.formula)
    console.print(
        f"from scenario {_one_line(s.name)}" + (f" and design {_one_line(d.name)}" if d else "")
    )
    console.print(table)
    if isinstance(d, Design) and d.discovery is not None:
        console.print(
            "note: the design follows links (discovery); these figures are for the seeds "
            "alone, and the link-discovery loop multiplies the pages fetched "
            "(gym run shows how many)",
            soft_wrap=True,
        )


@app.command("schema")
@_guarded
def schema_cmd(
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Directory for the JSON Schema files.")
    ] = Path("schemas"),
    docs: Annotated[
        Path | None,
        typer.Option(
            "--docs", help="Also write one Markdown page per file kind here.", show_default=False
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace files gym did not write.")
    ] = False,
) -> None:
    """Write the JSON Schema of design and scenario files (for editors), and field docs."""
    from gym.inputs import schema

    try:
        written = schema.write(output, docs, force)
    except GymError as err:
        raise _fail_invalid(err) from None
    _console().print("wrote " + ", ".join(_one_line(p) for p in written))


@app.command("validate")
@_guarded
def validate_cmd(design: DesignArg, scenario: ScenarioOpt = None, sets: SetOpt = None) -> None:
    """Check DESIGN (and the scenario, whose catalog prices it) without running it."""
    from gym.api import default_scenario, validate
    from gym.inputs.loading import load_design, load_scenario
    from gym.system import costing

    try:
        d = load_design(design, sets)
        s = load_scenario(scenario or default_scenario())
        problems = validate(d, s)
        if problems:
            raise GymError(problems)
    except GymError as err:
        raise _fail_invalid(err) from None
    units = costing.units_of(d, s.catalog)
    parts = ", ".join(f"{name} {n}" for name, n in units.items() if n)
    console = _console()
    console.print(
        f"{_one_line(design)}: valid design '{_one_line(d.name)}', {sum(units.values())} "
        f"units ({parts})"
    )
    console.print(
        f"{_one_line(s._source)}: valid scenario '{_one_line(s.name)}', {s.duration_s:g} s, "
        f"{len(s.load)} load stage(s), {len(s.faults)} fault(s), {_count_slos(s)} SLO(s)"
    )


@app.command("serve")
@_guarded
def serve_cmd(
    design: Annotated[
        Path | None,
        typer.Argument(
            help="Design file (YAML) to start from. Default: designs/reference.yaml.",
            show_default=False,
            metavar="DESIGN",
        ),
    ] = None,
    scenario: ScenarioOpt = None,
    port: Annotated[
        int, typer.Option(help="Port to listen on (0: any free port).", min=0, max=65535)
    ] = 5006,
    host: Annotated[
        str,
        typer.Option(
            help="Address to listen on. Default: loopback only; another address lets "
            "other machines drive the gym.",
        ),
    ] = "127.0.0.1",
    seed: SeedOpt = 0,
    sets: SetOpt = None,
    max_urls: MaxUrlsOpt = None,
) -> None:
    """Start the playground in the browser: a slider per design field, the verdict, SLOs,
    plots, why it fails and the suggested fix, live as you move them. Needs the serve
    extra (pip install -e '.[serve]'). Stops on Ctrl-C."""
    from gym.api import default_design, default_scenario, validate
    from gym.inputs.loading import load_design, load_scenario

    try:
        import bokeh  # noqa: F401
    except ImportError:
        raise _fail_invalid(
            GymError.single(
                None, "serve", "needs Bokeh: pip install -e '.[serve]' (the serve extra)"
            )
        ) from None
    path = design or default_design()
    try:
        d = load_design(path, sets)
        s = load_scenario(scenario or default_scenario())
        problems = validate(d, s)
        if problems:
            raise GymError(problems)
        from gym.serve import check_port, free_port

        if port == 0:
            port = free_port(host)
        check_port(host, port)
    except GymError as err:
        raise _fail_invalid(err) from None
    from gym.serve import serve

    console = _console()
    if host not in ("127.0.0.1", "localhost", "::1"):
        _console(stderr=True).print(
            f"warning: listening on {_one_line(host)}: anyone who can reach this machine "
            "can use the playground"
        )

    def ready(address: str) -> None:
        console.print(f"playground at {address} (Ctrl-C to stop)")

    # The page names the file as the command line does (the packaged copy by its name).
    shown = str(design) if design is not None else (path.name if path.is_absolute() else str(path))
    serve(
        d,
        s,
        shown,
        host=host,
        port=port,
        seed=seed,
        max_urls=DEFAULT_MAX_URLS if max_urls is None else max_urls,
        ready=ready,
    )


#: A request-engine run expected to offer more URLs than this shows a progress bar
#: (about a second of work per 100,000 URLs).
_PROGRESS_ABOVE_URLS = 200_000


@contextmanager
def _progress(enabled: bool, total_s: float) -> Iterator[Callable[[float], None] | None]:
    """A progress bar on stderr (terminals only) fed with the simulated time."""
    if not enabled:  # a short run: rich's progress bar is not even loaded
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        yield None
        return
    columns = (
        TextColumn("simulating"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f} simulated s"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("run", total=total_s)
        yield lambda t: bar.update(task, completed=t)


def _count_slos(s: object) -> int:
    slos = getattr(s, "slos", None)
    return sum(1 for v in (slos.model_dump().values() if slos else []) if v is not None)


# -- human output ---------------------------------------------------------------------


def _print_result(r: Result, console: Console) -> None:
    from rich.table import Table
    from rich.text import Text

    from gym.analysis.scoring import format_measured as _fmt_measured
    from gym.models import Design

    m = r.metrics
    console.print(
        Text.assemble(
            "design ",
            (_one_line(r.design.name), "bold"),
            f" ({_one_line(r.design._source)}), scenario ",
            (_one_line(r.scenario.name), "bold"),
            f" ({_one_line(r.scenario._source)}), engine {r.engine}, seed {r.seed}",
        ),
        soft_wrap=True,
    )
    table = Table(show_edge=False, pad_edge=False)
    for col, justify in (("SLO", "left"), ("target", "right"), ("measured", "right"), ("", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    _peak, peak_component, peak_at = m.peak_saturation()
    for chk in r.checks:
        measured = _fmt_measured(chk.name, chk.measured)
        if chk.name == "peak_saturation" and peak_component is not None:
            measured += f" ({peak_component}, t={peak_at:g}s)"
        mark = _verdict(chk.passed, bold=not chk.passed)
        table.add_row(chk.name, f"{chk.op} {chk.target:g}", measured, mark)
    if not r.checks:
        table.add_row("(the scenario lists no SLOs)", "", "", "")
    console.print(table)
    console.print(Text.assemble("\nVerdict: ", _verdict(r.passed)))
    skipped = f" + {m.skipped:,} skipped (dedup)" if m.skipped else ""
    console.print(
        f"URLs: {m.offered:,} offered = {m.served:,} served + {m.failed:,} failed{skipped} + "
        f"{m.in_flight_end:,} in flight at the end",
        soft_wrap=True,
    )
    tries = {
        n: int(t.extra["retries"].sum())
        for n, t in m.record.components.items()
        if "retries" in t.extra
    }
    if any(tries.values()):
        said = ", ".join(f"{n:,} at the {c.replace('_', ' ')}" for c, n in tries.items() if n)
        console.print(f"Retries: {said} (later tries of what failed)", soft_wrap=True)
    if links := m.record.links_found():
        console.print(
            f"Links: {m.offered - links:,} seeds offered, {links:,} links found on fetched "
            "pages (each looked up in the seen set)",
            soft_wrap=True,
        )
    if isinstance(r.design, Design):
        policy = (
            "fail (cause crash_loss)"
            if r.design.fetchers.on_crash == "fail"
            else "go back to the frontier"
        )
        console.print(f"Fetches in flight on a crashed replica: {policy}")
    dd = r.dedup()
    if dd and (m.skipped or dd["writes_saved"] or dd["seen_set"] == "bloom" or dd["content_hash"]):
        parts = [
            f"{dd['seen_set']} seen set for {dd['seen_set_urls']:,.0f} URLs: "
            f"{dd['seen_set_memory_GB']:,.1f} GB"
        ]
        if dd["seen_urls_skipped"]:
            parts.append(f"{dd['seen_urls_skipped']:,} seen URLs skipped")
        if dd["url_variants_skipped"]:
            parts.append(f"{dd['url_variants_skipped']:,} variants of known URLs skipped")
        if dd["seen_set"] == "bloom":
            parts.append(
                f"{dd['coverage_lost']:,} new URLs skipped by false positives "
                f"(coverage lost, fp rate {dd['fp_rate']:g})"
            )
        if dd["content_hash"]:
            parts.append(
                f"content hashing saved {dd['writes_saved']:,} store writes "
                f"({dd['bytes_saved_GB']:,.1f} GB)"
            )
        console.print("Dedup: " + "; ".join(parts), soft_wrap=True)

    comp = Table(show_edge=False, pad_edge=False, title=None)
    for col in ("component", "units", "peak saturation", "failed"):
        comp.add_column(col, justify="left" if col == "component" else "right")
    for name, cw in m.components.items():
        value, w = cw.peak()
        sat = "-" if value is None or w is None else f"{value:.2f} at t={m.window_s[w]:g}s"
        if cw.outage.any():
            sat += f", down {int(cw.outage.sum())} s"
        comp.add_row(name, str(m.units.get(name, 0)), sat, f"{int(cw.failed_total.sum()):,}")
    console.print()
    console.print(comp)

    if r.latency:
        _print_latency(r, console)
    _print_budget(r, console)

    headlines = [e for e in r.explanations if e.kind == "slo"]
    details = [e for e in r.explanations if e.kind != "slo"]
    if headlines:
        console.print(Text("\nWhy it fails", style="bold"))
        _print_explanations(headlines, console)
    if details:
        console.print(Text("\nWhere URLs were lost" if m.failed else "\nNotes", style="bold"))
        _print_explanations(details, console)


def _print_fix(fix: Fix | NoFix, console: Console) -> None:
    """The suggested fix (gym.explore.fix): what to change and how the changed design does."""
    from rich.table import Table
    from rich.text import Text

    from gym.explore.fix import Fix

    if not isinstance(fix, Fix):
        console.print(Text("\nNo fix found", style="bold"))
        console.print(f"  {_one_line(fix.summary())}")
        return
    r = fix.result
    console.print(
        Text.assemble(
            ("\nSuggested fix", "bold"),
            f" (the cheapest change found; flow engine, seed {r.seed}): ",
            _verdict(r.passed),
            f" at {fix.cost_units} units",
        )
    )
    table = Table(show_edge=False, pad_edge=False, show_header=False, box=None)
    for c in fix.changes:
        table.add_row(
            "  " + _one_line(c.path), _one_line(c.shown_old), "->", _one_line(c.shown_new)
        )
    console.print(table)
    m = r.metrics
    console.print(
        f"  then: throughput {m.throughput_rps:,.0f}/s, availability {m.availability:.4f}, "
        f"peak saturation {m.peak_saturation()[0]:.2f}"
    )
    how = "apply it (in place of your --set options)" if fix.user_sets else "apply it"
    console.print(f"  {how}: " + " ".join(f"--set {_one_line(s)}" for s in fix.sets()))


def _print_budget(r: Result, console: Console) -> None:
    from rich.table import Table

    from gym.analysis.budget import format_fraction

    b = r.budget
    if b.target is None or not b.spent:
        return
    share = format_fraction(b.fraction_spent) if b.allowed > 0 else "over: none allowed"
    console.print(
        f"\nError budget: {b.allowed:,.0f} failed URLs allowed ({1 - b.target:.1%} of the "
        f"{r.metrics.finished:,} that finished); {b.spent:,} spent ({share}).",
        soft_wrap=True,
    )
    table = Table(show_edge=False, pad_edge=False)
    for col in ("spent by", "URLs", "of budget", "causes"):
        table.add_column(col, justify="right" if col in ("URLs", "of budget") else "left")
    for e in b.by_event:
        causes = ", ".join(
            f"{c} {n:,}" for c, n in sorted(e.by_cause.items(), key=lambda x: -x[1]) if n
        )
        frac = f"{e.urls / b.allowed:.0%}" if b.allowed else "-"
        table.add_row(
            f"{_one_line(e.name)} (t={e.start_s:g}-{e.end_s:g}s)", f"{e.urls:,}", frac, causes
        )
    console.print(table)


def _print_latency(r: Result, console: Console) -> None:
    from rich.table import Table

    from gym.models import Design

    how = "measured per URL" if r.engine == "request" else "estimated by the flow engine"
    warm = f", URLs arriving after t={r.warmup_s:g}s" if r.warmup_s else ""
    table = Table(show_edge=False, pad_edge=False, title=None)
    for col in ("latency (ms)", "mean", "p50", "p95", "p99", "URLs"):
        table.add_column(col, justify="left" if col.startswith("latency") else "right")
    for name, st in r.latency.items():
        table.add_row(
            name.replace("_", " ") if name == "end_to_end" else name,
            f"{st.mean:,.1f}",
            f"{st.p50:,.1f}",
            f"{st.p95:,.1f}",
            f"{st.p99:,.1f}",
            f"{st.count:,}",
        )
    console.print(f"\nLatency, {how}{warm}:")
    console.print(table)
    if r.engine == "flow" and isinstance(r.design, Design) and r.design.retries is not None:
        console.print(
            "(the flow engine's estimate leaves out the waits between retries; the request "
            "engine measures them)",
            soft_wrap=True,
        )


def _print_explanations(explanations: list[Explanation], console: Console) -> None:
    width = max(console.width, 40)
    for e in explanations:
        console.print(
            textwrap.fill(_one_line(e.text), width, initial_indent="- ", subsequent_indent="  "),
            markup=False,
            soft_wrap=True,
        )
        for line in e.details:
            console.print(
                textwrap.fill(
                    _one_line(line), width, initial_indent="    * ", subsequent_indent="      "
                ),
                markup=False,
                soft_wrap=True,
            )


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
