"""The ground floor: the one error type, text made printable, seeded random streams, limits
and atomic output files. Imports nothing else of gym."""
