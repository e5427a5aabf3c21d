"""The request engine's event loop: a heap of callbacks, ordered as SimPy orders
its events.

SimPy keeps an event per timeout, a process per URL and a generator resumed at each of
its steps; about 3 events a URL, most of a run's time. This loop keeps only what the
walk needs: a heap of ``(time, key, callback, argument)`` entries. The key
is SimPy's tie-break: an urgent entry (an interrupt) before a normal one at the same
instant, then the order they were scheduled in. A run through this loop therefore steps
through the same events in the same order as the same model written with SimPy
processes, and draws the same random numbers: the golden results pin that.

Arrivals do not go through the heap at all: a tick's arrival instants are sorted, so
the loop merges them with the heap's head (:meth:`Kernel.arrivals` gives them their
keys, as SimPy numbers a tick's arrival timeouts when it creates them). Nor do the ends
of fixed-length services scheduled with :meth:`Kernel.schedule_fifo`: a constant delay
from a clock that never goes back gives times in the order they are scheduled, so a
FIFO holds them in order, merged the same way, at no heap cost.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

#: Added to a normal entry's sequence number: at the same instant, urgent entries (an
#: interrupt) go first, then the rest in the order they were scheduled.
NORMAL = 1 << 52

Callback = Callable[[Any], None]
Entry = tuple[float, int, Callback | None, Any]


class Kernel:
    """The clock, the heap of scheduled callbacks, the FIFO of fixed delays and the
    current stream of sorted arrivals; :meth:`run` steps through them in order."""

    __slots__ = (
        "fifo",
        "fifo_delay",
        "heap",
        "now",
        "seq",
        "stream",
        "stream_callback",
        "stream_key",
    )

    def __init__(self) -> None:
        self.now = 0.0
        self.heap: list[Entry] = []
        self.seq = 0
        self.fifo: deque[Entry] = deque()
        self.fifo_delay: float | None = None
        self.stream: list[float] = []
        self.stream_key = 0
        self.stream_callback: Callback = _nothing

    def schedule(self, delay: float, callback: Callback, arg: Any = None) -> None:
        """Call ``callback(arg)`` ``delay`` seconds from now (SimPy's Timeout: the time is
        ``now + delay``, rounded as SimPy rounds it)."""
        self.seq += 1
        heappush(self.heap, (self.now + delay, self.seq + NORMAL, callback, arg))

    def schedule_fifo(self, delay: float, callback: Callback, arg: Any = None) -> None:
        """:meth:`schedule`, for the one constant ``delay`` of this kernel's FIFO: its
        entries come due in the order they are scheduled, so they skip the heap."""
        if self.fifo_delay is None:
            self.fifo_delay = delay
        assert delay == self.fifo_delay, "one constant delay per FIFO"
        self.seq += 1
        self.fifo.append((self.now + delay, self.seq + NORMAL, callback, arg))

    def urgent(self, callback: Callback, arg: Any = None) -> None:
        """Call ``callback(arg)`` now, before any normal entry at this instant (SimPy's
        Interruption)."""
        self.seq += 1
        heappush(self.heap, (self.now, self.seq, callback, arg))

    def at_tick(self, tick: int, tick_s: float, callback: Callback, arg: Any = None) -> None:
        """Call ``callback(arg)`` at the start of ``tick`` (now, if that has passed)."""
        self.schedule(max(0.0, tick * tick_s - self.now), callback, arg)

    def arrivals(self, times: list[float], callback: Callback) -> None:
        """Call ``callback(t)`` at each of ``times`` (sorted, none before now), as if each
        were scheduled now, in order: SimPy's timeouts created in a row. What is left of
        the stream before goes to the heap."""
        self.stream = times
        self.stream_key = self.seq + 1 + NORMAL
        self.stream_callback = callback
        self.seq += len(times)

    def stop_at(self, until: float) -> None:
        """End the run at ``until``: entries at that instant scheduled after now are not
        run (SimPy's ``run(until=...)`` schedules an urgent stop)."""
        self.seq += 1
        heappush(self.heap, (until, self.seq, None, None))

    def run(self) -> None:
        """Step through the heap, the FIFO and the arrivals in order of time, then key,
        until the stop entry (:meth:`stop_at` must have been called)."""
        heap, fifo = self.heap, self.fifo
        times, key, arrive = self.stream, self.stream_key, self.stream_callback
        i, n = 0, len(times)
        while True:
            top = heap[0]
            if fifo and fifo[0] < top:
                top = fifo[0]
                from_heap = False
            else:
                from_heap = True
            if i < n:
                t = times[i]
                if t < top[0] or (t == top[0] and key + i < top[1]):
                    i += 1
                    self.now = t
                    arrive(t)
                    continue
            if from_heap:
                heappop(heap)
            else:
                fifo.popleft()
            callback = top[2]
            if callback is None:  # the stop entry
                return
            self.now = top[0]
            callback(top[3])
            if self.stream is not times:  # the callback started a new stream
                # Arrivals of the old one still to come (a tick's last instant can round
                # to just after the next tick's start) wait in the heap, with their keys.
                for j in range(i, n):
                    heappush(heap, (times[j], key + j, arrive, times[j]))
                times, key, arrive = self.stream, self.stream_key, self.stream_callback
                i, n = 0, len(times)


def _nothing(_: Any) -> None:
    """The callback of an empty stream."""
