"""Flow engine vs a straightforward per-request SimPy model, side by side, in-process.

    python -m benchmarks.bench_flow_vs_request [--rounds 3] [--design designs/reference.yaml]

Each round runs the baseline once and the flow engine (``gym.simulate``: engine,
metrics, scoring and explanations) several times, interleaved, so both see the same
machine load; the figure is the ratio of the medians. Results go to stdout and to
benchmarks/results/flow_vs_request.json.
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--design", default=str(ROOT / "designs" / "reference.yaml"))
    parser.add_argument("--scenario", default=str(ROOT / "scenarios" / "crawler-chaos.yaml"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--flow-runs", type=int, default=20, help="flow runs per round")
    parser.add_argument("--out", default=str(HERE / "results" / "flow_vs_request.json"))
    args = parser.parse_args()

    design = gym.load_design(args.design)
    scenario = gym.load_scenario(args.scenario)
    gym.simulate(design, scenario, seed=0)  # warm up imports and caches

    flow_s: list[float] = []
    base_s: list[float] = []
    base_totals = None
    for r in range(args.rounds):
        t = time.perf_counter()
        base_totals = baseline_request.run(design, scenario, seed=r)
        base_s.append(time.perf_counter() - t)
        for i in range(args.flow_runs):
            t = time.perf_counter()
            result = gym.simulate(design, scenario, seed=r * args.flow_runs + i)
            flow_s.append(time.perf_counter() - t)
    assert base_totals is not None
    m = result.metrics
    report = {
        "design": design.name,
        "scenario": scenario.name,
        "urls_offered_per_run": m.offered,
        "baseline_median_s": statistics.median(base_s),
        "flow_median_s": statistics.median(flow_s),
        "ratio_baseline_over_flow": statistics.median(base_s) / statistics.median(flow_s),
        "flow_urls_per_wall_s": m.offered / statistics.median(flow_s),
        "baseline_urls_per_wall_s": base_totals.offered / statistics.median(base_s),
        "availability_flow": m.availability,
        "availability_baseline": base_totals.served / (base_totals.served + base_totals.failed),
        "rounds": args.rounds,
        "flow_runs_per_round": args.flow_runs,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    for key, value in report.items():
        print(f"{key:28} {value:,.4f}" if isinstance(value, float) else f"{key:28} {value}")


if __name__ == "__main__":
    main()
