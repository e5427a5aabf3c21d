"""Designs evaluated per second: one process vs a local pool vs a local Dask cluster.

    python -m benchmarks.bench_executors [--points 40] [--runs 5]

One sweep (``--points`` values of fetchers.replicas x cache.hit_ratio, ``--runs`` seeds
each, flow engine) runs on each executor in turn, in this order, twice; the figure is
designs-runs per wall second, and the ratios against one process. The Dask cluster is a
``distributed.LocalCluster`` on loopback with as many single-thread worker processes as
cores, started before timing. The rows are checked identical across executors.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import gym
from gym.explore import sweep
from gym.explore.parallel import DaskCluster, LocalPool, Serial

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    from distributed import LocalCluster

    sc = gym.load_scenario(ROOT / "scenarios" / "crawler-chaos.yaml")
    points = sweep.grid(
        ROOT / "designs" / "reference.yaml",
        ["fetchers.replicas=1..10", "cache.hit_ratio=0.6,0.8,0.92,0.96"],
    )
    tasks = len(points) * args.runs
    cores = os.cpu_count() or 1
    cluster = LocalCluster(
        n_workers=cores,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    )
    dask = DaskCluster(cluster.scheduler_address)
    executors = {"serial": Serial(), "pool": LocalPool(cores), "dask": dask}
    times: dict[str, list[float]] = {k: [] for k in executors}
    rows: dict[str, list[dict[str, object]]] = {}
    try:
        for _ in range(args.repeats):
            for name, ex in executors.items():
                t = time.perf_counter()
                rows[name] = sweep.run(points, sc, runs=args.runs, executor=ex)
                times[name].append(time.perf_counter() - t)
    finally:
        dask.close()
        cluster.close()
    assert rows["serial"] == rows["pool"] == rows["dask"], "executors disagree"
    best = {k: min(v) for k, v in times.items()}
    report = {
        "points": len(points),
        "runs_per_point": args.runs,
        "simulations": tasks,
        "best_wall_s": best,
        "simulations_per_s": {k: tasks / v for k, v in best.items()},
        "speedup_over_serial": {k: best["serial"] / v for k, v in best.items()},
        "cores": cores,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    out = HERE / "results" / "executors.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
