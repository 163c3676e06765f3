"""The forwarding state of the fake relay: rooms by ``serverId``, links by ``connectionId``.

Implements the v2 rules of protocol-relay.md 4.1-4.3 over any socket with ``send`` (a
websockets connection fits): client frames go verbatim to the daemon's data socket of their
connection, or wait in a buffer of at most 200 frames (oldest dropped) until it opens; daemon
frames go verbatim to every client socket of the connection; the daemon's control socket
hears ``sync``, ``connected`` and ``disconnected``. Called from the relay's handler threads;
one lock guards the tables and each link's own lock orders its frames; they are never held
together. Sends to a link's daemon socket happen under that link's lock (so a flush cannot be
overtaken); no other lock is held while sending.
"""

from __future__ import annotations

import collections
import contextlib
import json
import secrets
import threading
from collections.abc import Callable
from typing import Any, Protocol

import attrs

DEFAULT_BUFFER_LIMIT = 200


class RelaySocket(Protocol):
    """One accepted WebSocket, as the forwarding rules need it."""

    def send(self, message: str | bytes) -> None: ...


@attrs.frozen
class ForwardedFrame:
    """One frame the relay forwarded: ``direction`` is ``"to_daemon"`` or ``"to_client"``."""

    direction: str
    server_id: str
    connection_id: str
    data: str | bytes = attrs.field(repr=False)


class Link:
    """One relay connection ``C``: its client sockets, the daemon's data socket, the buffer."""

    def __init__(self, connection_id: str, buffer_limit: int) -> None:
        self.connection_id = connection_id
        self.clients: list[RelaySocket] = []
        self.data: RelaySocket | None = None
        self.buffer: collections.deque[str | bytes] = collections.deque(maxlen=buffer_limit)
        self.lock = threading.Lock()


class Room:
    """Everything of one ``serverId``: the daemon's control socket and the links."""

    def __init__(self) -> None:
        self.control: RelaySocket | None = None
        self.links: dict[str, Link] = {}


def _control_frame(**fields: Any) -> str:
    return json.dumps(fields, separators=(",", ":"))


class RelayTables:
    """Rooms and links of a fake relay; see the module docstring."""

    def __init__(
        self,
        buffer_limit: int = DEFAULT_BUFFER_LIMIT,
        record: Callable[[ForwardedFrame], None] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._rooms: dict[str, Room] = {}
        self._buffer_limit = buffer_limit
        self._record = record

    def _room(self, server_id: str) -> Room:
        room = self._rooms.get(server_id)
        if room is None:
            room = self._rooms[server_id] = Room()
        return room

    # -- clients ---------------------------------------------------------------------------------

    def add_client(self, server_id: str, socket: RelaySocket, connection_id: str | None) -> str:
        """Register a client socket (a new ``conn_…`` unless given); tell the daemon. Returns ``C``."""
        with self._lock:
            room = self._room(server_id)
            cid = connection_id or f"conn_{secrets.token_hex(8)}"
            link = room.links.get(cid)
            if link is None:
                link = room.links[cid] = Link(cid, self._buffer_limit)
            link.clients.append(socket)
            control = room.control
        if control is not None:
            _send_quietly(control, _control_frame(type="connected", connectionId=cid))
        return cid

    def from_client(self, server_id: str, cid: str, data: str | bytes) -> None:
        """Forward a client frame to the daemon's data socket, or buffer it."""
        with self._lock:
            link = self._rooms[server_id].links.get(cid) if server_id in self._rooms else None
        if link is None:
            return
        with link.lock:
            if link.data is None:
                link.buffer.append(data)
                return
            if self._record is not None:
                self._record(ForwardedFrame("to_daemon", server_id, cid, data))
            _send_quietly(link.data, data)

    def remove_client(self, server_id: str, cid: str, socket: RelaySocket) -> RelaySocket | None:
        """Forget a client socket; if it was the last of ``C``, drop ``C`` and return the daemon's
        data socket for the caller to close (1001), after telling the control socket."""
        with self._lock:
            room = self._rooms.get(server_id)
            link = room.links.get(cid) if room is not None else None
            if room is None or link is None or socket not in link.clients:
                return None
            link.clients.remove(socket)
            if link.clients:
                return None
            del room.links[cid]
            control = room.control
        with link.lock:
            data, link.data = link.data, None
            link.buffer.clear()
        if control is not None:
            _send_quietly(control, _control_frame(type="disconnected", connectionId=cid))
        return data

    # -- the daemon ------------------------------------------------------------------------------

    def attach_control(self, server_id: str, socket: RelaySocket) -> RelaySocket | None:
        """The daemon's control socket; returns the one it replaces. Sends ``sync``."""
        with self._lock:
            room = self._room(server_id)
            old, room.control = room.control, socket
            pending = sorted(room.links)
        _send_quietly(socket, _control_frame(type="sync", connectionIds=pending))
        return old

    def detach_control(self, server_id: str, socket: RelaySocket) -> None:
        with self._lock:
            room = self._rooms.get(server_id)
            if room is not None and room.control is socket:
                room.control = None

    def attach_data(self, server_id: str, cid: str, socket: RelaySocket) -> tuple[bool, RelaySocket | None]:
        """The daemon's data socket of ``C``: flush the buffer into it. Returns whether ``C`` is
        known (a data socket for an unknown connection is refused) and the socket it replaces."""
        with self._lock:
            room = self._rooms.get(server_id)
            link = room.links.get(cid) if room is not None else None
        if link is None:
            return False, None
        with link.lock:
            old, link.data = link.data, socket
            while link.buffer:
                data = link.buffer.popleft()
                if self._record is not None:
                    self._record(ForwardedFrame("to_daemon", server_id, cid, data))
                _send_quietly(socket, data)
        return True, old

    def from_daemon(self, server_id: str, cid: str, data: str | bytes) -> None:
        """Forward a daemon frame to every client socket of ``C``."""
        with self._lock:
            room = self._rooms.get(server_id)
            link = room.links.get(cid) if room is not None else None
            clients = list(link.clients) if link is not None else []
        if clients and self._record is not None:
            self._record(ForwardedFrame("to_client", server_id, cid, data))
        for client in clients:
            _send_quietly(client, data)

    def detach_data(self, server_id: str, cid: str, socket: RelaySocket) -> list[RelaySocket]:
        """The daemon's data socket of ``C`` ended: return the client sockets to close (1012)."""
        with self._lock:
            room = self._rooms.get(server_id)
            link = room.links.get(cid) if room is not None else None
        if link is None:
            return []
        with link.lock:
            if link.data is not socket:
                return []  # replaced: the clients stay with the new one
            link.data = None
        with self._lock:
            return list(link.clients)

    def has_control(self, server_id: str) -> bool:
        with self._lock:
            room = self._rooms.get(server_id)
            return room is not None and room.control is not None

    def connection_ids(self, server_id: str) -> list[str]:
        with self._lock:
            room = self._rooms.get(server_id)
            return sorted(room.links) if room is not None else []

    def clear(self) -> None:
        """Forget everything (a relay restart)."""
        with self._lock:
            self._rooms.clear()


def _send_quietly(socket: RelaySocket, data: str | bytes) -> None:
    """Send, ignoring a socket that is already gone (its own handler cleans up)."""
    with contextlib.suppress(Exception):  # a closed peer: nothing to forward to
        socket.send(data)
