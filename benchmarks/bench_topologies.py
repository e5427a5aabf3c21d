"""The request engine on every shipped design against a straightforward per-request SimPy
model of it (``baseline_topology.run``), side by side.

    python -m benchmarks.bench_topologies [--rounds 3] [--only NAME] [--deep]

Rows: every shipped crawler design (``designs/*.yaml``, ``designs/levers/*.yaml``) under
``scenarios/crawler-chaos.yaml``, and each shipped graph system under its own scenario;
``--deep`` adds the discovery crawler ``designs/levers/seen-set-4.yaml`` under
``scenarios/levers/deep-crawl.yaml``, whose pages yield links (about 4 million lookups a
run). The engine walks every design's topology (a crawler's is its built-in graph,
:func:`gym.system.compiled.system_topology`) and the baseline walks the same graph. Each
round runs the engine (``gym.simulate``, engine + scoring) and the baseline one after the
other, in this process, timed as CPU time; the ratio is of the medians over the rounds, as
``bench_ratios`` does. CPU time per URL counts every URL offered (a crawler's links
included). Results go to stdout and to benchmarks/results/topologies.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import gym
from benchmarks.report import write_results
from gym.system import compiled

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

DISCOVERY = "designs/levers/seen-set-4.yaml"
CHAOS = "scenarios/crawler-chaos.yaml"


def rows() -> list[tuple[str, str, str]]:
    """(name, design, scenario) for every shipped design under the scenario it goes with."""
    crawlers = sorted(ROOT.glob("designs/*.yaml")) + sorted(ROOT.glob("designs/levers/*.yaml"))
    out = [(p.stem, str(p.relative_to(ROOT)), CHAOS) for p in crawlers]
    for system in ("ingestion", "url-shortener"):
        for p in sorted(ROOT.glob(f"designs/systems/{system}*.yaml")):
            out.append((p.stem, str(p.relative_to(ROOT)), f"scenarios/systems/{system}.yaml"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default=None, help="rows whose name contains this")
    parser.add_argument("--deep", action="store_true", help="add the deep crawl (minutes)")
    parser.add_argument("--out", default=str(HERE / "results" / "topologies.json"))
    args = parser.parse_args()
    from benchmarks import baseline_topology

    measured: list[dict[str, Any]] = []
    todo = rows()
    if args.deep:
        todo.append(("seen-set-4, deep crawl", DISCOVERY, "scenarios/levers/deep-crawl.yaml"))
    for name, d, s in todo:
        if args.only and args.only not in name:
            continue
        design = gym.load_design(ROOT / d)
        scenario = gym.load_scenario(ROOT / s)
        graph = compiled.system_topology(design, scenario)
        ours: list[float] = []
        base: list[float] = []
        urls: list[int] = []
        base_urls: list[int] = []
        avail: list[float] = []
        base_avail: list[float] = []
        for r in range(args.rounds):
            t = time.process_time()
            res = gym.simulate(design, scenario, seed=r, engine="request", max_urls=10**8)
            ours.append(time.process_time() - t)
            rec = res.metrics.record
            offered = int(rec.offered.sum())
            urls.append(offered)
            avail.append(res.metrics.availability)
            t = time.process_time()
            tot = baseline_topology.run(graph, scenario, seed=r)
            base.append(time.process_time() - t)
            base_urls.append(tot.offered)
            base_avail.append(tot.served / max(1, tot.served + tot.failed))
        a, b = statistics.median(ours), statistics.median(base)
        u, bu = statistics.median(urls), statistics.median(base_urls)
        row = {
            "what": name,
            "design": d,
            "scenario": s,
            "ours_s": a,
            "baseline_s": b,
            "urls": u,
            "baseline_urls": bu,
            "ours_us_per_url": a / u * 1e6,
            "baseline_us_per_url": b / bu * 1e6,
            "speedup": (b / bu) / (a / u),
            "availability": statistics.fmean(avail),
            "baseline_availability": statistics.fmean(base_avail),
        }
        measured.append(row)
        print(json.dumps(row), flush=True)
    print(f"{platform.python_version()}, {os.cpu_count()} cores, {args.rounds} rounds")
    head = "| what | engine | baseline | engine us/URL | baseline us/URL | faster |"
    print(head + " availability (engine / baseline) |")
    print("|---|---|---|---|---|---|---|")
    for row in measured:
        print(
            f"| {row['what']} | {row['ours_s']:.2f} s | {row['baseline_s']:.2f} s "
            f"| {row['ours_us_per_url']:.1f} | {row['baseline_us_per_url']:.1f} "
            f"| {row['speedup']:.1f}x | {row['availability']:.4f} / "
            f"{row['baseline_availability']:.4f} |"
        )
    slowest = min(measured, key=lambda row: row["speedup"], default=None)
    if slowest is not None:
        print(f"slowest: {slowest['what']}, {slowest['speedup']:.1f}x (goal: at least 4x)")
    write_results(args.out, args.rounds, measured)


if __name__ == "__main__":
    main()
