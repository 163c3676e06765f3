"""Pure timeline reads of the fake daemon: projection and the window of a fetch.

Owns the interpretation of ``fetch_agent_timeline_request`` (protocol.md 6.8, transcript 06):
request parsing and defaults, the row window of each direction (including the
``canonical`` + ``tail`` special case whose ``limit`` counts projected entries), resets on a
stale cursor or a gap, and the projection of canonical rows into entries
(``assistant_merge``, ``reasoning_merge``, ``tool_lifecycle``). Nothing here holds state, a
lock or a thread: :mod:`daemon_client.testing.fake.timeline.store` calls it with a snapshot of an
agent's rows, on the reader thread of the connection that asked.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from daemon_client.testing.fake.directory.query import QueryError

__all__ = [
    "DEFAULT_PAGE_LIMIT",
    "Row",
    "TimelineQuery",
    "TimelineWindow",
    "canonical_entries",
    "parse_timeline_query",
    "project",
    "select_window",
    "trailing_assistant_text",
]

Row = dict[str, Any]
"""A canonical row: ``{provider, item, timestamp, seq, epoch, turnId?}``; never mutated in place."""

DEFAULT_PAGE_LIMIT = 200
"""Rows a ``tail``/``before`` read returns when the request has no ``limit``."""

_DIRECTIONS = ("tail", "before", "after")
_PROJECTIONS = ("projected", "canonical")
_TEXT_MERGES: Mapping[str, str] = {"assistant_message": "assistant_merge", "reasoning": "reasoning_merge"}


@attrs.frozen
class TimelineQuery:
    """The effective values of one ``fetch_agent_timeline_request`` (defaults applied)."""

    direction: str
    projection: str
    limit: int
    """0 = every row of the window."""
    cursor: tuple[str, int] | None = None
    """``(epoch, seq)`` of the request's cursor."""


@attrs.frozen
class TimelineWindow:
    """The rows a read returns and the flags describing them."""

    rows: list[Row]
    reset: bool = False
    stale_cursor: bool = False
    gap: bool = False
    has_older: bool = False
    has_newer: bool = False


def parse_timeline_query(message: Mapping[str, Any]) -> TimelineQuery:
    """Validate the request fields and apply the defaults of protocol.md 6.8.

    Raises :class:`QueryError` for a field of the wrong type or value.
    """
    cursor: tuple[str, int] | None = None
    raw_cursor = message.get("cursor")
    if raw_cursor is not None:
        if not isinstance(raw_cursor, dict):
            raise QueryError("Invalid cursor: expected an object")
        epoch, seq = raw_cursor.get("epoch"), raw_cursor.get("seq")
        if not isinstance(epoch, str) or not isinstance(seq, int) or not _is_count(seq):
            raise QueryError("Invalid cursor: expected {epoch: string, seq: integer >= 0}")
        cursor = (epoch, seq)
    direction = message.get("direction")
    if direction is None:
        direction = "after" if cursor is not None else "tail"
    elif direction not in _DIRECTIONS:
        raise QueryError(f"Invalid direction: {direction!r}")
    projection = message.get("projection")
    if projection is None:
        projection = "projected"
    elif projection not in _PROJECTIONS:
        raise QueryError(f"Invalid projection: {projection!r}")
    limit = message.get("limit")
    if limit is None:
        limit = 0 if direction == "after" else DEFAULT_PAGE_LIMIT
    elif not _is_count(limit):
        raise QueryError("Invalid limit: expected an integer >= 0")
    return TimelineQuery(direction=str(direction), projection=str(projection), limit=int(limit), cursor=cursor)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def select_window(rows: Sequence[Row], epoch: str, next_seq: int, query: TimelineQuery) -> TimelineWindow:
    """The rows of a read over ``rows`` (contiguous, ascending ``seq``) of the current ``epoch``.

    A cursor of another epoch resets (``staleCursor``); an ``after`` cursor older than the
    oldest row still held resets too (``gap``). A reset returns a tail.
    """
    reset = stale = gap = False
    mode = query.direction
    cursor = query.cursor
    min_seq = rows[0]["seq"] if rows else next_seq
    if cursor is not None and cursor[0] != epoch:
        reset = stale = True
        mode = "tail"
    elif mode == "after" and cursor is not None and cursor[1] < min_seq - 1:
        reset = gap = True
        mode = "tail"
    limit = query.limit
    if mode == "tail":
        if limit == 0:
            chosen = list(rows)
        elif query.projection == "canonical":
            chosen = _canonical_tail(rows, limit)
        else:
            chosen = list(rows[-limit:])
    elif mode == "before":
        bound = cursor[1] if cursor is not None else None
        candidates = [row for row in rows if bound is None or row["seq"] < bound]
        chosen = candidates[-limit:] if limit else candidates
    else:
        bound = cursor[1] if cursor is not None else 0
        candidates = [row for row in rows if row["seq"] > bound]
        chosen = candidates[:limit] if limit else candidates
    if chosen:
        has_older = rows[0]["seq"] < chosen[0]["seq"]
        has_newer = chosen[-1]["seq"] < rows[-1]["seq"]
    else:  # nothing on the asked side: everything held lies on the other one
        has_older = mode == "after" and bool(rows)
        has_newer = mode == "before" and bool(rows)
    return TimelineWindow(chosen, reset, stale, gap, has_older, has_newer)


def _canonical_tail(rows: Sequence[Row], limit: int) -> list[Row]:
    """Canonical tail whose ``limit`` counts projected entries (transcript 06 L12-13).

    The window starts at the first row of the ``limit``-th projected entry from the end, so it
    never starts inside a merged assistant message.
    """
    last = project(rows, reasoning_merge_enum=True)[-limit:]
    if not last:
        return []
    start = min(span["startSeq"] for entry in last for span in entry["sourceSeqRanges"])
    return [row for row in rows if row["seq"] >= start]


def _entry(row: Row) -> dict[str, Any]:
    entry: dict[str, Any] = {"provider": row["provider"], "item": copy.deepcopy(row["item"])}
    if "turnId" in row:
        entry["turnId"] = row["turnId"]
    seq = row["seq"]
    entry.update(timestamp=row["timestamp"], seqStart=seq, seqEnd=seq,
                 sourceSeqRanges=[{"startSeq": seq, "endSeq": seq}], collapsed=[])  # fmt: skip
    return entry


def canonical_entries(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """One entry per row: ``seqStart == seqEnd`` and ``collapsed == []``."""
    return [_entry(row) for row in rows]


def _absorb(entry: dict[str, Any], seq: int, tag: str | None) -> None:
    spans: list[dict[str, int]] = entry["sourceSeqRanges"]
    if spans[-1]["endSeq"] == seq - 1:
        spans[-1]["endSeq"] = seq
    else:
        spans.append({"startSeq": seq, "endSeq": seq})
    entry["seqEnd"] = seq
    if tag is not None and tag not in entry["collapsed"]:
        entry["collapsed"].append(tag)


def project(rows: Sequence[Row], *, reasoning_merge_enum: bool) -> list[dict[str, Any]]:
    """Projected entries (protocol.md 6.5): consecutive ``assistant_message`` chunks and
    consecutive ``reasoning`` chunks are concatenated; ``tool_call`` rows sharing a ``callId``
    become one entry at the position of the first, whose item is the latest row's.

    A merged entry keeps the first row's timestamp. ``reasoning_merge`` is listed in
    ``collapsed`` only when the client advertised ``reasoning_merge_enum``.
    """
    entries: list[dict[str, Any]] = []
    open_text: dict[str, Any] | None = None
    tools: dict[str, dict[str, Any]] = {}
    for row in rows:
        item = row["item"]
        kind = item.get("type") if isinstance(item, dict) else None
        if kind in _TEXT_MERGES and open_text is not None and open_text["item"].get("type") == kind:
            open_text["item"]["text"] = str(open_text["item"].get("text", "")) + str(item.get("text", ""))
            tag = _TEXT_MERGES[str(kind)]
            _absorb(open_text, row["seq"], tag if tag != "reasoning_merge" or reasoning_merge_enum else None)
            continue
        call_id = item.get("callId") if kind == "tool_call" else None
        if isinstance(call_id, str) and call_id in tools:
            merged = tools[call_id]
            merged["item"] = copy.deepcopy(item)
            _absorb(merged, row["seq"], "tool_lifecycle")
            open_text = None
            continue
        entry = _entry(row)
        entries.append(entry)
        open_text = entry if kind in _TEXT_MERGES else None
        if isinstance(call_id, str):
            tools[call_id] = entry
    return entries


def trailing_assistant_text(rows: Sequence[Row]) -> str | None:
    """``lastMessage``: the trailing ``assistant_message`` chunks joined with no separator."""
    chunks: list[str] = []
    for row in reversed(rows):
        item = row["item"]
        if not isinstance(item, dict) or item.get("type") != "assistant_message":
            break
        chunks.append(str(item.get("text", "")))
    return "".join(reversed(chunks)) if chunks else None
