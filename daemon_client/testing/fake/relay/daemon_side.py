"""The fake daemon's side of a relay: its control socket, a data socket per client, and the E2EE.

:class:`RelayAttachment` does what a 0.1.65 daemon does with its relay (protocol-relay.md 4.3,
5.3, 6): it keeps a control socket open (``role=server``) and, for every ``sync`` or
``connected``, opens the data socket of that connection, waits for ``e2ee_hello``, derives
the shared key from its long-lived keypair, answers ``e2ee_ready`` and then serves the
ordinary fake-daemon protocol (:func:`~daemon_client.testing.fake.engine.connection.run_connection`)
over sealed frames. Duplicate hellos are answered again (a new key re-keys the socket, as on
0.1.65); a plaintext frame after the handshake or a frame that does not decrypt closes the
data socket with 1011, which the relay turns into 1012 for the client. Relay sockets skip the
password check, as 0.1.65 does.

Threads: ``fake-daemon-relay-control`` (dials and reads the control socket, redials after a
drop), one ``fake-daemon-relay-<n>`` per data socket (handshake, then the engine), and the
event reader of each websockets connection (``…-recv``). :meth:`RelayAttachment.close` joins
them all (bounded). Other methods are called from the test thread.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

from daemon_client import _nesting as nesting
from daemon_client._wire import classify_message
from daemon_client.discovery.offer import RelayTarget, decode_key
from daemon_client.testing.fake.engine.connection import FakeConnection, SocketClosed, run_connection
from daemon_client.transport.relay.crypto import DecryptError, FrameBox, InvalidPeerKey, KeyPair, shared_key

if TYPE_CHECKING:
    from websockets.sync.client import ClientConnection

    from daemon_client.testing.fake.engine.core import DaemonCore
    from daemon_client.testing.fake.relay.server import FakeRelay

__all__ = ["RelayAttachment"]

_log = logging.getLogger("daemon_client.testing.fake.relay")
_JOIN_TIMEOUT = 5.0
_POLL = 0.25
READY_FRAME = '{"type":"e2ee_ready"}'


def _json_type(text: str) -> tuple[str | None, dict[str, Any] | None]:
    try:
        decoded: Any = nesting.loads(text, "a relay frame")
    except ValueError:
        return None, None
    if not isinstance(decoded, dict):
        return None, None
    kind = decoded.get("type")
    return (kind if isinstance(kind, str) else None), decoded


class _Channel:
    """The daemon end of one E2EE channel: the key derived from the client's ``e2ee_hello``."""

    def __init__(self, keypair: KeyPair) -> None:
        self.keypair = keypair
        self.client_key: bytes | None = None
        self.box: FrameBox | None = None

    def accept_hello(self, frame: dict[str, Any] | None) -> bool:
        """Derive the key from a valid ``e2ee_hello``; ``False`` if it is not one."""
        if frame is None or frame.get("type") != "e2ee_hello" or not isinstance(frame.get("key"), str):
            return False
        try:
            client_key = decode_key(frame["key"])
            key = shared_key(client_key, self.keypair.secret_key)
        except (ValueError, InvalidPeerKey):
            return False
        self.client_key, self.box = client_key, FrameBox(key)
        return True


class _SealedSocket:
    """The engine's ``ServerSocket`` over a data socket: every frame sealed with the channel's key."""

    def __init__(self, ws: ClientConnection, channel: _Channel, attachment: RelayAttachment) -> None:
        self._ws = ws
        self._channel = channel
        self._attachment = attachment
        self._handler_thread = threading.current_thread()

    def _seal(self, data: bytes) -> str:
        box = self._channel.box
        assert box is not None
        return box.seal(data)

    def send_text(self, text: str) -> None:
        self._ws.send(self._seal(text.encode("utf-8")))

    def send_raw_text(self, data: bytes) -> None:
        self._ws.send(self._seal(data))

    def send_binary(self, data: bytes) -> None:
        self._ws.send(self._seal(data))  # 0.1.65: binary messages travel as base64 text frames too

    def close(self, code: int = 1000, reason: str = "") -> None:
        if threading.current_thread() is self._handler_thread:
            self._ws.close(code, reason)
        else:
            self._attachment.spawn("close", self._ws.close, code, reason)

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self._ws.socket.shutdown(socket.SHUT_RDWR)


class RelayAttachment:
    """The relay side of a fake daemon; see the module docstring.

    ``relay``: the :class:`FakeRelay` it attaches to, closed with it when ``owns_relay``.
    ``server_id``: the room name (the fake's ``serverId``). ``reconnect_delay``: seconds between
    two attempts to open the control socket.
    """

    def __init__(
        self,
        core: DaemonCore,
        relay: FakeRelay,
        server_id: str,
        *,
        owns_relay: bool = False,
        keypair: KeyPair | None = None,
        reconnect_delay: float = 0.05,
    ) -> None:
        self._core = core
        self.relay = relay
        self.server_id = server_id
        self._owns_relay = owns_relay
        self._keypair = keypair or KeyPair.generate()
        self._reconnect_delay = reconnect_delay
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._control_up = threading.Event()
        self._wake = threading.Event()  # set by restart() and close(): the downtime changed
        self._resume_at = 0.0
        self._control: ClientConnection | None = None
        self._data: dict[str, ClientConnection | None] = {}  # None: being opened
        self._threads: list[threading.Thread] = []
        self._numbers = itertools.count(1)

    # -- identity --------------------------------------------------------------------------------

    @property
    def target(self) -> RelayTarget:
        """Where clients find this daemon (with its current key)."""
        return RelayTarget(self.relay.endpoint, self.server_id, self._keypair.public_key)

    @property
    def offer_link(self) -> str:
        """The pairing-offer link of this daemon, as ``paseo daemon pair`` prints it."""
        return self.target.offer_link()

    @property
    def public_key(self) -> bytes:
        return self._keypair.public_key

    def rotate_key(self) -> None:
        """Take a new keypair, as a daemon whose key file was lost: earlier offers go stale.
        Sockets already open keep their channel."""
        self._keypair = KeyPair.generate()

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self, timeout: float = 5.0) -> None:
        """Start the control thread and wait until the control socket is attached."""
        self.spawn("control", self._run_control)
        if not self._control_up.wait(timeout):
            raise TimeoutError(f"the fake daemon did not reach the relay {self.relay.endpoint} within {timeout:g} s")

    def restart(self, downtime: float = 0.0) -> None:
        """Drop the control and data sockets; reach the relay again after ``downtime`` s."""
        with self._lock:
            self._resume_at = time.monotonic() + downtime
            sockets = [self._control, *self._data.values()]  # None entries are skipped below
        self._control_up.clear()
        self._wake.set()
        for ws in sockets:
            if ws is not None:
                with contextlib.suppress(OSError):
                    ws.socket.shutdown(socket.SHUT_RDWR)

    def wait_attached(self, timeout: float = 5.0) -> None:
        """Block until the control socket is attached (again, after :meth:`restart`)."""
        if not self._control_up.wait(timeout):
            raise TimeoutError(f"the fake daemon is not attached to the relay after {timeout:g} s")

    def inject_unsealed(self, text: str) -> int:
        """Send ``text`` as it is, unencrypted, on every data socket (fault injection); returns how many."""
        with self._lock:
            sockets = [ws for ws in self._data.values() if ws is not None]
        sent = 0
        for ws in sockets:
            with contextlib.suppress(Exception):
                ws.send(text)
                sent += 1
        return sent

    def close(self) -> None:
        """Stop, drop every socket, join every thread; close the relay if this fake owns it."""
        self._stop.set()
        self.restart()
        deadline = time.monotonic() + _JOIN_TIMEOUT
        while True:
            with self._lock:
                threads, self._threads = self._threads, []
            if not threads or time.monotonic() >= deadline:
                break
            for thread in threads:
                if thread is not threading.current_thread():
                    thread.join(max(0.0, deadline - time.monotonic()))
        if self._owns_relay:
            self.relay.close()

    def spawn(self, name: str, target: Any, *args: Any) -> None:
        """Run ``target`` on a tracked ``fake-daemon-relay-…`` thread (joined by :meth:`close`)."""
        thread = threading.Thread(
            target=target, args=args, name=f"fake-daemon-relay-{name}-{next(self._numbers)}", daemon=True
        )
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()

    # -- sockets ---------------------------------------------------------------------------------

    def _dial(self, connection_id: str | None) -> ClientConnection:
        from websockets.sync.client import connect

        host, _, port = self.relay.endpoint.rpartition(":")
        query = f"serverId={self.server_id}&role=server&v=2"
        if connection_id is not None:
            query += f"&connectionId={connection_id}"
        sock = socket.create_connection((host.strip("[]"), int(port)), timeout=5.0)
        try:
            ws = connect(
                f"ws://{self.relay.endpoint}/ws?{query}",
                sock=sock,
                open_timeout=5.0,
                close_timeout=2.0,
                compression=None,
                max_size=None,
                ping_interval=None,
            )
        except BaseException:
            sock.close()
            raise
        if hasattr(ws, "pending_legacy_warning"):  # websockets >= 16 warns unless used as a context manager
            ws.pending_legacy_warning = False
        ws.recv_events_thread.name = f"{threading.current_thread().name}-recv"
        with self._lock:
            self._threads.append(ws.recv_events_thread)
        return ws

    def _wait_before_dialling(self) -> bool:
        """Sleep out the reconnect delay and a restart's downtime (a later :meth:`restart` may
        shorten it); ``False`` once stopping."""
        if self._stop.wait(self._reconnect_delay):
            return False
        while True:
            with self._lock:
                remaining = self._resume_at - time.monotonic()
            if remaining <= 0:
                return not self._stop.is_set()
            self._wake.wait(remaining)
            self._wake.clear()
            if self._stop.is_set():
                return False

    def _run_control(self) -> None:
        """``…-control`` thread: keep the control socket attached; open data sockets on demand."""
        from websockets.exceptions import ConnectionClosed, InvalidHandshake

        while not self._stop.is_set():
            try:
                ws = self._dial(None)
            except (OSError, InvalidHandshake, TimeoutError) as exc:
                _log.debug("fake daemon: relay control socket not opened: %s", exc)
                if not self._wait_before_dialling():
                    return
                continue
            with self._lock:
                self._control = ws
            if self._stop.is_set():
                ws.socket.shutdown(socket.SHUT_RDWR)
            self._control_up.set()
            with contextlib.suppress(ConnectionClosed, OSError):
                while True:
                    kind, frame = _json_type(str(ws.recv()))
                    ids: list[Any] = []
                    if kind == "sync" and frame is not None and isinstance(frame.get("connectionIds"), list):
                        ids = frame["connectionIds"]
                    elif kind == "connected" and frame is not None:
                        ids = [frame.get("connectionId")]
                    for cid in ids:
                        if isinstance(cid, str) and cid:
                            self._open_data(cid)
            with self._lock:
                self._control = None
            self._control_up.clear()
            if not self._wait_before_dialling():
                return

    def _open_data(self, cid: str) -> None:
        with self._lock:
            if cid in self._data or self._stop.is_set():
                return
            self._data[cid] = None
        self.spawn("data", self._serve_data, cid)

    def _serve_data(self, cid: str) -> None:
        """``fake-daemon-relay-data-<n>`` thread: one data socket, from handshake to end."""
        from websockets.exceptions import ConnectionClosed, InvalidHandshake

        try:
            ws = self._dial(cid)
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            _log.debug("fake daemon: relay data socket %s not opened: %s", cid, exc)
            with self._lock:
                self._data.pop(cid, None)
            return
        with self._lock:
            self._data[cid] = ws
        try:
            if self._core.refusing():  # refuse_connections or a restart's downtime
                ws.close(1011, "Refused")
                return
            channel = _Channel(self._keypair)
            if self._handshake(ws, channel):
                self._serve_channel(ws, channel)
        except (ConnectionClosed, OSError) as exc:
            _log.debug("fake daemon: relay data socket %s ended: %s", cid, exc)
        finally:
            with self._lock:
                if self._data.get(cid) is ws:
                    del self._data[cid]
            with contextlib.suppress(Exception):
                ws.socket.shutdown(socket.SHUT_RDWR)

    def _handshake(self, ws: ClientConnection, channel: _Channel) -> bool:
        """Wait for the first frame; it must be a valid ``e2ee_hello`` (else close 1011)."""
        while not self._stop.is_set():
            try:
                first = ws.recv(_POLL)
            except TimeoutError:
                continue
            text = first.decode("utf-8", "replace") if isinstance(first, bytes) else first
            if channel.accept_hello(_json_type(text)[1]):
                ws.send(READY_FRAME)
                return True
            ws.close(1011, "E2EE handshake failed")
            return False
        return False

    def _serve_channel(self, ws: ClientConnection, channel: _Channel) -> None:
        from websockets.exceptions import ConnectionClosed

        connection = FakeConnection(
            self._core,
            _SealedSocket(ws, channel, self),
            headers={},
            subprotocols=(),
            selected_subprotocol=None,
            trusted=True,
        )

        def fatal(reason: str) -> SocketClosed:
            connection.close(1011, reason)
            return SocketClosed(None, reason)

        def recv(timeout: float) -> str | bytes:
            while True:
                try:
                    frame = ws.recv(timeout)
                except ConnectionClosed as exc:
                    rcvd = exc.rcvd
                    raise SocketClosed(rcvd.code, rcvd.reason) if rcvd is not None else SocketClosed() from None
                if isinstance(frame, str) and frame.lstrip().startswith("{"):
                    kind, decoded = _json_type(frame)
                    if kind == "e2ee_hello":
                        if channel.accept_hello(decoded):  # a resent hello (same key) or a re-key (0.1.65)
                            ws.send(READY_FRAME)
                            continue
                        raise fatal("E2EE handshake failed")
                    if kind == "e2ee_ready":
                        continue
                    raise fatal("Received plaintext frame on encrypted channel")
                box = channel.box
                assert box is not None
                try:
                    plaintext = box.open_bytes(frame) if isinstance(frame, bytes) else box.open(frame)
                except DecryptError:
                    raise fatal("Decryption failed") from None
                return classify_message(plaintext)  # by the first byte, as the daemon does (6.1)

        run_connection(connection, recv)
