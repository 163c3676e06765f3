"""A raw test client of the fake daemon: it sends and reads protocol frames as they are.

The tests of :class:`~daemon_client.testing.fake.daemon.FakeDaemon` itself cannot use the real
client (that would test one with the other), so they drive the fake with :class:`RawClient`:
one socket, in memory (a bare ``MemoryTransport``) or on loopback (a websocket-client socket
against ``fake.serve()``), on which a test sends frames and reads what the fake answers.

Threads: each client starts one reader thread (``raw-client-reader-<n>``, a daemon thread)
that blocks on the socket and puts every frame it receives, as an :data:`Event`, on a queue;
the test's thread sends on the socket and takes events from that queue with a timeout. The
reader ends on the first close or drop of the connection (that last event stays readable);
:meth:`RawClient.close` closes the socket, joins the reader and waits until the fake's side of
the connection has ended, so no thread of the client outlives it. :class:`RawClients` opens
clients for one test and closes them all at its end (the body of a ``connect`` fixture).

"Nothing else arrived" is checked with a barrier (:meth:`RawClient.quiet`): wait until the
fake has written every queued frame, then send a session ping whose pong must come next.
Nothing here sleeps to synchronise; every wait is bounded.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import queue
import socket
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import pytest
import websocket

from daemon_client.testing.fake.daemon import FakeDaemon
from daemon_client.testing.fake.engine.connection import FakeConnection
from daemon_client.transport.base import ConnectParams, FrameRejected, ProtocolViolation, TransportClosed
from daemon_client.transport.memory import MemoryTransport

__all__ = [
    "READER_THREAD_PREFIX",
    "Connect",
    "Event",
    "Fake",
    "Message",
    "RawClient",
    "RawClients",
    "connect_fixture",
    "hello",
    "session",
]

TIMEOUT = 5.0
"""Default bound of every wait, in seconds."""
READER_THREAD_PREFIX = "raw-client-reader"

Event = tuple[Any, ...]
"""What the socket delivered: ``("text", str)``, ``("invalid", bytes)`` (a text frame that is
not UTF-8; over memory the transport then fails the connection with 1007, so it comes last),
``("binary", bytes)``, ``("close", code, reason)`` or ``("dropped",)`` (the connection ended
without a close frame). The last two end the connection."""

Message = tuple[str, dict[str, Any]]
"""A session frame as (message type, payload); a top-level frame as (type, frame)."""

_READER_NUMBERS = itertools.count(1)
_REQUEST_NUMBERS = itertools.count(1)  # unique across sockets: legacy hosts fan replies out
_BARRIER = "barrier-"


Fake = Callable[..., FakeDaemon]
"""The type of conftest's ``fakes`` fixture: ``fakes(host_kind="capable", **options)``."""


def hello(
    client_id: str = "cid-1",
    *,
    capabilities: Mapping[str, Any] | None = None,
    auth: Mapping[str, Any] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A hello frame of a 0.1.65 CLI; ``fields`` add or replace top-level keys."""
    frame: dict[str, Any] = {
        "type": "hello",
        "clientId": client_id,
        "clientType": "cli",
        "protocolVersion": 1,
        "appVersion": "0.1.65",
        "capabilities": dict(capabilities or {}),
    }
    if auth is not None:
        frame["auth"] = dict(auth)
    frame.update(fields)
    return frame


def session(message_type: str, **fields: Any) -> dict[str, Any]:
    """A session frame: ``{"type": "session", "message": {"type": message_type, **fields}}``."""
    return {"type": "session", "message": {"type": message_type, **fields}}


def _is_end(event: Event) -> bool:
    return event[0] in ("close", "dropped")


class _Socket(Protocol):
    """One client socket as :class:`RawClient` drives it."""

    subprotocol: str | None

    def receive(self) -> Event:
        """Block until the next event; after an ending event it is not called again."""
        ...

    def send_text(self, text: str) -> None: ...

    def send_binary(self, data: bytes) -> None: ...

    def start_close(self, code: int, reason: str) -> None:
        """Send a close frame; the reader then reads the fake's answer."""
        ...

    def abort(self) -> None:
        """Wake a blocked :meth:`receive` and free the socket (idempotent)."""
        ...


class _MemorySocket:
    def __init__(self, fake: FakeDaemon, subprotocols: Sequence[str], headers: Mapping[str, str]) -> None:
        self.transport: MemoryTransport = fake.transport_factory()
        params = ConnectParams(
            url="memory://fake", timeout=TIMEOUT, headers=dict(headers), subprotocols=tuple(subprotocols)
        )
        self.transport.connect(params)
        self.subprotocol = self.transport.selected_subprotocol

    def receive(self) -> Event:
        try:
            data = self.transport.recv()
        except FrameRejected as exc:
            return ("invalid", exc.preview)
        except ProtocolViolation as exc:  # the memory transport fails the connection (1007)
            if exc.code != 1007:
                raise
            return ("invalid", b"")
        except TransportClosed as exc:
            return ("dropped",) if exc.code is None else ("close", exc.code, exc.reason)
        return ("binary", data) if isinstance(data, bytes) else ("text", data)

    def send_text(self, text: str) -> None:
        # the fake may already have closed the socket; the close is what the test reads next
        with contextlib.suppress(TransportClosed):
            self.transport.send_text(text)

    def send_binary(self, data: bytes) -> None:
        with contextlib.suppress(TransportClosed):
            self.transport.send_binary(data)

    def start_close(self, code: int, reason: str) -> None:
        self.transport.close(code, reason)

    def abort(self) -> None:
        self.transport.abort()


class _LoopbackSocket:
    def __init__(self, url: str, subprotocols: Sequence[str], headers: Mapping[str, str]) -> None:
        self.ws = websocket.create_connection(
            url,
            timeout=TIMEOUT,
            subprotocols=list(subprotocols) or None,
            suppress_origin=True,
            header=[f"{name}: {value}" for name, value in headers.items()],
            skip_utf8_validation=True,  # invalid text frames are reported, not fatal
        )
        self.ws.settimeout(None)  # the reader blocks until a frame arrives or abort() wakes it
        sub = self.ws.getsubprotocol()
        self.subprotocol = None if sub is None else str(sub)

    def receive(self) -> Event:
        try:
            opcode, data = self.ws.recv_data(control_frame=False)  # answers a close frame itself
        except (websocket.WebSocketException, OSError):
            return ("dropped",)
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            code = int.from_bytes(data[:2], "big") if len(data) >= 2 else None
            return ("close", code, data[2:].decode())
        if opcode == websocket.ABNF.OPCODE_BINARY:
            return ("binary", data)
        try:
            return ("text", data.decode("utf-8"))
        except UnicodeDecodeError:
            return ("invalid", data)

    def send_text(self, text: str) -> None:
        # the fake may already have closed the socket; the close is what the test reads next
        with contextlib.suppress(websocket.WebSocketException, OSError):
            self.ws.send(text)

    def send_binary(self, data: bytes) -> None:
        self.ws.send_binary(data)

    def start_close(self, code: int, reason: str) -> None:
        with contextlib.suppress(websocket.WebSocketException, OSError):
            self.ws.send_close(code, reason.encode())

    def abort(self) -> None:
        sock = self.ws.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self.ws.shutdown()  # type: ignore[no-untyped-call]


_C = TypeVar("_C", bound="_Closing")


class _Closing:
    """``with`` support: the block's end calls :meth:`close`."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class RawClient(_Closing):
    """One raw socket to a fake daemon; see the module docstring.

    Opening sends nothing: call :meth:`handshake` (or send any frame first). Read with
    :meth:`next_event` (any event), :meth:`next_frame` (a decoded text frame) or :meth:`message`
    (a :data:`Message`); send with :meth:`send`, :meth:`send_session` or :meth:`call`.
    """

    def __init__(
        self,
        fake: FakeDaemon,
        *,
        loopback: bool = False,
        subprotocols: Sequence[str] = (),
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.fake = fake
        self._before = set(fake.connections)
        self._connection: FakeConnection | None = None
        self._socket: _Socket = (
            _LoopbackSocket(fake.serve(), subprotocols, headers or {})
            if loopback
            else _MemorySocket(fake, subprotocols, headers or {})
        )
        self.subprotocol = self._socket.subprotocol
        """The subprotocol the fake selected, ``None`` if none."""
        self._events: queue.Queue[Event] = queue.Queue()
        self._closed = False
        self._reader = threading.Thread(
            target=self._read, name=f"{READER_THREAD_PREFIX}-{next(_READER_NUMBERS)}", daemon=True
        )
        self._reader.start()

    def _read(self) -> None:
        while True:
            event = self._socket.receive()
            self._events.put(event)
            if _is_end(event):
                return

    @property
    def connection(self) -> FakeConnection:
        """The fake's side of this socket, found by :meth:`handshake`."""
        assert self._connection is not None, "no handshake identified this socket's server connection"
        return self._connection

    # -- sending ---------------------------------------------------------------------------

    def send(self, frame: Mapping[str, Any] | str) -> None:
        """Send a frame (a string is sent as is). A socket the fake closed swallows it."""
        self._socket.send_text(frame if isinstance(frame, str) else json.dumps(frame))

    def send_binary(self, data: bytes) -> None:
        """Send a binary frame."""
        self._socket.send_binary(data)

    def send_session(self, message_type: str, **fields: Any) -> None:
        self.send(session(message_type, **fields))

    def call(self, message_type: str, **fields: Any) -> str:
        """Send a request with a fresh ``requestId`` and return that id."""
        request_id = f"req-{next(_REQUEST_NUMBERS)}"
        self.send_session(message_type, requestId=request_id, **fields)
        return request_id

    # -- reading ---------------------------------------------------------------------------

    def next_event(self, timeout: float = TIMEOUT) -> Event:
        """The next :data:`Event`; ``TimeoutError`` if none within ``timeout``. Once the
        connection has ended, its ending event is returned again on every call."""
        try:
            event = self._events.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no frame within {timeout} s") from None
        if _is_end(event):
            self._events.put(event)  # the reader has ended: nothing can come after it
        return event

    def next_frame(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The next frame, which must be a text frame, decoded."""
        event = self.next_event(timeout)
        assert event[0] == "text", f"expected a text frame, got {event}"
        decoded: dict[str, Any] = json.loads(event[1])
        return decoded

    def message(self, timeout: float = TIMEOUT) -> Message:
        """The next frame as a :data:`Message`."""
        frame = self.next_frame(timeout)
        if frame.get("type") == "session":
            return frame["message"]["type"], frame["message"].get("payload", {})
        return frame["type"], frame

    def expect_close(self, timeout: float = TIMEOUT) -> tuple[int | None, str]:
        """The next event must end the connection: (code, reason), ``(None, "")`` for a drop."""
        event = self.next_event(timeout)
        assert _is_end(event), f"expected a close, got {event}"
        return (event[1], event[2]) if event[0] == "close" else (None, "")

    def until(self, wanted: str | Callable[[str, dict[str, Any]], bool]) -> tuple[Message, list[Message]]:
        """Read until a message of type ``wanted`` (or for which ``wanted(type, payload)`` is
        true); return it and the messages read before it, in order, which are kept, not lost."""
        matches = (lambda kind, _: kind == wanted) if isinstance(wanted, str) else wanted
        before: list[Message] = []
        while True:
            message = self.message()
            if matches(*message):
                return message, before
            before.append(message)

    def reply(self, request_id: str) -> tuple[Message, list[Message]]:
        """Read until the reply to ``request_id``; return it and the messages before it."""
        return self.until(lambda _, payload: payload.get("requestId") == request_id)

    # -- requests --------------------------------------------------------------------------

    def handshake(self, frame: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send ``frame`` (default :func:`hello`), expect ``server_info`` as the next frame and
        return its payload; also finds :attr:`connection`."""
        self.send(hello() if frame is None else frame)
        kind, payload = self.message()
        assert (kind, payload.get("status")) == ("status", "server_info"), (kind, payload)
        # handshaken before server_info is sent; the fake's connections are in accept order
        new = [c for c in self.fake.connections if c.handshaken and c not in self._before]
        if len(new) == 1:
            self._connection = new[0]
        return payload

    def request(self, message_type: str, **fields: Any) -> Message:
        """Send a request whose reply must be the very next frame; return the reply."""
        request_id = self.call(message_type, **fields)
        kind, payload = self.message()
        assert payload.get("requestId") == request_id, (kind, payload)
        return kind, payload

    def ask(self, message_type: str, **fields: Any) -> dict[str, Any]:
        """Send a request and return its reply's payload, skipping the messages before it."""
        return self.reply(self.call(message_type, **fields))[0][1]

    def settle(self, agent_id: str | None = None) -> list[Message]:
        """Wait until the agent's turn (if given) has ended and the fake has written every
        queued frame, then ping; return the messages that came before the pong."""
        if agent_id is not None:
            self.fake.runs.wait_until_idle(agent_id)
        for outbox in (self.fake.timeline, self.fake.directory, self.fake.events):
            outbox.wait_idle()
        (kind, _), before = self.reply(self._barrier())
        assert kind == "pong"
        return before

    def quiet(self, agent_id: str | None = None) -> None:
        """Assert that nothing is pending: :meth:`settle` read nothing but the pongs of other
        sockets' barriers (legacy hosts send a reply to every socket of the session)."""
        before = self.settle(agent_id)
        assert all(kind == "pong" and str(p.get("requestId")).startswith(_BARRIER) for kind, p in before), before

    def _barrier(self) -> str:
        request_id = f"{_BARRIER}{next(_REQUEST_NUMBERS)}"
        self.send_session("ping", requestId=request_id)
        return request_id

    # -- closing ---------------------------------------------------------------------------

    def close(self, code: int = 1000, reason: str = "Client closed") -> None:
        """Close the socket (idempotent), join the reader and wait until the fake's side of the
        connection has ended."""
        if self._closed:
            return
        self._closed = True
        if self._reader.is_alive():
            self._socket.start_close(code, reason)
            self._reader.join(TIMEOUT)
        self._socket.abort()
        self._reader.join(TIMEOUT)
        assert not self._reader.is_alive(), f"{self._reader.name} did not end"
        if self._connection is not None:
            self._connection.wait_ended()


Connect = Callable[..., RawClient]
"""The type of a test module's ``connect`` fixture: :meth:`RawClients.open` or :meth:`RawClients.connect`."""


class RawClients(_Closing):
    """The raw clients of one test, closed together by :meth:`close` (or ``with``)."""

    def __init__(self, *, loopback: bool = False) -> None:
        self.loopback = loopback
        """Default frontend of the clients opened here."""
        self._clients: list[RawClient] = []

    def open(
        self,
        fake: FakeDaemon,
        subprotocols: Sequence[str] = (),
        headers: Mapping[str, str] | None = None,
        *,
        loopback: bool | None = None,
    ) -> RawClient:
        """A new socket; nothing sent yet."""
        client = RawClient(
            fake,
            loopback=self.loopback if loopback is None else loopback,
            subprotocols=subprotocols,
            headers=headers,
        )
        self._clients.append(client)
        return client

    def connect(
        self, fake: FakeDaemon, client_id: str = "cid-1", *, loopback: bool | None = None, **capabilities: bool
    ) -> RawClient:
        """A new socket past its handshake; the hello announces ``owned_subscriptions`` and
        ``capabilities``."""
        client = self.open(fake, loopback=loopback)
        client.handshake(hello(client_id, capabilities={"owned_subscriptions": True, **capabilities}))
        assert client.connection.client_id == client_id
        return client

    def close(self) -> None:
        """Close every client, the last opened first; one failing does not keep the others open."""
        with contextlib.ExitStack() as stack:
            for client in self._clients:
                stack.callback(client.close)


def connect_fixture() -> Callable[[], Iterator[Connect]]:
    """The ``connect`` fixture of a test module, which assigns it: ``connect = connect_fixture()``.

    ``connect(fake, client_id="cid-1", *, loopback=False, **capabilities)`` is
    :meth:`RawClients.connect`: a new socket past its hello; every one is closed after the test.
    """

    @pytest.fixture(name="connect")
    def connect() -> Iterator[Connect]:
        with RawClients() as clients:
            yield clients.connect

    return connect
