"""Every speed goal of the gym as a ratio against its baseline, measured side by side in
one run (issue 14's table).

    python -m benchmarks.bench_ratios [--rounds 5] [--skip-request]

| what | baseline |
|---|---|
| `gym --help` | `python -c 'import typer'` |
| `gym run designs/reference.yaml` | `python -c 'import numpy, simpy, pydantic, typer, yaml'` |
| flow `gym.simulate` (engine + scoring) | `baseline_numpy.run`, the same model in plain numpy |
| request engine `gym.simulate` | `baseline_request.run`, a per-request SimPy model |
| request engine memory per URL | the same baseline's |
| `gym optimize` (chaos, 20 runs, one process) | the search running every seed of every design |

Commands are timed as CPU time of a child process (user + system), so a busy machine
slows both sides of a ratio alike; each round runs a command and its baseline one after
the other, and the ratio is of the medians over the rounds. Bytecode caching is on, as
on a user's machine (a first round writes the caches and is not counted). Results go to
stdout and to benchmarks/results/ratios.json.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gym
from benchmarks.report import write_results

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
REFERENCE = ROOT / "designs" / "reference.yaml"
STARTER = ROOT / "designs" / "starter.yaml"
CHAOS = ROOT / "scenarios" / "crawler-chaos.yaml"
GYM = [sys.executable, "-m", "gym"]
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def child_cpu(argv: list[str]) -> float:
    """CPU seconds (user + system) of one child process running ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def child_peak_mb(setup: str, code: str) -> float:
    """Peak memory (MB) Python and numpy allocate while a child process runs ``code``
    after ``setup`` (tracemalloc: what the run itself holds, not the imports)."""
    probe = (
        f"{setup}\nimport tracemalloc\ntracemalloc.start()\n{code}\n"
        "print(tracemalloc.get_traced_memory()[1])"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=ENV, capture_output=True, text=True
    )
    return int(out.stdout.split()[-1]) / 1e6


def in_process(fn: Callable[[], Any], repeat: int = 1) -> float:
    """CPU seconds per call of ``fn`` in this process."""
    t = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - t) / repeat


def ratio_row(name: str, ours: list[float], base: list[float], goal: str) -> dict[str, Any]:
    a, b = statistics.median(ours), statistics.median(base)
    return {"what": name, "ours_s": a, "baseline_s": b, "ratio": a / b, "goal": goal}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip-request", action="store_true", help="leave out the slow rows")
    parser.add_argument("--out", default=str(HERE / "results" / "ratios.json"))
    args = parser.parse_args()
    from benchmarks import baseline_numpy, baseline_request
    from gym.explore import optimize

    design = gym.load_design(REFERENCE)
    scenario = gym.load_scenario(CHAOS)
    commands = {
        "help": ([*GYM, "--help"], [sys.executable, "-c", "import typer"]),
        "run": (
            [*GYM, "run", str(REFERENCE), "--no-headroom"],  # as the goal was set
            [sys.executable, "-c", "import numpy, simpy, pydantic, typer, yaml"],
        ),
    }
    for ours, base in commands.values():  # write the bytecode caches first
        child_cpu(ours)
        child_cpu(base)
    gym.simulate(design, scenario)
    samples: dict[str, tuple[list[float], list[float]]] = {
        k: ([], []) for k in ("help", "run", "flow", "request", "optimize")
    }
    starter = gym.load_design(STARTER)
    for r in range(args.rounds):
        for key, (ours, base) in commands.items():
            samples[key][0].append(child_cpu(ours))
            samples[key][1].append(child_cpu(base))
        for d in (design, starter):
            samples["flow"][0].append(
                in_process(lambda d=d, r=r: gym.simulate(d, scenario, seed=r), 10)
            )
            samples["flow"][1].append(
                in_process(lambda d=d, r=r: baseline_numpy.run(d, scenario, seed=r), 10)
            )
        if r < 2:  # the searches take seconds: two rounds
            samples["optimize"][0].append(
                in_process(lambda: optimize.search(scenario, runs=20, seed=0))
            )
            staged = optimize._stages
            optimize._stages = lambda n: [range(n)]  # type: ignore[assignment]
            try:
                samples["optimize"][1].append(
                    in_process(lambda: optimize.search(scenario, runs=20, seed=0))
                )
            finally:
                optimize._stages = staged  # type: ignore[assignment]
        if not args.skip_request and r < 3:
            samples["request"][0].append(
                in_process(lambda r=r: gym.simulate(design, scenario, seed=r, engine="request"))
            )
            samples["request"][1].append(
                in_process(lambda r=r: baseline_request.run(design, scenario, seed=r))
            )
    rows = [
        ratio_row("`gym --help` vs `import typer`", *samples["help"], "<= 1.5x"),
        ratio_row(
            "`gym run` reference vs `import numpy, simpy, pydantic, typer, yaml`",
            *samples["run"],
            "<= 1.3x",
        ),
        ratio_row("flow `simulate` vs the same model in plain numpy", *samples["flow"], "<= 8x"),
        ratio_row(
            "`gym optimize` (chaos, 20 runs) vs every seed of every design",
            *samples["optimize"],
            "<= 5 s CPU",
        ),
    ]
    if samples["request"][0]:
        rows.append(
            ratio_row(
                "request engine vs per-request SimPy baseline", *samples["request"], ">= 4x faster"
            )
        )
        load = (
            "import gym\nd = gym.load_design('designs/reference.yaml')\n"
            "s = gym.load_scenario('scenarios/crawler-chaos.yaml')\n"
            "from benchmarks import baseline_request\n"
        )
        ours = child_peak_mb(load, "gym.simulate(d, s, engine='request')")
        base = child_peak_mb(load, "baseline_request.run(d, s)")
        urls = gym.simulate(design, scenario).metrics.offered
        rows.append(
            {
                "what": "request engine memory per URL vs the baseline's (traced peak)",
                "ours_s": ours * 1e6 / urls,
                "baseline_s": base * 1e6 / urls,
                "ratio": ours / base,
                "goal": "<= 0.2x",
                "unit": "bytes per URL",
            }
        )
    print(f"{platform.python_version()}, {os.cpu_count()} cores, {args.rounds} rounds")
    print("| what | ours | baseline | ratio | goal |")
    print("|---|---|---|---|---|")
    for row in rows:
        unit = row.get("unit")
        if unit:
            a, b = f"{row['ours_s']:,.0f} B", f"{row['baseline_s']:,.0f} B"
        else:
            a, b = _seconds(row["ours_s"]), _seconds(row["baseline_s"])
        print(f"| {row['what']} | {a} | {b} | {row['ratio']:.2f}x | {row['goal']} |")
    write_results(args.out, args.rounds, rows)


def _seconds(s: float) -> str:
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.2f} s"


if __name__ == "__main__":
    main()
