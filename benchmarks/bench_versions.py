"""The flow engine of this tree against an earlier commit, side by side.

    python -m benchmarks.bench_versions [--ref a4811b3] [--rounds 7] [--design ...]
           [--batch] [--count]

A refactoring claim ("no slower than before") needs the two versions timed under the same
machine load. Each round runs one subprocess per version, alternating, each timing
``gym.simulate`` (flow engine, metrics, scoring, explanations) over several seeds after a
warm-up; the ratio of the medians over the rounds is the figure to quote. The earlier
version is checked out with ``git worktree`` into a temporary directory and removed after.

Each version reads the design and the scenario from its own tree (a relative ``--design``
or ``--scenario`` is taken in each tree), so an older commit gets the files its loader
knows (e15e1b4's scenario has no ``web`` section). The explanations are asked for after
each run: a version that works them out on first use pays for them as one that builds
them in ``simulate`` does. Each run is timed in CPU time of its process
(``time.process_time``): on a shared machine wall time also counts the other jobs.

``--batch`` times the runs as one batch instead (``gym.simulate_many`` of ``--runs`` seeds,
the time per run), as ``--runs``, sweeps and the optimizer run them. ``--count`` counts
instructions instead of timing (valgrind's callgrind, the count of a process that does the
runs less that of one that stops after the warm-up, per run, with ``PYTHONHASHSEED=0`` and
the bytecode caches written first):
no other job on the machine moves it, so one round resolves differences of a percent that
CPU time on a shared machine does not.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

TIMER = """
import json, sys, time
import gym
design = gym.load_design(sys.argv[1]); scenario = gym.load_scenario(sys.argv[2])
runs, batch = int(sys.argv[3]), sys.argv[4] == "batch"
gym.simulate(design, scenario, seed=0).explanations
times = []
if batch and runs:
    t = time.process_time()
    gym.simulate_many(design, scenario, seeds=list(range(1, runs + 1)))
    times.append((time.process_time() - t) / runs)
elif runs:
    for seed in range(runs):
        t = time.process_time(); gym.simulate(design, scenario, seed=seed).explanations
        times.append(time.process_time() - t)
times.sort()
print(json.dumps({"median_s": times[len(times) // 2] if times else 0.0}))
"""


def _time(tree: Path, design: str, scenario: str, runs: int, batch: bool) -> float:
    out = subprocess.run(
        [sys.executable, "-c", TIMER, design, scenario, str(runs), _mode(batch)],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1])["median_s"])


CALLGRIND = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]


def _count(tree: Path, design: str, scenario: str, runs: int, batch: bool) -> float:
    """Instructions per run: a process doing ``runs`` runs less one doing none."""

    def counted(n: int) -> int:
        out = subprocess.run(
            [*CALLGRIND, sys.executable, "-c", TIMER, design, scenario, str(n), _mode(batch)],
            cwd=tree,
            env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"},
            capture_output=True,
            text=True,
            check=True,
        )
        found = re.search(r"Collected : (\d+)", out.stderr)
        assert found is not None, out.stderr[-2000:]
        return int(found.group(1))

    _time(tree, design, scenario, 0, batch)  # (writes the bytecode caches both counts read)
    return (counted(runs) - counted(0)) / runs


def _mode(batch: bool) -> str:
    return "batch" if batch else "one"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--ref", default="a4811b3", help="the earlier commit")
    parser.add_argument("--design", default="designs/reference.yaml", help="in each tree")
    parser.add_argument("--scenario", default="scenarios/crawler-chaos.yaml", help="in each tree")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runs", type=int, default=15, help="flow runs per round and version")
    parser.add_argument("--batch", action="store_true", help="the runs as one batch")
    parser.add_argument("--count", action="store_true", help="instructions (callgrind)")
    args = parser.parse_args()
    measure = _count if args.count else _time
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(old), args.ref],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        try:
            before, now = [], []
            for _ in range(args.rounds):
                got = [
                    measure(t, args.design, args.scenario, args.runs, args.batch)
                    for t in (old, ROOT)
                ]
                before.append(got[0])
                now.append(got[1])
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(old)], cwd=ROOT, check=False
            )
    b, n = statistics.median(before), statistics.median(now)
    print(
        json.dumps(
            {
                "design": Path(args.design).name,
                "ref": args.ref,
                "rounds": args.rounds,
                "runs": args.runs,
                "batch": args.batch,
                **(
                    {"before_instructions": round(b), "now_instructions": round(n)}
                    if args.count
                    else {"before_ms": round(b * 1000, 2), "now_ms": round(n * 1000, 2)}
                ),
                "now_over_before": round(n / b, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
