"""The per-connection protocol engine of the fake daemon: handshake, auth, validation, routing.

One :class:`FakeConnection` per accepted socket, independent of how frames travel: a frontend
wraps its socket in a :class:`ServerSocket` and runs :func:`run_connection` on the socket's own
reader thread (``fake-daemon-mem-*`` for memory, a websockets handler thread on loopback).
Everything here runs on that thread, except the send/close/abort helpers, which the test
thread may also call (``push``, ``drop_connections`` ...). Behaviour follows protocol.md 1.2-1.8
and the 0.1.65 transcripts 01, 09 and 10.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from daemon_client import _nesting as nesting
from daemon_client.protocol.hosts import HostKind
from daemon_client.testing.fake.engine.core import BEARER_PREFIX, DaemonCore, server_info_payload
from daemon_client.testing.fake.engine.handlers import dispatch_session_frame, invalid_message, zod_issue
from daemon_client.testing.fake.engine.peer import ReceivedFrame, Session

__all__ = ["FakeConnection", "RecvFn", "ServerSocket", "SocketClosed", "run_connection"]

_log = logging.getLogger("daemon_client.testing.fake.daemon")

_CLIENT_TYPES = frozenset({"mobile", "browser", "cli", "mcp"})
_POLL_INTERVAL = 0.25
"""Longest a reader blocks in ``recv`` before re-checking the hello deadline and shutdown."""


class ServerSocket(Protocol):
    """The daemon end of one WebSocket, as the engine needs it (MemoryServerEnd fits as is)."""

    def send_text(self, text: str) -> None: ...

    def send_raw_text(self, data: bytes) -> None: ...

    def send_binary(self, data: bytes) -> None: ...

    def close(self, code: int = 1000, reason: str = "") -> None: ...

    def abort(self) -> None: ...


class SocketClosed(Exception):
    """Raised by a :data:`RecvFn` when the connection has ended.

    ``code``/``reason`` come from the close frame the client sent (``None``: no close frame).
    """

    def __init__(self, code: int | None = None, reason: str | None = None) -> None:
        super().__init__(f"closed ({code})")
        self.code = code
        self.reason = reason


RecvFn = Callable[[float], "str | bytes"]
"""Next client frame (``bytes`` = binary frame); ``TimeoutError`` when none within the timeout."""


class FakeConnection:
    """One server-side socket: its handshake state, session and received frames."""

    def __init__(
        self,
        core: DaemonCore,
        socket: ServerSocket,
        *,
        headers: Mapping[str, str],
        subprotocols: Sequence[str],
        selected_subprotocol: str | None,
        trusted: bool = False,
    ) -> None:
        """``trusted``: skip the password check, as a 0.1.65 daemon does on relay sockets."""
        self.core = core
        self.socket = socket
        self.headers: dict[str, str] = dict(headers)
        self.subprotocols: tuple[str, ...] = tuple(subprotocols)
        self.selected_subprotocol = selected_subprotocol
        self.hello: dict[str, Any] | None = None
        self.client_id: str | None = None
        self.session: Session | None = None
        self.handshaken = False
        self.closed = False
        self.close_code: int | None = None
        """Code of the close frame the fake sent, ``None`` if it sent none."""
        self.close_reason: str | None = None
        self.dropped = False
        self.peer_close_code: int | None = None
        """Code of the close frame received from the client, ``None`` if none arrived."""
        self.peer_close_reason: str | None = None
        self.ended = threading.Event()
        """Set once the socket ended and the connection left its session."""
        self.frames: list[ReceivedFrame] = []
        self.data: dict[str, Any] = {}
        """Free storage for extensions (owned subscriptions ...)."""
        self.opened_at = time.monotonic()
        self._credential_ok = trusted
        self._ending = False
        self._send_lock = threading.Lock()
        self.id = core.add_connection(self)

    def __repr__(self) -> str:
        return f"<FakeConnection #{self.id} client_id={self.client_id!r} handshaken={self.handshaken}>"

    # -- output --------------------------------------------------------------------------------

    def send_frame(self, frame: Mapping[str, Any]) -> bool:
        """Send one JSON frame to this socket; ``False`` if the socket is gone."""
        return self._send(lambda: self.socket.send_text(json.dumps(frame, separators=(",", ":"))))

    def send_raw(self, data: str | bytes, *, binary: bool = False) -> bool:
        if binary:
            raw = data.encode() if isinstance(data, str) else data
            return self._send(lambda: self.socket.send_binary(raw))
        if isinstance(data, str):
            return self._send(lambda: self.socket.send_text(data))
        return self._send(lambda: self.socket.send_raw_text(data))

    def _send(self, action: Callable[[], None]) -> bool:
        if self.closed:
            return False
        with self._send_lock:
            if self._ending:
                return False
            try:
                action()
            except Exception as exc:  # noqa: BLE001 - any socket failure means the peer is gone
                _log.debug("fake daemon: send on connection #%s failed: %s", self.id, exc)
                return False
        return True

    def send_session(self, message_type: str, payload: Mapping[str, Any]) -> None:
        """Send a session message routed as the host kind does (protocol.md 1.7).

        Capable hosts: this socket only. Selective and broadcast hosts: every socket of the session.
        """
        frame = {"type": "session", "message": {"type": message_type, "payload": dict(payload)}}
        session = self.session
        if self.core.config.host_kind is HostKind.CAPABLE or session is None:
            self.send_frame(frame)
            return
        for target in self.core.session_connections(session):
            target.send_frame(frame)

    def send_status_error(self, message: str) -> None:
        self.send_frame(
            {"type": "session", "message": {"type": "status", "payload": {"status": "error", "message": message}}}
        )

    def send_rpc_error(
        self, request_id: str, request_type: str | None, error: str, code: str, *, to_session: bool = True
    ) -> None:
        """``rpc_error``; validation errors (``to_session=False``) go to this socket only, as on the daemon."""
        payload: dict[str, Any] = {"requestId": request_id}
        if request_type is not None:
            payload["requestType"] = request_type
        payload.update(error=error, code=code)
        if to_session:
            self.send_session("rpc_error", payload)
        else:
            self.send_frame({"type": "session", "message": {"type": "rpc_error", "payload": payload}})

    def close(self, code: int, reason: str = "") -> None:
        """Send a close frame and stop processing this socket."""
        with self._send_lock:  # a send in progress completes first; later ones (and closes) are refused
            if self._ending:
                return
            self._ending = True
            self.close_code, self.close_reason = code, reason
        try:
            self.socket.close(code, reason)  # may block until the peer answers (loopback, reader thread)
        except Exception as exc:  # noqa: BLE001
            _log.debug("fake daemon: close of connection #%s failed: %s", self.id, exc)
        self.closed = True  # only now may the reader stop (and its frontend close the socket itself)

    def abort(self) -> None:
        """Drop the socket without a close frame."""
        if not self._ending:  # no lock: a close handshake in progress must not delay the drop
            self._ending = self.dropped = True
        try:
            self.socket.abort()
        except Exception as exc:  # noqa: BLE001
            _log.debug("fake daemon: abort of connection #%s failed: %s", self.id, exc)
        self.closed = True

    # -- input ---------------------------------------------------------------------------------

    def open(self) -> None:
        """Checks made right after the upgrade: the header/subprotocol credentials (protocol.md 1.3)."""
        password = self.core.config.password
        if password is None:
            return
        tokens = [name[len(BEARER_PREFIX) :] for name in self.subprotocols if name.lower().startswith(BEARER_PREFIX)]
        if self.core.config.host_kind is HostKind.BROADCAST:
            if not tokens:
                self.close(4401, "Password required")
            elif password not in tokens:
                self.close(4401, "Incorrect password")
            else:
                self._credential_ok = True
            return
        authorization = next((v for k, v in self.headers.items() if k.lower() == "authorization"), None)
        if authorization is not None:
            scheme, _, value = authorization.strip().partition(" ")
            tokens.append(value.strip() if scheme.lower() == "bearer" else authorization)
        if tokens:
            if password in tokens:
                self._credential_ok = True
            else:
                self.close(4401, "Incorrect password")

    def seconds_to_deadline(self) -> float:
        """How long the reader may block before :meth:`check_deadline` must run."""
        if self.hello is not None:
            return _POLL_INTERVAL
        remaining = self.opened_at + self.core.config.hello_timeout - time.monotonic()
        return max(0.0, min(_POLL_INTERVAL, remaining))

    def check_deadline(self) -> None:
        deadline = self.opened_at + self.core.config.hello_timeout
        if self.hello is None and not self.closed and time.monotonic() >= deadline:
            self.close(4001, "Hello timeout")

    def handle_binary(self, data: bytes) -> None:
        self.core.record(ReceivedFrame({"binary": len(data)}, self, None))
        if self.hello is None:
            self.close(4002, "Session message before hello")
            return
        handler = self.core.registry.binary_handler  # terminal input and resize (fake.terminals)
        if handler is not None:
            handler(self, data)

    def handle_text(self, text: str) -> None:
        try:
            decoded: Any = nesting.loads(text, "a client frame")
        except ValueError:
            self.core.record(ReceivedFrame({"raw": text}, self, text))
            if self.hello is None:
                self.close(4002, "Invalid hello")
            else:
                token = text.strip()[:1] or "end of input"
                detail = f"Unexpected token '{token}', \"{text[:60]}\" is not valid JSON"
                self.send_status_error(f"Invalid message: {detail}")
            return
        frame = decoded if isinstance(decoded, dict) else {"raw": text}
        self.core.record(ReceivedFrame(frame, self, text))
        if not isinstance(decoded, dict):
            if self.hello is None:
                self.close(4002, "Invalid hello")
            else:
                self.send_status_error("Invalid message: expected object")
            return
        self._handle_frame(decoded)

    def _handle_frame(self, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        if kind == "ping":
            if self.core.answer_pings:
                self.send_frame({"type": "pong"})
            return
        if kind == "recording_state":
            return
        if self.hello is None:
            if kind == "hello":
                self._handle_hello(frame)
            elif kind == "session" and isinstance(frame.get("message"), dict):
                self.close(4002, "Session message before hello")
            else:
                self.close(4002, "Invalid hello")
            return
        if kind == "hello":
            self.close(4002, "Unexpected hello")
        elif kind == "session":
            dispatch_session_frame(self, self.core, frame)
        else:
            request_id = frame.get("requestId")
            if isinstance(request_id, str) and isinstance(kind, str):
                self.send_rpc_error(request_id, kind, "Invalid message", "invalid_message", to_session=False)
            else:
                self.send_status_error(invalid_message([zod_issue(["type"], "'session' | 'ping' | 'hello'")]))

    # -- hello ---------------------------------------------------------------------------------

    def _handle_hello(self, hello: dict[str, Any]) -> None:
        config = self.core.config
        kind = config.host_kind
        allowed = _CLIENT_TYPES | ({"hub"} if kind is HostKind.CAPABLE else set())
        version = hello.get("protocolVersion")
        if (
            not isinstance(hello.get("clientId"), str)
            or hello.get("clientType") not in allowed
            or not isinstance(version, int | float)
            or isinstance(version, bool)
            or not isinstance(hello.get("appVersion", ""), str)
            or not isinstance(hello.get("capabilities", {}), dict)
        ):
            self.close(4002, "Invalid hello")
            return
        announces = "auth" in hello or (hello.get("capabilities") or {}).get("hello_rejection") is True
        if version != 1:
            if announces and kind is not HostKind.BROADCAST:
                self.send_frame({"type": "hello.rejected", "reason": "incompatible_protocol"})
            self.close(4003, "Incompatible protocol version")
            return
        client_id = hello["clientId"].strip()
        if not client_id:
            self.close(4002, "Invalid hello")
            return
        if config.password is not None and not self._credential_ok:
            auth = hello.get("auth")
            if not isinstance(auth, dict) or auth.get("kind") != "password" or "password" not in auth:
                reason, text = "password_required", "Password required"
            elif auth.get("password") != config.password:
                reason, text = "incorrect_password", "Incorrect password"
            else:
                reason = text = ""
            if reason:
                if announces:
                    self.send_frame({"type": "hello.rejected", "reason": reason, "accepts": ["password"]})
                self.close(4401, text)
                return
        self.hello = hello
        self.client_id = client_id
        self.core.join_session(self, client_id)
        if self.core.stall_handshake:
            return
        info = json.dumps(
            {"type": "session", "message": {"type": "status", "payload": server_info_payload(config)}},
            separators=(",", ":"),
        )
        with self._send_lock:  # handshaken before the client can see server_info; pushes wait for it
            if self._ending:
                return
            self.core.mark_handshaken(self)
            try:
                self.socket.send_text(info)
            except Exception as exc:  # noqa: BLE001
                _log.debug("fake daemon: server_info on connection #%s failed: %s", self.id, exc)

    # -- end -----------------------------------------------------------------------------------

    def finish(self) -> None:
        """The socket ended: leave the session and run the disconnect hooks."""
        self.closed = True
        self.core.remove_connection(self)
        for hook in self.core.registry.disconnect_hooks:
            try:
                hook(self)
            except Exception:  # noqa: BLE001
                _log.exception("fake daemon: disconnect hook failed")
        self.ended.set()

    def wait_ended(self, timeout: float = 5.0) -> None:
        """Block until this connection has ended; ``TimeoutError`` otherwise."""
        if not self.ended.wait(timeout):
            raise TimeoutError(f"connection #{self.id} still open after {timeout:g} s")


def run_connection(connection: FakeConnection, recv: RecvFn) -> None:
    """Serve one connection until it ends; runs on that connection's reader thread."""
    stopping = connection.core.stopping
    try:
        connection.open()
        while not connection.closed and not stopping.is_set():
            try:
                data = recv(connection.seconds_to_deadline())
            except TimeoutError:
                connection.check_deadline()
                continue
            except SocketClosed as closed:
                if closed.code is not None:
                    connection.peer_close_code, connection.peer_close_reason = closed.code, closed.reason
                break
            if isinstance(data, bytes):
                connection.handle_binary(data)
            else:
                connection.handle_text(data)
    except Exception:  # noqa: BLE001 - never let a reader thread die with a traceback
        _log.exception("fake daemon: connection #%s failed", connection.id)
        connection.abort()
    finally:
        connection.finish()
