"""Random streams: one independent, seeded generator per named purpose. No global state.

Each stream is keyed by name, not by creation order, so adding a component to a design
does not change the draws of the others: the same seed offers the same arrivals to every
design (common random numbers), which makes comparisons between designs sharper.
"""

from __future__ import annotations

import zlib

import numpy as np


def stream(seed: int, name: str) -> np.random.Generator:
    """The generator for ``name`` under ``seed``."""
    if seed < 0:
        raise ValueError(f"seed must be >= 0, not {seed}")
    key = zlib.crc32(name.encode("utf-8"))
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(key,)))


def substream(rng: np.random.Generator, name: str) -> np.random.Generator:
    """A generator of its own for ``name`` within ``rng``'s stream (from the same seed
    and key, one key further), so draws made for ``name`` leave ``rng``'s draws as they
    were, in whatever order the two are used."""
    seq = rng.bit_generator.seed_seq
    assert isinstance(seq, np.random.SeedSequence)
    key = zlib.crc32(name.encode("utf-8"))
    return np.random.default_rng(
        np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, key))
    )
