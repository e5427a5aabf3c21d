"""Freed memory kept for the next batch of runs (Linux with glibc; elsewhere nothing).

A batch of flow runs allocates a few hundred arrays of a few megabytes, frees them when
its results are read, and the next batch allocates the same again. glibc hands large
blocks straight back to the system (``mmap`` above its threshold, ``brk`` trimmed above
its trim threshold), so every batch has its memory zeroed anew by the kernel, one page
fault per 4 KB: for ``gym run --runs 500`` about 420,000 faults, a third of the command's
CPU time. :func:`keep` makes blocks up to 32 MB come from the heap and keeps up to a
given amount of freed memory there for the next batch (the batches' memory budget): the
faults of the first batch only.

The two settings are glibc's ``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD`` (``man
mallopt``), what ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_`` set at start.
They hold for the rest of the process: setting either turns glibc's own adjustment of the
thresholds off (the mmap threshold stays at 32 MB, the largest that adjustment reaches),
and freed memory up to the amount kept is not given back to the system until it exits.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from functools import cache

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: Blocks up to this size come from the heap once kept (glibc's largest allowed).
MMAP_THRESHOLD = 32 * 1024 * 1024
#: mallopt takes an int.
_MOST = 2**31 - 1

_lock = threading.Lock()
_kept = 0  # the trim threshold set, 0 until keep() is first called


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
    return libc


def keep(most: int) -> int:
    """Keep up to ``most`` bytes of freed memory for reuse, for the rest of the process
    (the largest amount any call asked for); returns that amount, 0 where the C library
    is not glibc. When more than that is free at the top of the heap, it goes back to
    the system as before."""
    global _kept
    libc = _glibc()
    if libc is None:
        return 0
    with _lock:
        wanted = min(max(int(most), _kept), _MOST)
        if wanted != _kept:
            libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
            libc.mallopt(M_TRIM_THRESHOLD, wanted)
            _kept = wanted
        return _kept
