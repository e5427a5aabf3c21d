"""The request engine on every topology against a straightforward per-request SimPy model
of it (``baseline_topology.run``), side by side.

    python -m benchmarks.bench_topologies [--rounds 3]

Rows: a retry crawler (``designs/levers/retry-backoff.yaml`` under
``scenarios/crawler-chaos.yaml``), a discovery crawler (``designs/levers/seen-set-4.yaml``
under the same scenario: every URL looked up in the sharded seen set; ``--deep`` adds it
under ``scenarios/levers/deep-crawl.yaml``, whose pages yield links, about 4 million
lookups a run), each shipped graph
system under its scenario, and the plain reference crawler (its own pipeline), with the
time the walk of its built-in graph takes beside it (``walk_us_per_url``: the engine of
the other rows on the same design; the pipeline is kept for the designs whose draws it
orders differently, docs/architecture.md).
The baseline walks the same graph the engine walks (:func:`gym.system.crawler.topology` for a
crawler). Each round runs the engine (``gym.simulate``, engine + scoring) and the
baseline one after the other, in this process, timed as CPU time; the ratio is of the
medians over the rounds, as ``bench_ratios`` does. CPU time per URL counts every URL
offered (a crawler's links included). Results go to stdout and to
benchmarks/results/topologies.json.
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
from gym.system import crawler
from gym.system.graph import GraphDesign, topology

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

DISCOVERY = "designs/levers/seen-set-4.yaml"
ROWS = [
    ("retry crawler", "designs/levers/retry-backoff.yaml", "scenarios/crawler-chaos.yaml"),
    ("discovery crawler", DISCOVERY, "scenarios/crawler-chaos.yaml"),
    ("ingestion", "designs/systems/ingestion.yaml", "scenarios/systems/ingestion.yaml"),
    (
        "ingestion-no-headroom",
        "designs/systems/ingestion-no-headroom.yaml",
        "scenarios/systems/ingestion.yaml",
    ),
    ("url-shortener", "designs/systems/url-shortener.yaml", "scenarios/systems/url-shortener.yaml"),
    (
        "url-shortener-undersized",
        "designs/systems/url-shortener-undersized.yaml",
        "scenarios/systems/url-shortener.yaml",
    ),
    ("plain crawler (reference)", "designs/reference.yaml", "scenarios/crawler-chaos.yaml"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default=None, help="rows whose name contains this")
    parser.add_argument("--deep", action="store_true", help="add the deep crawl (minutes)")
    parser.add_argument("--out", default=str(HERE / "results" / "topologies.json"))
    args = parser.parse_args()
    from benchmarks import baseline_topology
    from gym.sim.request import engine
    from gym.sim.timeline import Timeline

    rows: list[dict[str, Any]] = []
    todo = list(ROWS)
    if args.deep:
        todo.insert(
            2, ("discovery crawler, deep crawl", DISCOVERY, "scenarios/levers/deep-crawl.yaml")
        )
    for name, d, s in todo:
        if args.only and args.only not in name:
            continue
        design = gym.load_design(ROOT / d)
        scenario = gym.load_scenario(ROOT / s)
        graph = (
            topology(design)
            if isinstance(design, GraphDesign)
            else crawler.topology(design, scenario)
        )
        ours: list[float] = []
        base: list[float] = []
        urls: list[int] = []
        base_urls: list[int] = []
        avail: list[float] = []
        base_avail: list[float] = []
        walk: list[float] = []
        plain = not isinstance(design, GraphDesign) and not (design.retries or design.discovery)
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
            if plain:
                t = time.process_time()
                engine.run_graph(graph, scenario, seed=r, timeline=Timeline(scenario, 10))
                walk.append(time.process_time() - t)
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
        if walk:
            row["walk_us_per_url"] = statistics.median(walk) / u * 1e6
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"{platform.python_version()}, {os.cpu_count()} cores, {args.rounds} rounds")
    head = "| what | engine | baseline | engine us/URL | baseline us/URL | faster |"
    print(head + " availability (engine / baseline) |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['what']} | {row['ours_s']:.2f} s | {row['baseline_s']:.2f} s "
            f"| {row['ours_us_per_url']:.1f} | {row['baseline_us_per_url']:.1f} "
            f"| {row['speedup']:.1f}x | {row['availability']:.4f} / "
            f"{row['baseline_availability']:.4f} |"
        )
    write_results(args.out, args.rounds, rows)


if __name__ == "__main__":
    main()
