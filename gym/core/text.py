"""User text made safe to show: control and invisible characters written as escapes."""

from __future__ import annotations

from typing import NamedTuple


def printable(text: str, keep_newlines: bool = False) -> str:
    """``text`` with control and invisible formatting characters (escape sequences,
    carriage returns, bidirectional overrides, zero-width spaces; newlines unless
    ``keep_newlines``) written as escapes such as ``\\x1b``, so user text printed to a
    terminal or drawn on a plot shows what it is instead of acting."""
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() or (keep_newlines and ch == "\n") else repr(ch)[1:-1] for ch in text
    )


class Unit(NamedTuple):
    """What a system counts, in words: one of them and many. Each system names its own
    (issue 30: units by kind, not by field name): the crawler :data:`URLS`, a graph design
    :data:`REQUESTS` (a design's ``unit``); every text a run prints says it."""

    one: str
    many: str

    def counted(self, n: int) -> str:
        """``n`` of them, in words: "1 URL", "2,000 requests"."""
        return f"{n:,} {self.one if n == 1 else self.many}"

    @property
    def heading(self) -> str:
        """Many, as a line starts it: "URLs", "Requests" (``str.capitalize`` would
        lower-case the rest: "Urls")."""
        return self.many[:1].upper() + self.many[1:]


#: What the crawler counts.
URLS = Unit("URL", "URLs")
#: What a graph design counts: requests through its nodes.
REQUESTS = Unit("request", "requests")
