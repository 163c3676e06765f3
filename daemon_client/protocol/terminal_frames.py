"""The binary frames of terminal streams (protocol.md 12.2.10): one WebSocket message is one
frame ``opcode (1 byte) | slot (1 byte) | payload``, with no length, terminal ID or sequence
number. Pure functions; decoding runs on the reader thread, encoding on the caller's.
"""

from __future__ import annotations

import json

import attrs

from daemon_client._wire import TERMINAL_OPCODES

OUTPUT = 0x01
"""Daemon → client: raw output (UTF-8 text with ANSI/VT sequences)."""
INPUT = 0x02
"""Client → daemon: UTF-8 text to type."""
RESIZE = 0x03
"""Client → daemon: UTF-8 JSON ``{"rows":…,"cols":…}``."""
SNAPSHOT = 0x04
"""Daemon → client: UTF-8 JSON terminal state; replaces the screen."""
RESTORE = 0x05
"""Newest daemons only; its payload is not known: tolerated and ignored."""
# TERMINAL_OPCODES (the terminal family; file transfer 0x10-0x12 and tunnels share the socket) is
# declared once, with the other binary opcodes that the relay's classification needs.


@attrs.frozen
class TerminalFrame:
    """One decoded terminal stream frame."""

    opcode: int
    slot: int
    payload: bytes = attrs.field(repr=lambda payload: f"<{len(payload)} bytes>")


def decode_terminal_frame(data: bytes) -> TerminalFrame | None:
    """The terminal frame in one binary message, or ``None`` when it is not one (shorter than
    two bytes, or an opcode of another family)."""
    if len(data) < 2 or data[0] not in TERMINAL_OPCODES:
        return None
    return TerminalFrame(data[0], data[1], data[2:])


def _check_slot(slot: int) -> None:
    if not 0 <= slot <= 255:
        raise ValueError(f"a terminal slot is 0-255, got {slot}")


def encode_input(slot: int, text: str) -> bytes:
    """An Input frame typing ``text`` into the terminal streamed on ``slot``."""
    _check_slot(slot)
    return bytes((INPUT, slot)) + text.encode("utf-8")


def encode_resize(slot: int, rows: int, cols: int) -> bytes:
    """A Resize frame for the terminal streamed on ``slot``."""
    _check_slot(slot)
    body = json.dumps({"rows": rows, "cols": cols}, separators=(",", ":"))
    return bytes((RESIZE, slot)) + body.encode("utf-8")


def decode_output(payload: bytes) -> str:
    """An Output payload as text (the daemon never splits a UTF-8 character across frames;
    anything undecodable is replaced, not dropped)."""
    return payload.decode("utf-8", errors="replace")
