"""What stands between a command and the process: standard output that fails in one known
way, Ctrl-C and SIGTERM as one interrupt, and the last words that may find stderr gone."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any


class StdoutError(Exception):
    """Standard output cannot be written: not a gym bug, not a broken pipe."""


class Stdout:
    """sys.stdout, with a failed write (``> /dev/full``; closed with ``>&-``) raised as
    :class:`StdoutError`; a broken pipe stays a :class:`BrokenPipeError` (exit 141)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _call(self, name: str, *args: Any) -> Any:
        if self._stream is None:
            raise StdoutError("it is closed")
        try:
            return getattr(self._stream, name)(*args)
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise StdoutError(reason) from None

    def write(self, text: str) -> int:
        result: int = self._call("write", text)
        return result

    def flush(self) -> None:
        self._call("flush")

    def isatty(self) -> bool:
        return bool(self._stream is not None and self._stream.isatty())

    def fileno(self) -> int:
        result: int = self._call("fileno")
        return result

    def __getattr__(self, name: str) -> Any:
        if self._stream is None:
            raise StdoutError("it is closed")
        return getattr(self._stream, name)


def interrupt_handlers() -> Callable[[], None]:
    """Ctrl-C and SIGTERM end a command: the first raises KeyboardInterrupt, so finished
    work is kept (a sweep writes its rows); a second one is ignored while that happens
    (with a note); a third ends at once. Returns the undo."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    count = [0]

    def interrupt(_signum: int, _frame: object) -> None:
        count[0] += 1
        if count[0] == 2:
            sys.stderr.write("still saving what is done; interrupt again to abandon it\n")
            return
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for s, handler in previous.items():
            signal.signal(s, handler)

    return restore


def discard_stdout() -> None:
    """After a broken pipe, send what is left (and the final flush) nowhere."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def unwritable_ok() -> contextlib.AbstractContextManager[None]:
    """For the last words on stderr: when stderr cannot be written (``2>/dev/full``, or
    closed), the message is lost but the exit status still tells what happened (2, 3,
    130), instead of Python's exit status 1 for the failed write, which reads as FAIL."""
    return contextlib.suppress(OSError, ValueError, AttributeError)
