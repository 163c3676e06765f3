"""``ReplayWindow``: refuses a sealed frame whose nonce this channel has already opened.

The channel's nonces are 24 random bytes per frame (protocol-relay.md 6.1), not a counter, so
a replay can only be recognised by remembering nonces. The window remembers the nonces of the
last :data:`WINDOW` frames that authenticated on one socket (a new socket has a new key, so a
frame of another socket never opens at all). A frame replayed further back than that is not
recognised; reordering and dropping are not detected by the channel either (the layout carries
no sequence number). Only frames that authenticated enter the window, so a relay cannot fill it
with garbage.

Memory: one small integer per remembered frame (about 70 bytes with the set and the queue),
bounded by the window: at most about 4.5 MiB per socket, reached only after that many frames.
Runs on the client's reader thread only.
"""

from __future__ import annotations

from collections import deque

WINDOW = 1 << 16
"""How many of a socket's latest frames a replay is recognised among."""
_KEY_BYTES = 12
"""Bytes of the nonce kept: 96 random bits, so two distinct frames never share a key in practice."""


class ReplayWindow:
    """The nonces of one socket's latest frames; see the module docstring."""

    __slots__ = ("_order", "_seen", "_size")

    def __init__(self, size: int = WINDOW) -> None:
        if size < 1:
            raise ValueError("a replay window holds at least one frame")
        self._size = size
        self._seen: set[int] = set()
        self._order: deque[int] = deque()

    def __len__(self) -> int:
        return len(self._seen)

    def admit(self, nonce: bytes) -> bool:
        """Remember ``nonce``; False when a frame of the window already carried it (a replay)."""
        key = int.from_bytes(nonce[:_KEY_BYTES], "big")
        seen = self._seen
        if key in seen:
            return False
        seen.add(key)
        order = self._order
        order.append(key)
        if len(order) > self._size:
            seen.discard(order.popleft())
        return True
