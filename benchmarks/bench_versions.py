"""The flow engine of this tree against an earlier commit, side by side.

    python -m benchmarks.bench_versions [--ref a4811b3] [--rounds 7] [--design ...]

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
"""

from __future__ import annotations

import argparse
import json
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
runs = int(sys.argv[3])
gym.simulate(design, scenario, seed=0).explanations
times = []
for seed in range(runs):
    t = time.process_time(); gym.simulate(design, scenario, seed=seed).explanations
    times.append(time.process_time() - t)
times.sort()
print(json.dumps({"median_s": times[len(times) // 2]}))
"""


def _time(tree: Path, design: str, scenario: str, runs: int) -> float:
    out = subprocess.run(
        [sys.executable, "-c", TIMER, design, scenario, str(runs)],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1])["median_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--ref", default="a4811b3", help="the earlier commit")
    parser.add_argument("--design", default="designs/reference.yaml", help="in each tree")
    parser.add_argument("--scenario", default="scenarios/crawler-chaos.yaml", help="in each tree")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runs", type=int, default=15, help="flow runs per round and version")
    args = parser.parse_args()
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
                before.append(_time(old, args.design, args.scenario, args.runs))
                now.append(_time(ROOT, args.design, args.scenario, args.runs))
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
                "before_ms": round(b * 1000, 2),
                "now_ms": round(n * 1000, 2),
                "now_over_before": round(n / b, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
