"""What the fake daemon's core and request handling know of a connection, and the records they
keep about connections.

Owns :class:`Peer`, the Protocol a connection fits (``FakeConnection`` does as is),
:class:`Session` (every socket of one ``clientId``, protocol.md 1.7) and :class:`ReceivedFrame`
(one decoded client frame). ``core`` and ``handlers`` name these instead of the connection
class, and this module imports neither of them nor the connection, so no annotation closes a
circle between the three. The records are plain data: they are changed under the core's lock
(sessions, frame logs) or by the connection's own reader thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs

__all__ = ["FramePredicate", "Peer", "ReceivedFrame", "Session"]


class Peer(Protocol):
    """One server-side socket, as the core, the request handlers and the feature modules use it."""

    id: int
    client_id: str | None
    hello: dict[str, Any] | None
    session: Session | None
    handshaken: bool
    closed: bool
    frames: list[ReceivedFrame]
    data: dict[str, Any]
    """Free storage for extensions (owned subscriptions ...)."""

    def send_frame(self, frame: Mapping[str, Any]) -> bool: ...

    def send_raw(self, data: str | bytes, *, binary: bool = False) -> bool: ...

    def send_session(self, message_type: str, payload: Mapping[str, Any]) -> None: ...

    def send_status_error(self, message: str) -> None: ...

    def send_rpc_error(
        self, request_id: str, request_type: str | None, error: str, code: str, *, to_session: bool = True
    ) -> None: ...

    def close(self, code: int, reason: str = "") -> None: ...

    def abort(self) -> None: ...


class ReceivedFrame(dict[str, Any]):
    """A decoded client frame (the dict itself), tagged with the connection it came on.

    A text frame that is not a JSON object is recorded as ``{"raw": <text>}``, a binary frame
    as ``{"binary": <length>}`` (the notation of the recorded transcripts).
    """

    def __init__(self, frame: Mapping[str, Any], connection: Peer, text: str | None) -> None:
        super().__init__(frame)
        self.connection = connection
        self.text = text
        self.received_at = time.monotonic()

    @property
    def message_type(self) -> str | None:
        """The top-level type, or the inner type for a ``session`` frame."""
        if self.get("type") == "session" and isinstance(self.get("message"), dict):
            inner = self["message"].get("type")
            return inner if isinstance(inner, str) else None
        outer = self.get("type")
        return outer if isinstance(outer, str) else None

    def matches(self, wanted: str) -> bool:
        return self.get("type") == wanted or self.message_type == wanted


FramePredicate = Callable[[ReceivedFrame], bool]


@attrs.define(eq=False)
class Session:
    """A server-side session: every socket whose hello carried ``client_id``."""

    client_id: str
    connections: list[Peer] = attrs.field(factory=list)
    created_at: float = attrs.field(factory=time.monotonic)
    detached_at: float | None = None
    data: dict[str, Any] = attrs.field(factory=dict)
    """Free storage for extensions (directory slots, filters ...)."""
