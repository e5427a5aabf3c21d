"""The simulation: the tick grid, what a run records, latency samples, and the two engines
(flow: counts per tick; request: every URL), each owning the rules of every kind."""
