"""The gym's engines against a straightforward per-request SimPy model, side by side.

    python -m benchmarks.bench_engines [--design designs/reference.yaml] [--rounds 3]

Each round runs, in the same process and one after the other, the baseline
(``baseline_request.run``), the request engine and the flow engine (``gym.simulate``:
engine, metrics, scoring and explanations, everything ``gym run`` does but printing;
the flow engine several times, its runs being short). Medians over the rounds give
the ratios, so both sides of a ratio see the same machine load. Results go to stdout
and to benchmarks/results/engines-<design>.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import gym
from benchmarks import baseline_request

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--design", default=str(ROOT / "designs" / "reference.yaml"))
    parser.add_argument("--scenario", default=str(ROOT / "scenarios" / "crawler-chaos.yaml"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--flow-runs", type=int, default=20, help="flow runs per round")
    parser.add_argument("--out", default=None, help="JSON file for the results")
    args = parser.parse_args()

    design = gym.load_design(args.design)
    scenario = gym.load_scenario(args.scenario)
    gym.simulate(design, scenario, seed=0)  # warm up imports and caches

    times: dict[str, list[float]] = {"baseline": [], "request": [], "flow": []}
    totals: dict[str, list[float]] = {"baseline": [], "request": [], "flow": []}
    offered = 0
    for r in range(args.rounds):
        t = time.perf_counter()
        base = baseline_request.run(design, scenario, seed=r)
        times["baseline"].append(time.perf_counter() - t)
        totals["baseline"].append(base.served / max(1, base.served + base.failed))
        t = time.perf_counter()
        req = gym.simulate(design, scenario, seed=r, engine="request")
        times["request"].append(time.perf_counter() - t)
        totals["request"].append(req.metrics.availability)
        offered = req.metrics.offered
        for i in range(args.flow_runs):
            t = time.perf_counter()
            flow = gym.simulate(design, scenario, seed=r * args.flow_runs + i)
            times["flow"].append(time.perf_counter() - t)
        totals["flow"].append(flow.metrics.availability)

    med = {k: statistics.median(v) for k, v in times.items()}
    report = {
        "design": design.name,
        "scenario": scenario.name,
        "urls_offered_per_run": offered,
        "median_s": med,
        "urls_per_wall_s": {k: offered / v for k, v in med.items()},
        "speedup_over_baseline": {
            "request": med["baseline"] / med["request"],
            "flow": med["baseline"] / med["flow"],
        },
        "availability_mean": {k: statistics.fmean(v) for k, v in totals.items()},
        "rounds": args.rounds,
        "flow_runs_per_round": args.flow_runs,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    out = Path(args.out or HERE / "results" / f"engines-{design.name}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
