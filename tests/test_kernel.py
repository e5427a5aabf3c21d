"""The request engine's event loop (gym/sim/request/kernel.py) steps through events in the
order SimPy does: by time, then urgent before normal, then in the order they were
scheduled; and a run stops where SimPy's ``run(until=...)`` stops. That order is what
makes the callback engine give the numbers the SimPy-process engine gave (the golden
results pin them); here it is checked directly, on random programs full of ties.

Each program is a web of callbacks that, when called, log themselves and schedule more:
timeouts from a small grid of delays (so that many fall on the same instant), urgent
entries (SimPy's interruptions), one fixed delay through the FIFO, and each tick a row of
arrivals on the same grid. The same program runs on SimPy and on the kernel, drawing its
choices from a generator seeded alike: the logs match only if every step came in the
same order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import simpy
from simpy.events import URGENT

from gym.sim.request.kernel import Kernel

DELAYS = (0.0, 0.25, 0.5, 1.0)
FIFO_DELAY = 0.5
TICKS = 6


class Program:
    """A random program on one of the two loops; ``log`` is what it did, in order."""

    def __init__(self, seed: int, loop: str) -> None:
        self.rng = np.random.default_rng(seed)
        self.loop = loop
        self.log: list[tuple[str, float]] = []
        self.count = 0
        if loop == "simpy":
            self.env = simpy.Environment()
        else:
            self.kernel = Kernel()

    # -- the two loops' ways of scheduling ------------------------------------------------
    @property
    def now(self) -> float:
        return float(self.env.now if self.loop == "simpy" else self.kernel.now)

    def later(self, delay: float, fn: Callable[[Any], None], arg: Any, fifo: bool) -> None:
        if self.loop == "simpy":
            self.env.timeout(delay).callbacks.append(lambda _ev: fn(arg))
        elif fifo:
            self.kernel.schedule_fifo(delay, fn, arg)
        else:
            self.kernel.schedule(delay, fn, arg)

    def urgent(self, fn: Callable[[Any], None], arg: Any) -> None:
        if self.loop == "simpy":
            ev = simpy.Event(self.env)
            ev._ok, ev._value = True, None
            ev.callbacks.append(lambda _ev: fn(arg))
            self.env.schedule(ev, URGENT)
        else:
            self.kernel.urgent(fn, arg)

    def arrivals(self, times: list[float]) -> None:
        if self.loop == "simpy":
            now = self.env.now
            for t in times:
                self.env.timeout(t - now).callbacks.append(lambda ev, t=t: self.arrive(t))
        else:
            self.kernel.arrivals(times, self.arrive)

    # -- the program ------------------------------------------------------------------------
    def step(self, name: str) -> None:
        """Log this step; schedule 0 to 3 more (normal, urgent or through the FIFO)."""
        self.log.append((name, self.now))
        for _ in range(int(self.rng.integers(0, 4))):
            if self.count > 400:
                return
            self.count += 1
            child = f"{name}.{self.count}"
            kind = int(self.rng.integers(0, 4))
            if kind == 0:
                self.urgent(self.step, child)
            elif kind == 1:
                self.later(FIFO_DELAY, self.step, child, fifo=True)
            else:
                self.later(float(self.rng.choice(DELAYS)), self.step, child, fifo=False)

    def arrive(self, t: float) -> None:
        self.step(f"arrival@{t}")

    def tick(self, k: int) -> None:
        """A tick: a row of arrivals on the grid inside it, and the next tick."""
        self.log.append((f"tick{k}", self.now))
        # Mostly inside the tick; some after the next tick starts (as a rounding can put
        # a tick's last arrival): the next row of arrivals begins before those are due.
        grid = k + np.array([0.0, 0.25, 0.5, 0.75, 0.75, 1.0, 1.25])
        times = sorted(self.rng.choice(grid, size=int(self.rng.integers(0, 4))).tolist())
        self.arrivals(times)
        # Scheduled right after the arrivals, on their grid: it follows them at a tie.
        self.later(float(self.rng.choice(grid[:4] - k)), self.step, f"after{k}", fifo=False)
        self.later(max(0.0, (k + 1) - self.now), self.tick, k + 1, fifo=False)

    def run(self) -> list[tuple[str, float]]:
        self.tick(0)
        self.step("start")
        # Due at the stop instant but scheduled before the stop: neither loop runs it.
        self.later(TICKS, self.step, "at-the-stop", fifo=False)
        if self.loop == "simpy":
            self.env.run(until=TICKS)
        else:
            self.kernel.stop_at(TICKS)
            self.kernel.run()
        return self.log


@pytest.mark.parametrize("seed", range(40))
def test_kernel_steps_in_simpy_order(seed: int) -> None:
    want = Program(seed, "simpy").run()
    got = Program(seed, "kernel").run()
    assert len(want) > 20  # the program did something: ties, urgent entries, arrivals
    assert got == want


def test_programs_exercise_ties_and_the_stop() -> None:
    """The check above means something: the programs put several entries on one instant,
    and some of them at the stop instant, which neither loop runs."""
    log = Program(3, "kernel").run()
    instants = [t for _, t in log]
    assert len(instants) - len(set(instants)) > 10
    assert max(instants) < TICKS


def test_arrivals_left_when_the_next_row_starts_still_come_in_order() -> None:
    """A row's instant after the next row began (the rounding the request engine can meet
    at a tick's end) is neither lost nor early: it comes at its time, ordered with the
    next row's and the heap's entries by key, as SimPy orders it."""
    kernel = Kernel()
    log: list[tuple[str, float]] = []

    def arrive(t: float) -> None:
        log.append(("arrival", t))

    def tick(k: int) -> None:
        log.append((f"tick{k}", kernel.now))
        if k == 0:
            kernel.arrivals([0.5, 1.0, 1.25], arrive)  # 1.25: after the next tick
            kernel.schedule(1.0, tick, 1)
            kernel.schedule(1.25, lambda _: log.append(("timeout", kernel.now)))
        elif k == 1:
            kernel.arrivals([1.25, 1.5], arrive)

    tick(0)
    kernel.stop_at(3)
    kernel.run()
    assert log == [
        ("tick0", 0.0),
        ("arrival", 0.5),
        ("arrival", 1.0),  # before tick1 at the same instant: scheduled first
        ("tick1", 1.0),
        ("arrival", 1.25),  # the first row's: its key is the smallest at 1.25
        ("timeout", 1.25),
        ("arrival", 1.25),  # the second row's
        ("arrival", 1.5),
    ]


def test_fifo_refuses_a_second_delay() -> None:
    """The FIFO is ordered only for one constant delay."""
    kernel = Kernel()
    kernel.schedule_fifo(0.5, print)
    with pytest.raises(AssertionError):
        kernel.schedule_fifo(0.25, print)
