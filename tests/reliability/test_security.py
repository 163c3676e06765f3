"""Security properties: the password stays secret, TLS is verified, auth failures are not retried,
and an oversized frame cannot exhaust memory.

* The password never appears in the client's logs at DEBUG (daemon_client and websocket-client
  loggers), in reprs, or in exception messages, for every host kind and transport, token-safe or not.
* ``wss://`` verifies the certificate and the hostname by default; an untrusted daemon is refused
  before any credential is sent.
* An authentication failure makes exactly one connection attempt, however small the backoff.
* A frame far over ``max_frame_bytes`` is streamed through without being held in memory, and the
  connection survives it (a hand-written WebSocket server streams it, so the server side holds one
  1 MiB chunk at most).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import re
import socket
import ssl
import struct
import threading
import time
import traceback
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import trustme

import daemon_client as dc
from daemon_client.protocol.models import PasswordAuth
from daemon_client.runtime.connection import ConnectionOptions
from daemon_client.runtime.handshake import build_hello
from daemon_client.testing import RecordingHandler
from daemon_client.transport.base import ConnectParams, TransportError
from daemon_client.transport.frames import OP_CLOSE, OP_TEXT, FrameReader
from tests.helpers import supervisor_ended

from ..conftest import KINDS, TRANSPORTS

MARK = "Qz7k9Secret"
"""Part of every password used here; it must never be seen anywhere."""
SAFE_PASSWORD = f"tok-{MARK}-safe"
UNSAFE_PASSWORD = f'sp ace "{MARK}" é'  # not token-safe: travels in hello.auth only
PASSWORDS = {"token-safe": SAFE_PASSWORD, "not-token-safe": UNSAFE_PASSWORD}
WRONG = f"wrong-{MARK}-pw"
FAST_RETRY = dc.ReconnectPolicy(base_delay=0.01, max_delay=0.02, jitter=0.0, retry_initial_connect=True)


def client_logs(caplog: pytest.LogCaptureFixture) -> str:
    """Everything the client's loggers and websocket-client logged (the fake daemon's own loggers excluded)."""
    lines = []
    for record in caplog.records:
        own = record.name == "daemon_client" or record.name.startswith("daemon_client.")
        if (own and ".testing" not in record.name) or record.name.split(".")[0] == "websocket":
            lines.append(record.getMessage())
            if record.exc_info and record.exc_info[1] is not None:
                lines.extend(traceback.format_exception(record.exc_info[1]))
    return "\n".join(lines)


def exception_text(exc: BaseException) -> str:
    """str, repr, args and the whole chain of causes, formatted as a traceback would print them."""
    return "\n".join([str(exc), repr(exc), repr(exc.args), *traceback.format_exception(exc)])


def assert_secret(*texts: str) -> None:
    for text in texts:
        assert MARK not in text, f"the password leaked: …{text[max(0, text.find(MARK) - 80) : text.find(MARK) + 40]}…"


@pytest.fixture(autouse=True)
def _debug_everything(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="daemon_client")
    caplog.set_level(logging.DEBUG, logger="websocket")


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.005)


# ----------------------------------------------------------------------------- the password stays secret


def _connectable(kind: str, password: str) -> bool:
    return kind != "broadcast" or password == SAFE_PASSWORD  # 0.1.65 reads the subprotocol only


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("password", PASSWORDS.values(), ids=PASSWORDS.keys())
def test_the_password_never_reaches_logs_reprs_or_errors(
    fakes, make_client, caplog, *, kind: str, transport: str, password: str
) -> None:
    fake = fakes(kind, password=password)
    fake.on_request("echo_request", lambda ctx: ctx.reply({"echo": ctx.message.get("value")}))
    fake.ignore("slow_request")
    seen: list[str] = []
    client = make_client(fake, transport, password=password)
    seen.append(repr(client))
    if _connectable(kind, password):
        info = client.connect()
        seen += [repr(client), str(client), repr(info), repr(client.server_info)]
        assert client.request({"type": "echo_request", "value": 1})["echo"] == 1
        assert client.ping().round_trip is not None
        slow = client.request_async({"type": "slow_request"}, timeout=30)
        fake.drop_connections()  # the in-flight request fails; the client reconnects with the password
        error = slow.exception(timeout=10)
        assert isinstance(error, dc.ConnectionLost)
        seen.append(exception_text(error))
        wait_until(lambda: client.state is dc.ConnectionState.CONNECTED and fake.accepted_count == 2)
        with pytest.raises(dc.RequestTimeout) as timeout:
            client.request({"type": "slow_request"}, timeout=0.05)
        seen.append(exception_text(timeout.value))
        client.close()
        with pytest.raises(dc.ClientClosed) as closed:
            client.request({"type": "echo_request"})
        seen.append(exception_text(closed.value))
    else:
        with pytest.raises(dc.AuthenticationError) as refused:
            client.connect()
        assert "characters" in str(refused.value)  # says why, without saying what
        seen.append(exception_text(refused.value))
    for attempt, reason in ((WRONG, "incorrect"), (None, "required")):
        other = make_client(fake, transport, password=attempt)
        with pytest.raises(dc.AuthenticationError, match=f"(?i){reason}") as failure:
            other.connect()
        seen += [exception_text(failure.value), repr(other), exception_text(other.last_error or Exception())]
    assert_secret(client_logs(caplog), *seen)
    assert "***" in client_logs(caplog)  # the hello was logged, redacted


@pytest.mark.parametrize("password", PASSWORDS.values(), ids=PASSWORDS.keys())
def test_the_password_is_not_in_errors_when_the_daemon_is_unreachable_or_silent(fakes, caplog, password: str) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        url = f"ws://127.0.0.1:{probe.getsockname()[1]}/ws"
    client = dc.Client(url, password=password, connect_timeout=2)
    try:
        with pytest.raises(dc.ConnectionLost) as lost:
            client.connect()
    finally:
        client.close()
    fake = fakes("capable", password=password)
    fake.stall_handshake = True
    silent = dc.Client(fake.serve(), password=password, connect_timeout=0.3)
    try:
        with pytest.raises(dc.ConnectTimeout) as timed_out:
            silent.connect()
    finally:
        silent.close()
    assert_secret(exception_text(lost.value), exception_text(timed_out.value), client_logs(caplog))


def test_hello_and_auth_reprs_hide_the_password() -> None:
    hello = build_hello("client-1", "0.1.65", SAFE_PASSWORD)
    assert hello.auth is not None
    assert_secret(repr(hello), str(hello), repr(hello.auth), repr(PasswordAuth(UNSAFE_PASSWORD)))
    assert hello.auth.password == SAFE_PASSWORD  # still there, only hidden from reprs


@pytest.mark.parametrize("which", ["ConnectionOptions", "ConnectParams"])
def test_bug_connection_options_and_connect_params_repr_the_password(fakes, make_client, which: str) -> None:
    fake = fakes("capable", password=SAFE_PASSWORD)
    client = make_client(fake, password=SAFE_PASSWORD)
    client.connect()
    options: ConnectionOptions = client._connection._opts
    params: ConnectParams = fake.connections[0].socket.params  # what the client handed its transport
    assert_secret(repr(options) if which == "ConnectionOptions" else repr(params))


def test_bug_the_fake_daemon_logs_credentials_under_the_daemon_client_logger(fakes, caplog) -> None:
    fake = fakes("capable", password=SAFE_PASSWORD)
    with dc.connect(fake.serve(), password=SAFE_PASSWORD) as client:
        assert client.state is dc.ConnectionState.CONNECTED
    assert_secret("\n".join(r.getMessage() for r in caplog.records))


# ----------------------------------------------------------------------------- TLS


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def server_context(ca: trustme.CA, *names: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(context)
    return context


def trusting(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


def test_wss_refuses_a_self_signed_daemon_by_default_before_sending_credentials(fakes, ca, caplog) -> None:
    fake = fakes("capable", password=SAFE_PASSWORD)
    url = fake.serve(ssl_context=server_context(ca, "127.0.0.1"))
    assert url.startswith("wss://")
    client = dc.Client(url, password=SAFE_PASSWORD, connect_timeout=5)  # no ssl_context: the defaults
    try:
        with pytest.raises(dc.ConnectionLost, match=r"(?i)certificate verify failed") as refused:
            client.connect(timeout=10)
    finally:
        client.close()
    assert fake.accepted_count == 0  # the TLS handshake failed: no upgrade, so no header carried the password
    assert fake.received == []
    assert_secret(exception_text(refused.value), client_logs(caplog))
    # the same daemon, trusted explicitly, is fine
    with dc.connect(url, password=SAFE_PASSWORD, ssl_context=trusting(ca)) as trusted:
        assert trusted.ping().round_trip is not None


def test_wss_refuses_a_certificate_for_another_host(fakes, ca) -> None:
    fake = fakes("capable")
    url = fake.serve(ssl_context=server_context(ca, "daemon.example.org"))
    client = dc.Client(url, ssl_context=trusting(ca), connect_timeout=5)  # trusted CA, wrong name
    try:
        with pytest.raises(dc.ConnectionLost, match=r"(?i)mismatch|doesn't match|not valid for"):
            client.connect(timeout=10)
    finally:
        client.close()
    assert fake.accepted_count == 0


def test_wss_with_a_trusted_certificate_for_the_right_host_connects(fakes, ca) -> None:
    fake = fakes("broadcast", password=SAFE_PASSWORD)
    url = fake.serve(ssl_context=server_context(ca, "127.0.0.1"))
    with dc.connect(url, password=SAFE_PASSWORD, ssl_context=trusting(ca), strict=True) as client:
        assert client.host_kind is dc.HostKind.BROADCAST


# ----------------------------------------------------------------------------- no retry after an auth failure


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("attempt", [WRONG, None], ids=["wrong-password", "missing-password"])
def test_an_auth_failure_makes_exactly_one_attempt(fakes, make_client, kind, transport, attempt) -> None:
    fake = fakes(kind, password=SAFE_PASSWORD)
    client = make_client(fake, transport, password=attempt, reconnect=FAST_RETRY)
    with pytest.raises(dc.AuthenticationError):
        client.connect(timeout=10)
    assert supervisor_ended(client), "the client is still retrying"  # gave up: no attempt can follow
    assert fake.accepted_count == 1
    assert client.state is dc.ConnectionState.DISCONNECTED
    assert isinstance(client.last_error, dc.AuthenticationError)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_an_auth_close_while_connected_stops_reconnecting(fakes, make_client, kind, transport) -> None:
    fake = fakes(kind, password=SAFE_PASSWORD)
    client = make_client(fake, transport, password=SAFE_PASSWORD, reconnect=FAST_RETRY)
    states = RecordingHandler[tuple]("states")
    client.on_state_change(states)
    client.connect()
    fake.close_connections(4401, "Incorrect password")  # e.g. the daemon's password was changed
    lost = states.wait_for(1, predicate=lambda c: c[1] is dc.ConnectionState.DISCONNECTED, timeout=10)[0]
    assert "reconnecting" not in lost[2]
    assert supervisor_ended(client), "the client is still retrying"  # gave up: no attempt can follow
    assert fake.accepted_count == 1
    assert isinstance(client.last_error, dc.AuthenticationError)


# ----------------------------------------------------------------------------- oversized frames and memory

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
CHUNK = b"x" * (1 << 20)


class RawDaemon:
    """A hand-written WebSocket daemon on 127.0.0.1: one connection, a minimal handshake, then
    frames written byte by byte by the test (so a huge frame costs the server one 1 MiB chunk)."""

    def __init__(self, *, echo_subprotocol: bool = True) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self._stopping = threading.Event()
        self.url = f"ws://127.0.0.1:{self._listener.getsockname()[1]}/ws"
        self._echo_subprotocol = echo_subprotocol
        self._sock: socket.socket | None = None
        self._send_lock = threading.Lock()
        self.accepted = 0
        self.received: list[dict[str, Any]] = []
        self._thread = threading.Thread(target=self._serve, name="raw-daemon", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        try:
            while not self._stopping.is_set():
                try:
                    sock, _ = self._listener.accept()
                except TimeoutError:
                    continue
                sock.settimeout(None)
                self.accepted += 1
                with sock:
                    self._sock = sock
                    self._upgrade(sock)
                    self._read(sock)
        except (OSError, TransportError):
            return  # the listener closed (close()) or the peer went away

    def _upgrade(self, sock: socket.socket) -> None:
        request = b""
        while b"\r\n\r\n" not in request:
            chunk = sock.recv(4096)
            if not chunk:
                raise OSError("closed during the upgrade")
            request += chunk
        key = re.search(rb"(?im)^sec-websocket-key:\s*(\S+)", request)
        assert key is not None
        accept = base64.b64encode(hashlib.sha1(key.group(1) + GUID).digest())
        lines = [b"HTTP/1.1 101 Switching Protocols", b"Upgrade: websocket", b"Connection: Upgrade"]
        lines.append(b"Sec-WebSocket-Accept: " + accept)
        offered = re.search(rb"(?im)^sec-websocket-protocol:\s*([^,\r\n]+)", request)
        if offered and self._echo_subprotocol:
            lines.append(b"Sec-WebSocket-Protocol: " + offered.group(1).strip())
        sock.sendall(b"\r\n".join(lines) + b"\r\n\r\n")

    def _read(self, sock: socket.socket) -> None:
        reader = FrameReader(sock, 1 << 20)
        while True:
            opcode, data = reader.next_message()
            if opcode == OP_CLOSE:
                return
            if opcode != OP_TEXT:
                continue
            frame = json.loads(data)
            self.received.append(frame)
            message = frame.get("message") or {}
            if frame.get("type") == "hello":
                self.send_json({"type": "session", "message": {"type": "status", "payload": {
                    "status": "server_info", "serverId": "srv-raw", "version": "0.9.3", "features": {}}}})  # fmt: skip
            elif message.get("type") == "ping":
                reply = {"requestId": message.get("requestId"), "serverReceivedAt": 1, "serverSentAt": 2}
                self.send_json({"type": "session", "message": {"type": "pong", "payload": reply}})

    @staticmethod
    def header(opcode: int, length: int, *, fin: bool = True) -> bytes:
        first = (0x80 if fin else 0) | opcode
        if length < 126:
            return struct.pack("!BB", first, length)
        if length < 1 << 16:
            return struct.pack("!BBH", first, 126, length)
        return struct.pack("!BBQ", first, 127, length)

    def _connection(self) -> socket.socket:
        wait_until(lambda: self._sock is not None)
        assert self._sock is not None
        return self._sock

    def send_json(self, frame: dict[str, Any]) -> None:
        data = json.dumps(frame).encode()
        with self._send_lock:
            self._connection().sendall(self.header(OP_TEXT, len(data)) + data)

    def stream_text_frame(self, size: int, fragments: int = 1) -> None:
        """A text message of ``size`` bytes in ``fragments`` frames, written 1 MiB at a time."""
        sock = self._connection()
        with self._send_lock:
            for index in range(fragments):
                length = size // fragments + (size % fragments if index == fragments - 1 else 0)
                sock.sendall(self.header(OP_TEXT if index == 0 else 0x0, length, fin=index == fragments - 1))
                view = memoryview(CHUNK)
                while length:
                    step = min(length, len(CHUNK))
                    sock.sendall(view[:step])
                    length -= step

    def close(self) -> None:
        self._stopping.set()
        if self._sock is not None:
            with self._send_lock, contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(5.0)
        self._listener.close()


@pytest.fixture
def raw_daemon() -> Iterator[Callable[..., RawDaemon]]:
    made: list[RawDaemon] = []

    def make(**options: Any) -> RawDaemon:
        daemon = RawDaemon(**options)
        made.append(daemon)
        return daemon

    yield make
    for daemon in made:
        daemon.close()


MIB = 1 << 20


@pytest.mark.parametrize(
    ("limit", "size", "fragments"),
    [
        pytest.param(None, 200 * MIB, 1, id="default-64MiB-limit-200MiB-frame"),
        pytest.param(1 * MIB, 50 * MIB, 1, id="1MiB-limit-50MiB-frame"),
        pytest.param(1 * MIB, 50 * MIB, 50, id="1MiB-limit-50MiB-in-50-fragments"),
    ],
)
def test_an_oversized_frame_is_streamed_through_without_holding_it(
    raw_daemon, caplog, limit: int | None, size: int, fragments: int
) -> None:
    daemon = raw_daemon()
    options: dict[str, Any] = {"heartbeat": dc.Heartbeat(enabled=False), "connect_timeout": 5, "strict": True}
    if limit is not None:
        options["max_frame_bytes"] = limit
    with dc.Client(daemon.url, **options) as client:
        pushes = RecordingHandler[dc.SessionMessage]("pushes")
        client.add_push_listener(pushes)
        client.ping()  # warm up every lazy allocation of the path before measuring
        tracemalloc.start()
        try:
            before, _ = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            daemon.stream_text_frame(size, fragments)
            daemon.send_json({"type": "session", "message": {"type": "after_the_giant", "payload": {"ok": True}}})
            pushes.wait_for(1, timeout=60)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        grown = peak - before
        assert grown < 8 * MIB, f"memory grew by {grown / MIB:.1f} MiB while a {size / MIB:.0f} MiB frame passed"
        assert [m.type for m in pushes.items] == ["after_the_giant"]
        assert client.ping().round_trip is not None  # the same connection still answers
        assert client.state is dc.ConnectionState.CONNECTED
        assert daemon.accepted == 1
    expected = limit if limit is not None else 64 * MIB
    assert f"exceeds {expected} bytes" in caplog.text


def test_a_daemon_that_ignores_the_subprotocol_is_accepted_without_logging_the_password(raw_daemon, caplog) -> None:
    """The bearer subprotocol travels as a plain header, so websocket-client never validates
    (and logs) it: a daemon or proxy that does not echo it is accepted (RFC 6455 allows no echo)."""
    daemon = raw_daemon(echo_subprotocol=False)
    client = dc.Client(daemon.url, password=SAFE_PASSWORD, connect_timeout=5)
    try:
        with contextlib.suppress(dc.DaemonClientError):
            client.connect()
    finally:
        client.close()
    assert_secret(client_logs(caplog))
