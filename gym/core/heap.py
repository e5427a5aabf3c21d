"""Freed memory kept for the next batch of runs (Linux with glibc; elsewhere nothing).

A batch of flow runs allocates a few hundred arrays of a few megabytes, frees them when
its results are read, and the next batch allocates the same again. glibc hands such
blocks straight back to the system (``mmap`` above its threshold, ``brk`` trimmed above
its trim threshold), so every batch has its memory zeroed anew by the kernel, one page
fault per 4 KB: for ``gym run --runs 500`` about 420,000 faults, a third of the command's
CPU time. While :func:`kept` is entered, blocks up to 32 MB come from the heap and freed
memory stays there for the next batch (the process's resident size stays at its peak:
about one batch's arrays); on leaving, the heap is trimmed back as before.

The two settings are glibc's ``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD`` (``man
mallopt``), what ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_`` set at start.
Setting either turns glibc's own adjustment of the mmap threshold off for the rest of the
process: it stays at 32 MB, the largest that adjustment would reach.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: Blocks up to this size come from the heap while kept (glibc's largest allowed).
MMAP_THRESHOLD = 32 * 1024 * 1024
#: The trim threshold while kept (mallopt's largest, 2 GB): freed memory stays.
KEEP = 2**31 - 1
#: glibc's default trim threshold, restored on leaving.
TRIM_THRESHOLD = 128 * 1024

_lock = threading.Lock()
_depth = 0


@cache
def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    # musl and others have no gnu_get_libc_version (and a mallopt that does nothing).
    if not hasattr(libc, "gnu_get_libc_version"):
        return None
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.mallopt.restype = ctypes.c_int
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    libc.malloc_trim.restype = ctypes.c_int
    return libc


def _set(libc: ctypes.CDLL, trim: int) -> None:
    libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    libc.mallopt(M_TRIM_THRESHOLD, trim)


@contextmanager
def kept() -> Iterator[None]:
    """Keep freed memory for reuse while inside (nested and threaded entries count: the
    heap is trimmed when the last one leaves)."""
    global _depth
    libc = _glibc()
    if libc is None:
        yield
        return
    with _lock:
        _depth += 1
        if _depth == 1:
            _set(libc, KEEP)
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _set(libc, TRIM_THRESHOLD)
                libc.malloc_trim(0)


def keep() -> None:
    """Keep freed memory for the rest of the process (a worker process of a pool, which
    runs batches until it ends)."""
    global _depth
    libc = _glibc()
    if libc is not None:
        with _lock:
            _depth += 1
            _set(libc, KEEP)
