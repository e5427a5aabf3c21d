"""Before and after a change that reorders random draws: every figure a run reports has
the same mean over many seeds, within the noise.

    python -m benchmarks.equivalence --before REV [--after REV] [--jobs 2]
           [--flow-seeds 200] [--request-seeds 30] [--cache DIR]

A change may leave the model alone and still change every run's numbers, by drawing the
same random numbers in another order (another stream, another event first). The golden
results (tests/test_golden.py) pin one seed's numbers, so such a change re-records them;
this benchmark is what shows the re-record changed no model. Each tree (``--before``, a
commit checked out in a temporary worktree; ``--after``, a commit likewise, or by default
this working tree) runs, in a process of its own that imports that tree's ``gym``:

- the flow engine: every shipped crawler design under every shipped crawler scenario, and
  each graph system under its own, over ``--flow-seeds`` seeds;
- the request engine: every shipped crawler design under the chaos scenario, each graph
  system under its own, and the golden edge cases (every fault, requeued crashes, the
  writer, dedup) under theirs, over ``--request-seeds`` seeds.

Every number in a run's ``to_dict()`` is a figure (the SLOs' measured values, the totals,
each cause's losses, each component's saturation and latency, the error budget, ...). For
each, the difference of the two means is set against its standard error,
sqrt(var_before / n + var_after / n) (the seeds are the same on both sides, so treating
the two samples as independent overstates the error of a difference that correlated
draws would shrink: a conservative test). A figure passes when the difference is under 4
standard errors; a figure with no randomness in it (the same on every seed, both sides)
must be identical. Verdicts are compared seed by seed, and a pair a tree refuses to run
must be refused by both. The table goes to ``benchmarks/results/equivalence.csv``, the
summary to ``equivalence.json`` beside it; the exit status is 1 when anything moved.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
Z_LIMIT = 4.0
#: Seeds run together in one flow-engine batch (its per-tick arrays grow with each).
CHUNK = 50
#: What a run reports that is not a figure: the seed itself, warnings, and the
#: explanations (prose whose numbers the error budget and the totals carry).
NOT_FIGURES = {"seed", "warnings", "explanations"}


# -- the cases ------------------------------------------------------------------------------
def cases(flow_seeds: int, request_seeds: int) -> list[dict[str, Any]]:
    """Every (engine, design, scenario, seeds) this benchmark runs, paths from the root."""

    def shipped(folder: str) -> list[str]:
        top = sorted(str(p.relative_to(ROOT)) for p in (ROOT / folder).glob("*.yaml"))
        return top + sorted(
            str(p.relative_to(ROOT)) for p in (ROOT / folder / "levers").glob("*.yaml")
        )

    crawlers, scenarios = shipped("designs"), shipped("scenarios")
    systems = [
        (str(d.relative_to(ROOT)), f"scenarios/systems/{system}.yaml")
        for system in ("ingestion", "url-shortener")
        for d in sorted((ROOT / "designs" / "systems").glob(f"{system}*.yaml"))
    ]
    edges = [
        (f"tests/golden/edges/{d}.yaml", f"tests/golden/edges/{s}.yaml")
        for s, d in (
            ("every-fault", "requeue-random"),
            ("every-fault", "requeue-fixed"),
            ("every-fault-poisson", "requeue-random"),
            ("every-fault-poisson", "requeue-fixed"),
            ("every-fault-dedup", "fail-canonical"),
        )
    ]
    chaos = "scenarios/crawler-chaos.yaml"
    flow = [(d, s) for d in crawlers for s in scenarios] + systems + edges
    request = [(d, chaos) for d in crawlers] + systems + edges
    return [
        {"engine": "flow", "design": d, "scenario": s, "seeds": flow_seeds} for d, s in flow
    ] + [
        {"engine": "request", "design": d, "scenario": s, "seeds": request_seeds}
        for d, s in request
    ]


# -- one tree's side: run in a process that imports that tree's gym -----------------------
def figures(data: Any, prefix: str = "") -> dict[str, Any]:
    """A run's ``to_dict()`` flattened: dotted paths to numbers and short texts (a list
    of named entries by their names, any other by position)."""
    out: dict[str, Any] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            if not prefix and key in NOT_FIGURES:
                continue
            out.update(figures(value, f"{prefix}{key}."))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            name = value.get("name", value.get("event")) if isinstance(value, dict) else None
            out.update(figures(value, f"{prefix}{name if name is not None else i}."))
    else:
        out[prefix.rstrip(".")] = data
    return out


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    """One case's figures over its seeds: for each number its count, mean, variance and
    whether every seed gave the same; the verdict of each seed; or the refusal."""
    import numpy as np

    import gym

    seeds = list(range(case["seeds"]))
    values: dict[str, list[Any]] = {}
    verdicts: list[str] = []
    try:
        for start in range(0, len(seeds), CHUNK):
            results = gym.simulate_many(
                case["design"],
                case["scenario"],
                seeds=seeds[start : start + CHUNK],
                engine=case["engine"],
                max_urls=10**9,
            )
            for result in results:
                verdicts.append(result.verdict)
                row = figures(result.to_dict())
                row["passed"] = int(result.verdict == "pass")  # the pass rate, as a figure
                for key, value in row.items():
                    values.setdefault(key, []).append(value)
    except gym.GymError as e:
        return {**case, "refused": str(e)}
    stats: dict[str, Any] = {}
    for key, got in values.items():
        if len(got) < len(seeds):  # an entry some seeds have (an event with losses)
            stats[key] = {"n": len(got), "partial": True}
        elif all(isinstance(v, int | float) and not isinstance(v, bool) for v in got):
            a = np.asarray(got, dtype=float)
            stats[key] = {
                "n": len(a),
                "mean": float(a.mean()),
                "var": float(a.var(ddof=1)) if len(a) > 1 else 0.0,
                "same": bool((a == a[0]).all()),
            }
        else:  # texts and flags: the values seen
            stats[key] = {"n": len(got), "texts": sorted({json.dumps(v) for v in got})}
    return {**case, "figures": stats, "verdicts": verdicts}


def collect(cases_file: Path, out_file: Path, jobs: int, cache: Path | None) -> None:
    """Run ``cases_file``'s cases, keeping each one's figures in ``cache`` (when given) as
    it finishes, so a run stopped part way resumes where it stopped."""
    todo = json.loads(cases_file.read_text())
    done: dict[int, dict[str, Any]] = {}
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        for i, case in enumerate(todo):
            kept = cache / f"{case_key(case)}.json"
            if kept.exists():
                done[i] = json.loads(kept.read_text())
    # The request engine's cases first: a change of draw order moves them, where the flow
    # engine's (the most runs) often have no change to show.
    left = sorted(
        (i for i in range(len(todo)) if i not in done), key=lambda i: todo[i]["engine"] != "request"
    )
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for n, (i, got) in enumerate(
            zip(left, pool.map(run_case, [todo[i] for i in left]), strict=True), 1
        ):
            done[i] = got
            if cache is not None:
                write_atomic(cache / f"{case_key(todo[i])}.json", json.dumps(got))
            print(
                f"{out_file.stem}: {n}/{len(left)} {todo[i]['engine']} {todo[i]['design']}",
                file=sys.stderr,
                flush=True,
            )
    out_file.write_text(json.dumps([done[i] for i in range(len(todo))]))


def case_key(case: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(case, sort_keys=True).encode()).hexdigest()[:20]


def write_atomic(path: Path, text: str) -> None:
    part = path.with_suffix(".part")
    part.write_text(text)
    part.replace(path)


# -- the driver: both trees, then the comparison -------------------------------------------
def side(
    tree: Path, todo: list[dict[str, Any]], jobs: int, work: Path, label: str, cache: Path | None
) -> subprocess.Popen[bytes]:
    """Start collecting ``todo`` with ``tree``'s gym, in the tree (its own shipped files)."""
    (work / f"{label}-cases.json").write_text(json.dumps(todo))
    env = {**os.environ, "PYTHONPATH": str(tree)}
    argv = [sys.executable, str(Path(__file__).resolve()), "--collect"]
    argv += [str(work / f"{label}-cases.json"), str(work / f"{label}.json"), str(jobs)]
    argv += [str(cache) if cache else ""]
    # A session of its own: stopping it stops its pool's workers too (os.killpg).
    return subprocess.Popen(argv, cwd=tree, env=env, start_new_session=True)


def cache_for(cache: Path | None, rev: str | None) -> Path | None:
    """Where one commit's finished cases are kept: by its full hash, so a branch that
    moves is never read from another commit's results."""
    if cache is None or rev is None:
        return None
    sha = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return cache / sha


def checkout(rev: str, work: Path, label: str) -> Path:
    tree = work / label
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), rev], check=True
    )
    return tree


def compare(
    before: list[dict[str, Any]], after: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    summary: dict[str, Any] = {"cases": len(before), "figures": 0, "moved": [], "refused": 0}
    summary.update(identical=0, random=0, unjudged=0, verdicts_differ=0, worst_z=0.0, worst=None)
    for b, a in zip(before, after, strict=True):
        where = f"{b['engine']} {b['design']} under {b['scenario']}"
        if "refused" in b or "refused" in a:
            summary["refused"] += 1
            if b.get("refused") != a.get("refused"):
                summary["moved"].append(f"{where}: refused on one side only")
            continue
        differ = sum(x != y for x, y in zip(b["verdicts"], a["verdicts"], strict=True))
        summary["verdicts_differ"] += differ
        if differ:
            summary["moved"].append(f"{where}: the verdict differs on {differ} seeds")
        for key in sorted(set(b["figures"]) | set(a["figures"])):
            row = figure_row(b, a, key)
            rows.append(row)
            summary["figures"] += 1
            judged = (
                "unjudged" if row["ok"] is None else "identical" if row["z"] is None else "random"
            )
            summary[judged] += 1
            if row["ok"] is False:
                summary["moved"].append(f"{where}: {key}")
            if row["z"] is not None and row["z"] > summary["worst_z"]:
                summary["worst_z"], summary["worst"] = row["z"], f"{where}: {key}"
    return rows, summary


def figure_row(b: dict[str, Any], a: dict[str, Any], key: str) -> dict[str, Any]:
    """One figure before and after: ``ok`` when its means are within ``Z_LIMIT`` standard
    errors (identical when it has no randomness); an entry only some seeds report, or a
    text that varies from seed to seed, is shown and not judged (``ok`` empty)."""
    row: dict[str, Any] = {k: b[k] for k in ("engine", "design", "scenario")}
    row.update(figure=key, z=None)
    fb, fa = b["figures"].get(key), a["figures"].get(key)
    if fb is None or fa is None:
        return {**row, "before": fb and fb["n"], "after": fa and fa["n"], "ok": False}
    if fb.get("partial") or fa.get("partial"):
        return {**row, "before": fb["n"], "after": fa["n"], "ok": None}
    if ("texts" in fb) != ("texts" in fa):
        return {**row, "ok": False}
    if "texts" in fb:  # must be equal where it has no randomness
        varies = len(fb["texts"]) > 1 or len(fa["texts"]) > 1
        ok = None if varies else fb["texts"] == fa["texts"]
        return {**row, "before": "|".join(fb["texts"]), "after": "|".join(fa["texts"]), "ok": ok}
    diff = fa["mean"] - fb["mean"]
    se = math.sqrt(fb["var"] / fb["n"] + fa["var"] / fa["n"])
    row.update(n=fb["n"], before=fb["mean"], after=fa["mean"], diff=diff, se_diff=se)
    if fb["same"] and fa["same"]:  # no randomness in it: identical
        return {
            **row,
            "z": None,
            "ok": math.isclose(fb["mean"], fa["mean"], rel_tol=1e-12, abs_tol=1e-12),
        }
    z = abs(diff) / se if se > 0 else math.inf
    return {**row, "z": z, "ok": z < Z_LIMIT}


def write(rows: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    RESULTS.mkdir(exist_ok=True)
    columns = ["engine", "design", "scenario", "figure", "n", "before", "after", "diff"]
    columns += ["se_diff", "z", "ok"]
    with (RESULTS / "equivalence.csv").open("w", newline="") as f:
        out = csv.DictWriter(f, columns, extrasaction="ignore")
        out.writeheader()
        out.writerows(rows)
    (RESULTS / "equivalence.json").write_text(json.dumps(summary, indent=2) + "\n")


def report(summary: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """The summary as a Markdown table, by engine."""
    lines = ["| engine | cases | figures | identical | random | not judged | largest z | moved |"]
    lines.append("|---|---|---|---|---|---|---|---|")
    for engine in ("flow", "request"):
        mine = [r for r in rows if r["engine"] == engine]
        zs = [r["z"] for r in mine if r["z"] is not None]
        n_cases = len({(r["design"], r["scenario"]) for r in mine})
        same = sum(r["z"] is None and r["ok"] is not None for r in mine)
        unjudged = sum(r["ok"] is None for r in mine)
        moved = sum(r["ok"] is False for r in mine)
        worst = f"{max(zs):.2f}" if zs else "-"
        lines.append(
            f"| {engine} | {n_cases} | {len(mine)} | {same} | {len(zs)} | {unjudged} | {worst} "
            f"| {moved} |"
        )
    lines.append("")
    lines.append(f"verdicts differing, seed by seed: {summary['verdicts_differ']}")
    lines.append(f"refused (both sides alike): {summary['refused']}")
    lines.append(f"largest z: {summary['worst_z']:.2f} ({summary['worst']})")
    lines += [f"moved: {m}" for m in summary["moved"]]
    if summary.get("not_run"):
        lines.append(f"not run on both sides yet ({len(summary['not_run'])} cases):")
        lines += [f"  {case}" for case in summary["not_run"]]
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--collect":
        kept = Path(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[5] else None
        collect(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]), kept)
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", required=True, help="the commit before the change")
    p.add_argument("--after", help="the commit after it (default: this working tree)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes per side")
    p.add_argument("--flow-seeds", type=int, default=200)
    p.add_argument("--request-seeds", type=int, default=30)
    p.add_argument(
        "--cache",
        type=Path,
        help="keep each case's figures here, per commit, so a stopped run resumes "
        "(the working tree is never kept: it may change)",
    )
    p.add_argument(
        "--from-cache",
        action="store_true",
        help="run nothing: compare the cases both commits have in --cache (a run stopped "
        "part way), and list those left out",
    )
    args = p.parse_args()
    todo = cases(args.flow_seeds, args.request_seeds)
    if args.from_cache:
        if args.cache is None or args.after is None:
            p.error("--from-cache needs --cache and --after")
        before, after, left_out = cached_pairs(todo, args.cache, args.before, args.after)
    else:
        before, after = run_both(args, todo)
        left_out = []
    rows, summary = compare(before, after)
    summary.update(before=args.before, after=args.after or "working tree")
    summary.update(flow_seeds=args.flow_seeds, request_seeds=args.request_seeds, z_limit=Z_LIMIT)
    summary["not_run"] = left_out
    write(rows, summary)
    print(report(summary, rows))
    return 1 if summary["moved"] else 0


def run_both(args: argparse.Namespace, todo: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    """Each commit's side, in a worktree and a process of its own, at once."""
    # Stopped (SIGTERM), it still removes its worktrees; what finished stays in --cache.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        trees = {"before": checkout(args.before, work, "before")}
        trees["after"] = checkout(args.after, work, "after") if args.after else ROOT
        procs: list[subprocess.Popen[bytes]] = []
        try:
            for (label, tree), rev in zip(trees.items(), (args.before, args.after), strict=True):
                procs.append(side(tree, todo, args.jobs, work, label, cache_for(args.cache, rev)))
            if any(proc.wait() for proc in procs):
                sys.exit("a side failed")
            before = json.loads((work / "before.json").read_text())
            after = json.loads((work / "after.json").read_text())
        finally:
            for proc in procs:  # stopped part way: the sides stop too
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait()
            for tree in trees.values():
                if tree != ROOT:
                    subprocess.run(
                        ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                        check=False,
                    )
    return before, after


def cached_pairs(
    todo: list[dict[str, Any]], cache: Path, before_rev: str, after_rev: str
) -> tuple[list[Any], list[Any], list[str]]:
    """The cases both commits finished (kept in ``cache``), and those either has not."""
    dirs = [cache_for(cache, before_rev), cache_for(cache, after_rev)]
    before: list[Any] = []
    after: list[Any] = []
    left_out: list[str] = []
    for case in todo:
        kept = [d / f"{case_key(case)}.json" for d in dirs if d is not None]
        if all(k.exists() for k in kept):
            before.append(json.loads(kept[0].read_text()))
            after.append(json.loads(kept[1].read_text()))
        else:
            left_out.append(f"{case['engine']} {case['design']} under {case['scenario']}")
    return before, after, left_out


if __name__ == "__main__":
    sys.exit(main())
