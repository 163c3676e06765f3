"""The one nesting limit for JSON read from outside: frames, offers, pid files, config, traces.

Python's parsers, and every recursive walk after them (lenient structuring, scrubbing, ``repr``,
re-encoding), run out of stack on deeply nested input and raise ``RecursionError``, which no
caller expects; orjson stops at its own depth of 1024. :func:`loads` parses with one limit for
every parser, :data:`MAX_DEPTH`, and raises :class:`NestingTooDeep` (a ``ValueError``) past it,
so that no later walk ever sees a deeper value. :func:`check` applies the limit to a value
already parsed.

The cost on the frame path: a text holding no more ``{`` and ``[`` than the limit cannot nest
deeper, which :mod:`daemon_client._brackets` counts (one pass when the text holds no ``[``);
only a text with more brackets is walked (without recursion, one level at a time,
stopping at the limit). Pure functions; any thread may call them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from daemon_client._brackets import few_brackets as _few_brackets

MAX_DEPTH = 128
"""The deepest nesting of objects and arrays read from outside. Paseo's frames nest under 20."""

_CONTAINERS = (dict, list)


class NestingTooDeep(ValueError):
    """JSON nested deeper than the limit: refused as a whole."""

    def __init__(self, what: str, limit: int = MAX_DEPTH) -> None:
        super().__init__(f"{what} is nested more than {limit} levels deep (the nesting limit)")
        self.limit = limit


def few_brackets(text: str | bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether ``text`` holds so few ``{`` and ``[`` that it cannot nest more than ``limit`` deep."""
    return _few_brackets(text, limit)


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests dicts and lists more than ``limit`` deep (walked without recursion)."""
    level = [value] if isinstance(value, _CONTAINERS) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[Any] = []
        for item in level:
            below += [
                child for child in (item.values() if type(item) is dict else item) if isinstance(child, _CONTAINERS)
            ]
        level = below
    return False


def check(value: Any, what: str, limit: int = MAX_DEPTH) -> Any:
    """``value``, or :class:`NestingTooDeep` naming ``what`` when it nests more than ``limit`` deep."""
    if too_deep(value, limit):
        raise NestingTooDeep(what, limit)
    return value


def is_depth_error(exc: BaseException) -> bool:
    """Whether a parser's exception says the input nests too deeply (``RecursionError`` from the
    standard parser, orjson's "depth limit exceeded")."""
    return isinstance(exc, RecursionError) or (isinstance(exc, ValueError) and "depth limit" in str(exc))


def loads(text: str | bytes, what: str, *, parse: Callable[[Any], Any] = json.loads, limit: int = MAX_DEPTH) -> Any:
    """``parse(text)``, refused with :class:`NestingTooDeep` (naming ``what``) when it nests more
    than ``limit`` deep; whatever else ``parse`` raises (``ValueError`` for text that is not JSON,
    ``UnicodeDecodeError`` for bytes that are not UTF-8) passes through."""
    try:
        value = parse(text)
    except (RecursionError, ValueError) as exc:
        if is_depth_error(exc):
            raise NestingTooDeep(what, limit) from None
        raise
    if not few_brackets(text, limit) and too_deep(value, limit):
        raise NestingTooDeep(what, limit)
    return value
