"""The one frame type of the pipeline, and how a message whose kind the wire lost is classified.

Every transport (WebSocket, unix socket, in-memory, relay) hands the reader a :data:`WireFrame`:
a text frame as ``str`` (strictly UTF-8 decoded), a binary frame as ``bytes``. The Python type
is the frame's opcode, kept from the socket to routing, the wire trace and terminal streams; no
layer above the transport ever guesses a frame's kind again.

Through the relay every message travels as a base64 text frame, so the wire does not say which
kind a decrypted message is. :func:`classify_message` decides by the first byte, exactly as a
direct binary frame is typed (protocol-relay.md 6.1): a terminal stream or file-transfer opcode
makes it binary, anything else is UTF-8 text. Deciding by UTF-8 validity instead would turn
terminal output, which is usually valid UTF-8, into text that is not JSON.

Pure values and functions, on whichever thread reads frames (the client's reader thread, a fake
daemon's connection thread).
"""

from __future__ import annotations

from typing import TypeAlias

WireFrame: TypeAlias = str | bytes
"""One data frame: ``str`` for a text frame, ``bytes`` for a binary frame's payload."""

DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024
"""Inbound frames larger than this are skipped, unless a client says otherwise (``max_frame_bytes``)."""

TERMINAL_OPCODES = frozenset({0x01, 0x02, 0x03, 0x04, 0x05})
"""First bytes of terminal stream frames: Output, Input, Resize, Snapshot, Restore."""
FILE_TRANSFER_OPCODES = frozenset({0x10, 0x11, 0x12})
"""First bytes of the file-transfer family, which shares the socket with terminal streams."""
BINARY_OPCODES = TERMINAL_OPCODES | FILE_TRANSFER_OPCODES
"""Every first byte that makes a message binary. A Paseo JSON message starts with ``{``."""


def classify_message(message: bytes) -> WireFrame:
    """The frame a direct connection would have delivered for ``message``, a payload whose kind
    the wire did not carry: ``bytes`` when its first byte is a binary opcode, else the UTF-8
    text; ``bytes`` again when it is not UTF-8 (routed like a binary frame of an unknown family,
    so it is dropped with one log line and never parsed as JSON)."""
    if message[:1] and message[0] in BINARY_OPCODES:
        return message
    try:
        return message.decode("utf-8")
    except UnicodeDecodeError:
        return message
