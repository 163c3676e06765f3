"""``RelayTransport`` over a scripted base transport: the handshake and frame rules of
protocol-relay.md 5-9 that the fake relay does not produce (a refused frame or a stray frame
during the handshake, a resend that fails, misuse before the channel is open)."""

from __future__ import annotations

import base64
import json
import queue
import threading

import pytest

pytest.importorskip("nacl")

import daemon_client as dc
from daemon_client.transport.base import (
    ConnectParams,
    FrameRejected,
    TransportClosed,
    TransportError,
    TransportFailed,
)
from daemon_client.transport.relay.channel import RelayTransport, message_type
from daemon_client.transport.relay.crypto import FrameBox, KeyPair, shared_key
from daemon_client.transport.relay.factory import RelayTransportFactory

DAEMON = KeyPair.from_secret(bytes.fromhex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"))
PARAMS = ConnectParams(url="ws://relay.test/ws?serverId=srv&role=client", timeout=10.0)
READY = '{"type":"e2ee_ready"}'


class ScriptedBase:
    """A base transport whose inbound frames (or exceptions) the test queues; it records sends."""

    def __init__(self, fail_sends_after: int | None = None) -> None:
        self.inbound: queue.Queue[str | bytes | BaseException] = queue.Queue()
        self.sent: list[str] = []
        self.send_attempts = 0
        self.fail_sends_after = fail_sends_after
        self.sent_event = threading.Condition()
        self.aborted = threading.Event()
        self.closes: list[tuple[int, str]] = []
        self.connected: ConnectParams | None = None

    def connect(self, params: ConnectParams) -> None:
        self.connected = params

    def send_text(self, text: str) -> None:
        with self.sent_event:
            self.send_attempts += 1
            self.sent_event.notify_all()
            if self.fail_sends_after is not None and self.send_attempts > self.fail_sends_after:
                raise TransportClosed(None)
            self.sent.append(text)

    def send_binary(self, data: bytes) -> None:
        raise AssertionError("the relay hop carries text frames only")

    def recv(self) -> str | bytes:
        while not self.aborted.is_set():
            try:
                item = self.inbound.get(timeout=0.05)
            except queue.Empty:
                continue
            if isinstance(item, BaseException):
                raise item
            return item
        raise TransportClosed(None)

    def abort(self) -> None:
        self.aborted.set()

    def close(self, code: int = 1000, reason: str = "") -> None:
        self.closes.append((code, reason))

    @property
    def selected_subprotocol(self) -> str | None:
        return "ignored"

    def wait_for_attempts(self, count: int) -> None:
        with self.sent_event:
            assert self.sent_event.wait_for(lambda: self.send_attempts >= count, timeout=5)


def _channel(base: ScriptedBase, hello_interval: float = 1.0) -> tuple[RelayTransport, RelayTransportFactory]:
    factory = RelayTransportFactory(lambda: base, DAEMON.public_key, hello_interval=hello_interval)
    return factory(), factory


def _daemon_box(base: ScriptedBase) -> FrameBox:
    """The daemon's end of the channel, keyed from the client's hello."""
    hello = json.loads(base.sent[0])
    assert hello["type"] == "e2ee_hello"
    return FrameBox(shared_key(base64.b64decode(hello["key"]), DAEMON.secret_key))


def _open(base: ScriptedBase) -> tuple[RelayTransport, RelayTransportFactory, FrameBox]:
    channel, factory = _channel(base)
    base.inbound.put(READY)
    channel.connect(PARAMS)
    return channel, factory, _daemon_box(base)


def test_message_type_reads_only_json_objects_with_a_string_type() -> None:
    assert message_type('{"type":"e2ee_ready"}') == "e2ee_ready"
    assert message_type("{not json") is None
    assert message_type('["type"]') is None
    assert message_type('{"type": 3}') is None


def test_frames_cannot_travel_before_the_channel_is_open() -> None:
    channel, _ = _channel(ScriptedBase())
    assert repr(channel) == "<RelayTransport not open>"
    for attempt in (lambda: channel.send_text("{}"), lambda: channel.send_binary(b"\x00"), channel.recv):
        with pytest.raises(TransportError, match="the end-to-end channel is not open"):
            attempt()


def test_the_relay_gets_no_headers_and_no_subprotocol_is_selected() -> None:
    base = ScriptedBase()
    channel, factory, _ = _open(base)
    assert base.connected is not None
    assert (dict(base.connected.headers), tuple(base.connected.subprotocols)) == ({}, ())
    assert channel.selected_subprotocol is None
    assert repr(channel) == "<RelayTransport open>"
    assert factory.stats.handshakes == 1


def test_refused_and_unrelated_frames_during_the_handshake_are_ignored() -> None:
    base = ScriptedBase()
    channel, factory = _channel(base)
    for item in (FrameRejected("binary frame"), '{"type":"e2ee_hello","key":"x"}', "not json", b"\x01", READY):
        base.inbound.put(item)
    channel.connect(PARAMS)
    assert base.inbound.empty()
    assert (factory.stats.handshakes, factory.stats.handshake_failures) == (1, 0)


def test_a_hello_resend_that_fails_stops_resending_and_the_handshake_can_still_complete() -> None:
    base = ScriptedBase(fail_sends_after=1)
    channel, factory = _channel(base, hello_interval=0.01)
    connecting = threading.Thread(target=channel.connect, args=(PARAMS,), name="test-relay-connect")
    connecting.start()
    base.wait_for_attempts(2)  # the first resend failed: the resender gives up
    base.inbound.put(READY)
    connecting.join(5)
    assert not connecting.is_alive()
    assert base.send_attempts == 2
    assert len(base.sent) == 1
    assert factory.stats.handshakes == 1


def test_an_unusable_daemon_key_fails_the_connect_with_a_pairing_error() -> None:
    base = ScriptedBase()
    factory = RelayTransportFactory(lambda: base, DAEMON.public_key)
    channel = RelayTransport(base, bytes(32), factory, factory._log)
    with pytest.raises(TransportFailed) as failure:
        channel.connect(PARAMS)
    assert isinstance(failure.value.error, dc.PairingError)
    assert "daemon key is unusable" in str(failure.value.error)
    assert "paseo daemon pair" in str(failure.value.error)
    assert base.aborted.is_set()
    assert base.sent == []  # no hello went out


def test_messages_are_sealed_for_the_daemon_in_text_frames() -> None:
    base = ScriptedBase()
    channel, _, daemon = _open(base)
    channel.send_text('{"type":"ping"}')
    channel.send_binary(b"\x00\xffkeys")
    assert daemon.open(base.sent[1]) == b'{"type":"ping"}'
    assert daemon.open(base.sent[2]) == b"\x00\xffkeys"


def test_a_binary_frame_from_the_relay_is_refused_and_the_channel_reads_on() -> None:
    base = ScriptedBase()
    channel, factory, daemon = _open(base)
    base.inbound.put(b"\x01\x02\x03")
    with pytest.raises(FrameRejected, match="binary frame of 3 bytes on the relay ignored") as refused:
        channel.recv()
    assert refused.value.preview == b"\x01\x02\x03"
    base.inbound.put(daemon.seal(b'{"type":"pong"}'))
    assert channel.recv() == '{"type":"pong"}'
    assert factory.stats.rejected_frames == 0


def test_no_ready_within_the_timeout_ends_the_socket_with_a_timeout(caplog) -> None:
    base = ScriptedBase()
    channel, factory = _channel(base)
    base.inbound.put('{"type":"something_else"}')
    with pytest.raises(TimeoutError, match=r"no e2ee_ready from the daemon within 0\.0\d* s"):
        channel.connect(ConnectParams(url=PARAMS.url, timeout=0.05))
    assert base.aborted.is_set()
    assert (factory.stats.handshakes, factory.stats.handshake_failures) == (0, 1)
    assert any("no answer from the daemon through the relay" in r.getMessage() for r in caplog.records)


def test_the_factory_refuses_a_bad_key_or_interval_and_its_repr_names_the_base() -> None:
    with pytest.raises(ValueError, match="daemon key is unusable"):
        RelayTransportFactory(ScriptedBase, bytes(32))
    with pytest.raises(ValueError, match="hello_interval must be > 0"):
        RelayTransportFactory(ScriptedBase, DAEMON.public_key, hello_interval=0)
    factory = RelayTransportFactory(ScriptedBase, DAEMON.public_key)
    assert repr(factory) == f"<RelayTransportFactory over {ScriptedBase!r}>"
    assert DAEMON.public_key.hex() not in repr(factory)
