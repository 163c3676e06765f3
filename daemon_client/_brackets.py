"""The first step of the nesting check on every frame: a JSON text with few brackets cannot nest deep.

A value nested ``n`` levels deep needs at least ``n`` opening brackets in its text, so a text
holding no more ``{`` and ``[`` than the limit needs no walk of its parsed value
(:mod:`daemon_client._nesting` owns the limit and the walk). :func:`few_brackets` counts the
``{`` and looks for a ``[`` first (``in`` scans with ``memchr``, many times faster than a count),
counting the ``[`` only when there is one: most frames of a live stream hold none, so they cost
one counting pass instead of two. Compiled in the compiled build (:mod:`daemon_client._compiled`).
A pure function; any thread calls it (the reader thread, for every frame).
"""

from __future__ import annotations

__all__ = ["few_brackets"]


def few_brackets(text: str | bytes, limit: int) -> bool:
    """Whether ``text`` holds no more than ``limit`` of ``{`` and ``[`` together (so that it cannot
    nest more than ``limit`` deep)."""
    if isinstance(text, str):
        found = text.count("{")
        return found <= limit and ("[" not in text or found + text.count("[") <= limit)
    found = text.count(b"{")
    return found <= limit and (b"[" not in text or found + text.count(b"[") <= limit)
