"""Reading a recording: the JSONL transcript format, parsed and checked, split by connection.

A recording is what ``Client(trace=...)`` writes, or one of the hand-made 0.1.65 transcripts:
one JSON object a line with ``dir`` (``in``: from the daemon, ``out``: from the client), ``t``
(seconds), ``conn`` (the connection's name) and exactly one of ``frame`` (a decoded text
frame, or ``{"binary": <length>, "base64"|"hex": ..}``), ``raw`` (a text frame that is not
JSON), ``open`` (the upgrade), ``close`` (``{"code", "reason"}``) or ``abort``. Connections
keep the order of their first line. Every error reading a recording is a :class:`RecordingError`
naming the file and the line (bytes that are not UTF-8, a line that is not JSON or nests deeper
than the nesting limit, a line of the wrong shape). Pure parsing; runs on the caller's thread.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from daemon_client import _nesting as nesting

__all__ = ["Event", "RecordedConnection", "Recording", "RecordingError"]

_KINDS = ("frame", "raw", "open", "close", "abort")
_LINE_DEPTH = nesting.MAX_DEPTH + 1
"""A line holds one frame (nested up to the limit) one level down."""


class RecordingError(ValueError):
    """A recording cannot be read; the message names the file and line."""


@attrs.frozen
class Event:
    """One line of a recording."""

    line: int
    direction: str
    """``"in"`` (daemon to client) or ``"out"`` (client to daemon)."""
    t: float
    kind: str
    """``frame`` (a decoded JSON frame), ``binary``, ``raw``, ``open``, ``close`` or ``abort``."""
    value: Any
    """The frame (a dict), the binary payload (bytes), the raw text, the ``open`` object, or
    ``(code, reason)`` of a close."""
    truncated: bool = False
    """A binary frame recorded by its first bytes only (``hex``): ``value`` is that prefix."""

    def describe(self) -> str:
        """The event as one short line, for messages."""
        if self.kind == "frame":
            text = json.dumps(self.value, ensure_ascii=False, separators=(",", ":"))
        elif self.kind == "binary":
            text = f"binary frame of {len(self.value)} bytes"
        else:
            text = f"{self.kind} {self.value!r}"
        return f"line {self.line} ({self.direction}): {text if len(text) <= 300 else text[:297] + '...'}"


@attrs.frozen
class RecordedConnection:
    """The lines of one connection, in recorded order (its ``open`` line apart)."""

    name: str
    opened: Mapping[str, Any] | None
    events: tuple[Event, ...]
    start: float = 0.0
    """``t`` of the ``open`` line (else of the first line): where the connection's clock starts."""


@attrs.frozen
class Recording:
    """A parsed recording: its connections in the order they opened."""

    source: str
    connections: tuple[RecordedConnection, ...]

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Recording:
        """Read a JSONL recording; ``RecordingError`` (naming the file and line) for a malformed
        line, ``OSError`` if unreadable."""
        source = os.fspath(path)
        with open(source, "rb") as handle:  # decoded line by line, so that bad UTF-8 names its line
            return cls.parse(handle, source=source)

    @classmethod
    def parse(cls, lines: Iterable[str | bytes], *, source: str = "<recording>") -> Recording:
        """Parse the lines of a recording, text or UTF-8 bytes (blank lines are skipped)."""
        order: list[str] = []
        opened: dict[str, Mapping[str, Any]] = {}
        starts: dict[str, float] = {}
        events: dict[str, list[Event]] = {}
        for number, line in enumerate(lines, start=1):
            text = _text(line, f"{source}:{number}")
            if not text.strip():
                continue
            conn, event = _parse_line(text, number, source)
            if conn not in events:
                order.append(conn)
                events[conn] = []
                starts[conn] = event.t
            if event.kind == "open":
                if conn in opened or events[conn]:
                    raise RecordingError(f"{source}:{number}: 'open' must be the first line of connection {conn!r}")
                opened[conn] = event.value
                continue
            events[conn].append(event)
        if not order:
            raise RecordingError(f"{source}: the recording is empty")
        connections = (RecordedConnection(c, opened.get(c), tuple(events[c]), starts[c]) for c in order)
        return cls(source, tuple(connections))


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _text(line: str | bytes, where: str) -> str:
    if isinstance(line, str):
        return line
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordingError(
            f"{where}: not UTF-8 (byte {exc.start + 1} of the line; was the recording cut short?)"
        ) from None


def _parse_line(text: str, number: int, source: str) -> tuple[str, Event]:
    where = f"{source}:{number}"
    try:
        item = nesting.loads(text, "the line", limit=_LINE_DEPTH)
    except nesting.NestingTooDeep as exc:
        raise RecordingError(f"{where}: {exc}") from None
    except ValueError as exc:
        raise RecordingError(f"{where}: not JSON ({exc})") from None
    if not isinstance(item, dict):
        raise RecordingError(f"{where}: a line must be a JSON object")
    direction, t, conn = item.get("dir"), item.get("t", 0.0), item.get("conn", "c1")
    if direction not in ("in", "out"):
        raise RecordingError(f"{where}: 'dir' must be 'in' or 'out', got {direction!r}")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not -1e12 < t < 1e12:
        raise RecordingError(f"{where}: 't' must be a number of seconds, got {_shown(t)}")
    if not isinstance(conn, str):
        raise RecordingError(f"{where}: 'conn' must be a string, got {conn!r}")
    kinds = [kind for kind in _KINDS if kind in item]
    if len(kinds) != 1:
        raise RecordingError(f"{where}: a line needs exactly one of {', '.join(_KINDS)} (found {kinds or 'none'})")
    kind = kinds[0]
    value = item[kind]
    truncated = False
    if kind == "frame" and isinstance(value, dict) and "binary" in value and "type" not in value:
        kind, value, truncated = "binary", *_binary(value, where)
    elif kind == "frame" and not isinstance(value, dict):
        raise RecordingError(f"{where}: 'frame' must be a JSON object")
    elif kind == "raw" and not isinstance(value, str):
        raise RecordingError(f"{where}: 'raw' must be a string")
    elif kind == "open" and not isinstance(value, dict):
        raise RecordingError(f"{where}: 'open' must be a JSON object")
    elif kind == "close":
        if not isinstance(value, dict) or not isinstance(value.get("code"), int):
            raise RecordingError(f'{where}: \'close\' must be {{"code": <int>, "reason": <str>}}')
        value = (value["code"], str(value.get("reason") or ""))
    return conn, Event(number, direction, float(t), kind, value, truncated)


def _binary(value: dict[str, Any], where: str) -> tuple[bytes, bool]:
    length = value.get("binary")
    if isinstance(length, bool) or not isinstance(length, int) or length < 0:
        raise RecordingError(f"{where}: 'binary' must be the frame's length in bytes")
    try:
        if "base64" in value:
            data = base64.b64decode(str(value["base64"]), validate=True)
            if len(data) != length:
                raise RecordingError(f"{where}: the base64 payload has {len(data)} bytes, not {length}")
            return data, False
        data = bytes.fromhex(str(value.get("hex", "")))
    except (binascii.Error, ValueError) as exc:
        if isinstance(exc, RecordingError):
            raise
        raise RecordingError(f"{where}: bad binary payload ({exc})") from None
    return data, len(data) < length
