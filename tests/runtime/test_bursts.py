"""Bursts: frames received together are handled as one run, and the callback thread is woken
once for the run instead of taking the GIL frame by frame; a run ends whenever the reader would
wait for the socket, so nothing received waits for bytes that have not come."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import daemon_client as dc
import daemon_client.transport.websocket as websocket_module
from daemon_client.runtime.dispatch import Dispatcher
from daemon_client.testing import RecordingHandler
from daemon_client.transport.base import TransportClosed, TransportError
from daemon_client.transport.frames import OP_TEXT, FrameReader

from ..raw_server import Peer, RawServers, ws_frame

TIMEOUT = 10.0
SERVER_INFO = b'{"type":"session","message":{"type":"status","payload":{"status":"server_info","serverId":"s"}}}'


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


@pytest.fixture
def raw_servers() -> Iterator[RawServers]:
    servers = RawServers()
    yield servers
    servers.close()


@pytest.fixture
def idle_dispatcher() -> Iterator[Dispatcher]:
    """A dispatcher whose thread ran one callback and waits for the next."""
    dispatcher = Dispatcher()
    started = threading.Event()
    dispatcher.post_in_order(started.set)
    assert started.wait(TIMEOUT)
    _until(lambda: dispatcher._idle, "the dispatcher thread to wait")
    yield dispatcher
    dispatcher.stop()


def test_posts_of_a_burst_wake_the_callback_thread_when_the_burst_ends(idle_dispatcher) -> None:
    ran = threading.Event()
    idle_dispatcher.burst.begin()
    assert idle_dispatcher.post_in_order(ran.set)
    assert idle_dispatcher.post_in_order(lambda: None)
    assert idle_dispatcher._idle  # queued, the thread not woken
    assert idle_dispatcher.pending == 2
    assert not ran.is_set()
    idle_dispatcher.burst.end()
    assert ran.wait(TIMEOUT)
    assert idle_dispatcher.pending == 0


def test_a_with_block_on_the_burst_gate_is_one_burst(idle_dispatcher) -> None:
    ran = threading.Event()
    with idle_dispatcher.burst:
        assert idle_dispatcher.post_in_order(ran.set)
        assert idle_dispatcher._idle  # queued, the thread not woken inside the block
    assert ran.wait(TIMEOUT)  # woken as the block ended


def test_post_numbers_count_up_and_are_zero_once_stopped() -> None:
    dispatcher = Dispatcher(executor="manual")
    first = dispatcher.post_in_order(lambda: None)
    assert dispatcher.post_in_order(lambda: None) == first + 1 == dispatcher.posted
    dispatcher.stop()
    assert dispatcher.post_in_order(lambda: None) == 0


def test_a_post_from_another_thread_during_a_burst_wakes_at_once(idle_dispatcher) -> None:
    ran: list[str] = []
    both = threading.Event()
    idle_dispatcher.burst.begin()
    idle_dispatcher.post_in_order(lambda: ran.append("burst"))
    other = threading.Thread(target=lambda: idle_dispatcher.post_in_order(lambda: (ran.append("other"), both.set())))
    other.start()
    other.join(TIMEOUT)
    assert both.wait(TIMEOUT)  # the burst has not ended: the other thread's post woke the callbacks
    assert ran == ["burst", "other"]  # in posting order, the burst's item taken along
    idle_dispatcher.burst.end()  # nothing due any more: no stray wake-up
    assert idle_dispatcher.pending == 0


def test_ending_a_burst_that_queued_nothing_wakes_nobody(idle_dispatcher) -> None:
    idle_dispatcher.burst.begin()
    idle_dispatcher.burst.end()
    assert idle_dispatcher._idle  # still waiting: no wake-up was given
    ran = threading.Event()
    idle_dispatcher.post_in_order(ran.set)  # outside a burst: at once
    assert ran.wait(TIMEOUT)


def test_stop_during_a_burst_ends_the_callback_thread(idle_dispatcher) -> None:
    ran = threading.Event()
    idle_dispatcher.burst.begin()
    idle_dispatcher.post_in_order(ran.set)
    stopper = threading.Thread(target=idle_dispatcher.stop)  # close() from another thread
    stopper.start()
    stopper.join(TIMEOUT)
    assert not stopper.is_alive()
    assert ran.is_set()  # what was queued before the stop ran


def test_the_frame_reader_calls_its_wait_hooks_around_each_socket_read() -> None:
    left, right = socket.socketpair()
    try:
        calls: list[str] = []
        reader = FrameReader(left, None)
        reader.wait_hooks = (lambda: calls.append("before"), lambda: calls.append("after"))
        right.sendall(ws_frame(b"one", OP_TEXT) + ws_frame(b"two", OP_TEXT))
        assert reader.next_message() == (OP_TEXT, b"one")
        assert calls == ["before", "after"]
        assert reader.next_message() == (OP_TEXT, b"two")  # already buffered: no read, no hook
        assert calls == ["before", "after"]
        right.sendall(ws_frame(b"three", OP_TEXT))
        assert reader.next_message() == (OP_TEXT, b"three")
        assert calls == ["before", "after", "before", "after"]
        right.close()
        with pytest.raises(TransportClosed):
            reader.next_message()
        assert calls[-1] == "before"  # no "after" for a read that ended the stream
    finally:
        left.close()
        right.close()


def _push(number: int) -> bytes:
    message = {"type": "session", "message": {"type": "bench_push", "payload": {"n": number}}}
    return ws_frame(json.dumps(message).encode(), OP_TEXT)


def _pushes_heard(raw_servers: RawServers, sent: bytes, expected: int, **options: Any) -> list[int]:
    """A daemon that answers the hello with ``server_info`` and ``sent`` in one write, then
    stalls (the connection stays open): the numbers of the first ``expected`` pushes a client
    with ``options`` delivers to a push listener (``AssertionError`` if they do not come)."""
    stall = threading.Event()

    def script(peer: Peer) -> None:
        peer.upgrade()
        peer.reader().next_message()  # the hello
        peer.send(ws_frame(SERVER_INFO, OP_TEXT) + sent)  # one write: read at once
        stall.wait(TIMEOUT)

    server = raw_servers(script)
    off = {"heartbeat": dc.Heartbeat(enabled=False), "reconnect": dc.ReconnectPolicy(enabled=False)}
    client = dc.Client(server.url, **off, **options)
    try:
        heard: RecordingHandler[dc.SessionMessage] = RecordingHandler("pushes")
        client.add_push_listener(heard, ["bench_push"])
        client.connect(timeout=TIMEOUT)
        heard.wait_for(expected, timeout=TIMEOUT)
        return [message.payload["n"] for message in heard.items]
    finally:
        stall.set()
        client.close()


def test_pushes_before_an_incomplete_frame_reach_their_callbacks(raw_servers: RawServers) -> None:
    """Ten pushes and half of an eleventh, then a stall: the ten are delivered while the
    reader waits for the rest."""
    sent = b"".join(_push(n) for n in range(10)) + _push(10)[:12]
    assert _pushes_heard(raw_servers, sent, 10) == list(range(10))


def test_a_long_burst_reaches_the_callbacks_in_order(raw_servers: RawServers) -> None:
    """More frames in one write than the reader handles before handing over (HANDOFF_FRAMES)."""
    sent = b"".join(_push(n) for n in range(1_000))
    assert _pushes_heard(raw_servers, sent, 1_000) == list(range(1_000))


def test_a_relay_channel_hands_the_wait_hooks_to_its_socket() -> None:
    pytest.importorskip("nacl")
    from daemon_client.transport.relay.channel import RelayTransport
    from daemon_client.transport.relay.crypto import KeyPair
    from daemon_client.transport.relay.factory import RelayTransportFactory
    from daemon_client.transport.websocket import WebSocketTransport

    class Base(WebSocketTransport):
        hooks: tuple[Callable[[], None], Callable[[], None]] | None = None

        def set_wait_hooks(self, before: Callable[[], None], after: Callable[[], None]) -> bool:
            self.hooks = (before, after)
            return True

    base = Base()
    daemon_key = KeyPair.generate().public_key
    factory = RelayTransportFactory(lambda: base, daemon_key)
    channel = RelayTransport(base, daemon_key, factory, factory._log)
    before, after = (lambda: None), (lambda: None)
    assert channel.set_wait_hooks(before, after)
    assert base.hooks == (before, after)
    plain = RelayTransport(object(), daemon_key, factory, factory._log)  # type: ignore[arg-type]
    assert not plain.set_wait_hooks(before, after)  # a socket without hooks: nothing installed
    assert not WebSocketTransport().set_wait_hooks(before, after)  # not connected: nothing to install on


def test_a_transport_whose_hooks_are_not_installed_is_read_frame_by_frame(raw_servers: RawServers) -> None:
    """A transport with a ``set_wait_hooks`` that installs nothing (a custom one, or one not
    connected) gets no bursts: every push is delivered while the reader waits, even past
    HANDOFF_FRAMES frames."""
    from daemon_client.transport.websocket import WebSocketTransport

    class NoHooks(WebSocketTransport):
        def set_wait_hooks(self, before: Callable[[], None], after: Callable[[], None]) -> bool:
            return False

    sent = b"".join(_push(n) for n in range(300))
    assert _pushes_heard(raw_servers, sent, 300, transport_factory=NoHooks) == list(range(300))


def test_a_transport_whose_hooks_fail_is_read_frame_by_frame(raw_servers: RawServers, caplog) -> None:
    from daemon_client.transport.websocket import WebSocketTransport

    class BrokenHooks(WebSocketTransport):
        def set_wait_hooks(self, before: Callable[[], None], after: Callable[[], None]) -> bool:
            raise RuntimeError("broken")

    sent = b"".join(_push(n) for n in range(300))
    assert _pushes_heard(raw_servers, sent, 300, transport_factory=BrokenHooks) == list(range(300))
    assert "set_wait_hooks failed; reading frame by frame" in caplog.text


def test_pushes_received_before_a_protocol_violation_do_not_wait_for_the_peer_to_close(
    raw_servers: RawServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three pushes and then a frame with a reserved bit set, in one write. The reader handles
    the pushes inside a burst, then fails the connection: it sends a close frame and lingers
    until the peer closes (``_LINGER_SECONDS``, made long here, as for a peer slow to close).
    The burst ends before that wait: the three are delivered while the peer stays open."""
    monkeypatch.setattr(websocket_module, "_LINGER_SECONDS", 60.0)
    go = threading.Event()
    release = threading.Event()

    def script(peer: Peer) -> None:
        peer.upgrade()
        peer.reader().next_message()  # the hello
        peer.send(ws_frame(SERVER_INFO, OP_TEXT))
        go.wait(TIMEOUT)
        bad = ws_frame(b"x", OP_TEXT, rsv=4)  # RSV1 set: a protocol violation
        peer.send(b"".join(_push(n) for n in range(3)) + bad)  # one write: read at once
        release.wait(2 * TIMEOUT)  # the peer does not close yet

    server = raw_servers(script)
    off = {"heartbeat": dc.Heartbeat(enabled=False), "reconnect": dc.ReconnectPolicy(enabled=False)}
    client = dc.Client(server.url, **off)
    try:
        heard: RecordingHandler[dc.SessionMessage] = RecordingHandler("pushes")
        client.add_push_listener(heard, ["bench_push"])
        client.connect(timeout=TIMEOUT)
        assert client.flush_callbacks(TIMEOUT)
        dispatcher = client._dispatcher
        _until(lambda: dispatcher._idle, "the callback thread to wait")
        go.set()
        heard.wait_for(3, timeout=TIMEOUT)
        assert [m.payload["n"] for m in heard.items] == [0, 1, 2]
    finally:
        release.set()
        client.close()


def test_a_relay_frame_that_breaks_the_channel_ends_the_burst_before_closing() -> None:
    """The relay channel closes its socket on the reader thread after a plaintext frame (a write
    that may wait): the reader's wait hook runs first."""
    pytest.importorskip("nacl")
    from daemon_client.transport.relay.channel import RelayTransport
    from daemon_client.transport.relay.crypto import FrameBox, KeyPair
    from daemon_client.transport.relay.factory import RelayTransportFactory

    calls: list[str] = []

    class Base:
        def set_wait_hooks(self, before: Callable[[], None], after: Callable[[], None]) -> bool:
            return True

        def recv(self) -> str:
            return '{"type":"session","message":{"type":"plain"}}'

        def close(self, code: int = 1000, reason: str = "") -> None:
            calls.append(f"close {code}")

        def abort(self) -> None:
            calls.append("abort")

    daemon_key = KeyPair.generate().public_key
    factory = RelayTransportFactory(Base, daemon_key)  # type: ignore[arg-type]
    channel = RelayTransport(Base(), daemon_key, factory, factory._log)  # type: ignore[arg-type]
    channel._box = FrameBox(bytes(32))  # the end-to-end handshake done
    assert channel.set_wait_hooks(lambda: calls.append("before"), lambda: None)
    with pytest.raises(TransportError, match="plaintext"):
        channel.recv()
    assert calls == ["before", "close 1011", "abort"]
