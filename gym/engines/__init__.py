"""Engines: turn a design and a scenario into a per-tick RunRecord."""
