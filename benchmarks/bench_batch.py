"""Many runs at once (issue 27): the flow engine's batches against runs one by one.

    python -m benchmarks.bench_batch               # 3 rounds, about 4 minutes
    python -m benchmarks.bench_batch --rounds 1 --quick

Three parts, each measured side by side (alternating, median of the rounds; CPU time):

1. The issue's goals, as commands in child processes: ``gym run designs/reference.yaml
   --runs 500 --workers 1`` and a sweep of 5 x 4 points x 20 runs, each against one
   ``gym run designs/reference.yaml`` (imports and all).
2. Runs per second of CPU, in this process, for the reference and the starter under the
   chaos scenario: runs one by one (``evaluate`` per seed, what every ``--runs`` did
   before), in batches of 1, 10, 100 and 1,000 (:func:`gym.explore.montecarlo.run_tasks`,
   which splits them by its memory budget), and the plain-numpy model
   (``baseline_numpy.py``, the flow engine's speed baseline).
3. Memory: the traced peak of 1,000 reference runs in batches, with the budget and the
   batch size it gave, and of one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

from benchmarks import baseline_numpy
from benchmarks.bench_ratios import (
    CHAOS,
    GYM,
    HERE,
    REFERENCE,
    STARTER,
    child_cpu,
    child_peak_mb,
)
from benchmarks.report import write_results

SWEEP = [
    *GYM,
    "sweep",
    str(REFERENCE),
    "--vary",
    "fetchers.replicas=3..7",
    "--vary",
    "cache.hit_ratio=0.85,0.9,0.92,0.95",
    "--runs",
    "20",
    "--workers",
    "1",
]
RUNS_500 = [*GYM, "run", str(REFERENCE), "--runs", "500", "--workers", "1"]
#: One ``gym run`` as the issue measured it: the run and its report, without the headroom
#: margins added since (issue 29; about 20 more flow runs).
ONE = [*GYM, "run", str(REFERENCE), "--no-headroom"]


def commands(rounds: int) -> list[dict[str, Any]]:
    """Part 1: each command's CPU against one ``gym run`` (alternated, medians)."""
    one: list[float] = []
    many: list[float] = []
    sweep: list[float] = []
    for _ in range(rounds):
        one.append(child_cpu(ONE))
        many.append(child_cpu(RUNS_500))
        one.append(child_cpu(ONE))
        sweep.append(child_cpu(SWEEP))
    base = statistics.median(one)
    return [
        {
            "what": "gym run designs/reference.yaml --runs 500 --workers 1",
            "cpu_s": statistics.median(many),
            "one_run_s": base,
            "ratio": statistics.median(many) / base,
            "goal": "<= 2.5x one gym run",
        },
        {
            "what": "gym sweep, 5 x 4 points x 20 runs, --workers 1",
            "cpu_s": statistics.median(sweep),
            "one_run_s": base,
            "ratio": statistics.median(sweep) / base,
            "goal": "<= 2.5x one gym run",
        },
    ]


def per_second(design_path: Any, sizes: list[int], rounds: int) -> dict[str, Any]:
    """Part 2: runs per CPU second for one design, each way, alternated round by round."""
    import gym
    from gym.explore import montecarlo

    design = gym.load_design(design_path)
    scenario = gym.load_scenario(CHAOS)
    montecarlo.run_tasks(montecarlo.tasks_for(design, scenario, range(2)))  # warm up
    times: dict[str, list[float]] = {}

    def timed(key: str, runs: int, fn: Any) -> None:
        t = time.process_time()
        fn()
        times.setdefault(key, []).append((time.process_time() - t) / runs)

    singles = 20
    for _ in range(rounds):
        tasks = montecarlo.tasks_for(design, scenario, range(singles))
        timed("one by one", singles, lambda ts=tasks: [montecarlo.evaluate(t) for t in ts])
        for n in sizes:
            batch = montecarlo.tasks_for(design, scenario, range(n))
            timed(f"batches of {n:,}", n, lambda b=batch: montecarlo.run_tasks(b))
        timed(
            "plain numpy",
            singles,
            lambda: [baseline_numpy.run(design, scenario, seed=s) for s in range(singles)],
        )
    ms = {k: 1000.0 * statistics.median(v) for k, v in times.items()}
    single = ms["one by one"]
    numpy_ms = ms["plain numpy"]
    return {
        "design": design_path.stem,
        "rows": [
            {
                "how": k,
                "ms_per_run": v,
                "runs_per_cpu_s": 1000.0 / v,
                "vs_one_by_one": v / single,
                "vs_numpy": v / numpy_ms,
            }
            for k, v in ms.items()
        ],
    }


def memory(runs: int) -> dict[str, Any]:
    """Part 3: traced peaks (MB) of ``runs`` reference runs in batches, and of one run."""
    from gym.explore import montecarlo

    setup = (
        "import gym\nfrom gym.explore import montecarlo as m\n"
        f"d = gym.load_design({str(REFERENCE)!r})\ns = gym.load_scenario({str(CHAOS)!r})\n"
        "m.run_tasks(m.tasks_for(d, s, range(1)))"
    )
    import gym

    tasks = montecarlo.tasks_for(gym.load_design(REFERENCE), gym.load_scenario(CHAOS), range(runs))
    size = len(montecarlo.batches(tasks)[0].seeds)
    return {
        "runs": runs,
        "budget_mb": montecarlo.BATCH_BYTES / 2**20,
        "estimate_mb_per_run": montecarlo.run_bytes(tasks[0]) / 2**20,
        "runs_per_batch": size,
        "peak_mb": child_peak_mb(setup, f"m.run_tasks(m.tasks_for(d, s, range({runs})))"),
        "one_run_peak_mb": child_peak_mb(setup, "m.run_tasks(m.tasks_for(d, s, range(1)))"),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="batches up to 100, no commands")
    args = parser.parse_args(argv)
    sizes = [1, 10, 100] if args.quick else [1, 10, 100, 1000]
    out: dict[str, Any] = {"rounds": args.rounds}
    if not args.quick:
        out["commands"] = commands(args.rounds)
        for row in out["commands"]:
            print(
                f"{row['what']}: {row['cpu_s']:.2f} s CPU, {row['ratio']:.2f}x one run "
                f"({row['one_run_s']:.2f} s); goal {row['goal']}"
            )
    out["per_second"] = [per_second(p, sizes, args.rounds) for p in (REFERENCE, STARTER)]
    for part in out["per_second"]:
        print(f"\n{part['design']}:")
        for row in part["rows"]:
            print(
                f"  {row['how']:>18}: {row['ms_per_run']:6.2f} ms a run, "
                f"{row['runs_per_cpu_s']:6.1f} runs/s of CPU, {row['vs_one_by_one']:.2f}x one by "
                f"one, {row['vs_numpy']:.2f}x plain numpy"
            )
    out["memory"] = memory(100 if args.quick else 1000)
    m = out["memory"]
    print(
        f"\nmemory: {m['runs']:,} reference runs in batches of {m['runs_per_batch']} "
        f"(budget {m['budget_mb']:.0f} MB, estimate {m['estimate_mb_per_run']:.1f} MB a run): "
        f"peak {m['peak_mb']:.0f} MB; one run {m['one_run_peak_mb']:.1f} MB"
    )
    rows = [{"part": "commands", **r} for r in out.get("commands", [])]
    rows += [
        {"part": "per_second", "design": p["design"], **r}
        for p in out["per_second"]
        for r in p["rows"]
    ]
    rows.append({"part": "memory", **m})
    name = "batch-quick.json" if args.quick else "batch.json"
    write_results(HERE / "results" / name, args.rounds, rows)


if __name__ == "__main__":
    main(sys.argv[1:])
