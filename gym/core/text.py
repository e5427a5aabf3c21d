"""User text made safe to show: control and invisible characters written as escapes."""

from __future__ import annotations


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
