"""The simulation: the tick grid, what a run records, and the two engines."""
