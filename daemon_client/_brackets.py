"""The first step of the nesting check on every frame: a JSON text with few brackets cannot nest deep.

A value nested ``n`` levels deep needs at least ``n`` opening brackets in its text, so a text
holding no more ``{`` and ``[`` than the limit needs no walk of its parsed value
(:mod:`daemon_client._nesting` owns the limit and the walk). :func:`few_brackets` finds the
brackets one at a time with ``str.find``/``bytes.find``, which scan with ``memchr``, and stops
at the first one past the limit: a frame of the live stream (a few brackets in some hundred
characters) costs a few calls instead of two passes over every character, and a large frame
with many brackets stops early. Compiled in the compiled build (:mod:`daemon_client._compiled`).
A pure function; any thread calls it (the reader thread, for every frame).
"""

from __future__ import annotations

__all__ = ["few_brackets"]


def few_brackets(text: str | bytes, limit: int) -> bool:
    """Whether ``text`` holds no more than ``limit`` of ``{`` and ``[`` together (so that it cannot
    nest more than ``limit`` deep)."""
    if isinstance(text, str):
        return _few_in_text(text, limit)
    return _few_in_bytes(text, limit)


def _few_in_text(text: str, limit: int) -> bool:
    found = 0
    at = text.find("{")
    while at >= 0:
        found += 1
        if found > limit:
            return False
        at = text.find("{", at + 1)
    at = text.find("[")
    while at >= 0:
        found += 1
        if found > limit:
            return False
        at = text.find("[", at + 1)
    return True


def _few_in_bytes(data: bytes, limit: int) -> bool:
    found = 0
    at = data.find(b"{")
    while at >= 0:
        found += 1
        if found > limit:
            return False
        at = data.find(b"{", at + 1)
    at = data.find(b"[")
    while at >= 0:
        found += 1
        if found > limit:
            return False
        at = data.find(b"[", at + 1)
    return True
