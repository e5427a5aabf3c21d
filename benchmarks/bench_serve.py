"""The playground under a stream of changes: does the page keep up with 20 a second?

    python -m benchmarks.bench_serve [--rate 20] [--seconds 2,10] [--rounds 3]

Starts `gym serve` and drives its page in headless Chromium (the system's, as the browser
tests do). Each burst moves the fetchers.replicas slider ``rate`` times a second for a
number of seconds, as a drag does: each move sets the slider's value in the browser,
which sends it to the server. The last move of a burst sets a value no earlier move set,
and the benchmark times how long after it the page shows that value's result (its cost in
units). A page that falls behind shows that lag growing with the burst's length; one that
keeps up shows the same lag after 2 s and after 10 s, about one update's time. It also
times how long after the last move the page shows the final design's pass probability
over 20 seeds, which follows each run (one batch of seeds at a time, in a thread).

Also measured, in this process: the time of one update (a flow run of the design and the
figures the page shows), which bounds how many updates a second the server can make; the
page folds the changes that arrive meanwhile into the next one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import gym
from gym.playground.app import free_port
from gym.playground.state import Session

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: Chromium headless, as root, on a closed network (no background connections); the
#: browser tests start it the same way.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
MOVE = "(v) => { Bokeh.documents[0].get_model_by_name('slider:fetchers.replicas').value = v; }"


def update_ms(rounds: int = 30) -> float:
    """Median ms of one update: set a field, run, the page's figures."""
    session = Session(
        gym.load_design(ROOT / "designs/reference.yaml"),
        gym.load_scenario(ROOT / "scenarios/crawler-chaos.yaml"),
        "reference.yaml",
    )
    session.run()
    times = []
    for i in range(rounds):
        t = time.perf_counter()
        session.set("fetchers.replicas", 3 + i % 4)
        session.run()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def burst(page: object, rate: float, seconds: float, final: int) -> tuple[float, float, float]:
    """Move the slider ``rate`` times a second for ``seconds``, ending on ``final``; the
    seconds from the last move until the page shows its cost, the moves a second the
    browser took (it takes them on its main thread, between redraws), and the seconds
    from the last move until the page shows the final design's pass probability over 20
    seeds (worked out after each run, one batch at a time)."""
    moves = int(rate * seconds)
    start = time.perf_counter()
    for i in range(moves):
        due = start + i / rate
        while time.perf_counter() < due:
            time.sleep(0.001)
        value = final if i == moves - 1 else 4 + i % 5
        page.evaluate(MOVE, value)  # type: ignore[attr-defined]
    last = time.perf_counter()
    units = 3 + final  # frontier 1, cache 1, page store 1, a unit per replica
    page.wait_for_selector(f"[data-cost='{units}']", timeout=60_000)  # type: ignore[attr-defined]
    shown = time.perf_counter() - last
    odds = f"[data-odds-verdict][data-units='{units}']"
    page.wait_for_selector(odds, timeout=60_000)  # type: ignore[attr-defined]
    return shown, (moves - 1) / (last - start), time.perf_counter() - last


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--seconds", default="2,10")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    lengths = [float(x) for x in args.seconds.split(",")]
    from playwright.sync_api import sync_playwright

    one = update_ms()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gym", "serve", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdout is not None
    server.stdout.readline()
    lags: dict[float, list[float]] = {s: [] for s in lengths}
    rates: dict[float, list[float]] = {s: [] for s in lengths}
    odds: dict[float, list[float]] = {s: [] for s in lengths}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1400})
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_selector("[data-verdict]", timeout=30_000)
            final = 10
            for _ in range(args.rounds):
                for seconds in lengths:
                    final = 11 if final == 10 else 10  # never a value the burst set
                    lag, taken, odds_lag = burst(page, args.rate, seconds, final)
                    lags[seconds].append(lag)
                    rates[seconds].append(taken)
                    odds[seconds].append(odds_lag)
            browser.close()
    finally:
        server.terminate()
        server.wait(10)
    rows = {
        f"{s:g} s": {
            "median_lag_ms": statistics.median(v) * 1000,
            "lags_ms": [x * 1000 for x in v],
            "moves_per_s": rates[s],
            "median_odds_lag_ms": statistics.median(odds[s]) * 1000,
            "odds_lags_ms": [x * 1000 for x in odds[s]],
        }
        for s, v in lags.items()
    }
    print(f"one update (flow run + the page's figures): {one:.1f} ms median")
    print(f"{args.rate:g} changes/s; lag from the last change to the page showing it:")
    for name, row in rows.items():
        shown = ", ".join(f"{x:.0f}" for x in row["lags_ms"])
        taken = min(row["moves_per_s"])
        print(
            f"  burst of {name}: median {row['median_lag_ms']:.0f} ms ({shown}); "
            f"the browser took {taken:.1f} moves/s or more; P(pass) over 20 seeds "
            f"shown after a median {row['median_odds_lag_ms']:.0f} ms"
        )
    out = HERE / "results" / "serve.json"
    out.write_text(
        json.dumps({"rate": args.rate, "update_ms": one, "bursts": rows}, indent=2) + "\n"
    )


if __name__ == "__main__":
    main()
