"""The connection supervisor's error paths: a failing transport factory or transport, a failing
hook or binary router, stray frames after the handshake, and the back-off reset."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.state import ConnectionState
from daemon_client.testing import RecordingHandler
from daemon_client.transport.base import ConnectParams

URL = "ws://no-daemon.test/ws"
StateLog = RecordingHandler[tuple[ConnectionState, ConnectionState, str]]


class BrokenTransport:
    """A transport whose ``connect`` raises ``error``; it never carries a frame."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.aborted = False

    def connect(self, params: ConnectParams) -> None:
        raise self.error

    def send_text(self, text: str) -> None:
        raise AssertionError("never connected")

    def send_binary(self, data: bytes) -> None:
        raise AssertionError("never connected")

    def recv(self) -> str | bytes:
        raise AssertionError("never connected")

    def abort(self) -> None:
        self.aborted = True

    def close(self, code: int = 1000, reason: str = "") -> None:
        pass

    @property
    def selected_subprotocol(self) -> str | None:
        return None


def _connect_with(transport_factory: Any) -> BaseException:
    client = dc.Client(URL, transport_factory=transport_factory, strict=True, connect_timeout=5.0)
    try:
        with pytest.raises(dc.DaemonClientError) as failure:
            client.connect()
        assert client.state is ConnectionState.DISCONNECTED
        return failure.value
    finally:
        client.close()


def _states(client: dc.Client) -> StateLog:
    log: StateLog = RecordingHandler("states")
    client.on_state_change(log)
    return log


def _settle(client: dc.Client) -> None:
    """Every frame the fake sent before this call has been read."""
    client.ping()


def test_a_transport_factory_that_raises_fails_the_connect_naming_the_error() -> None:
    def factory() -> Any:
        raise RuntimeError("no sockets today")

    error = _connect_with(factory)
    assert isinstance(error, dc.ConnectionLost)
    assert str(error) == f"Cannot connect to {URL}: transport_factory failed: RuntimeError('no sockets today')"


def test_a_transport_connect_that_times_out_is_a_connect_timeout() -> None:
    transport = BrokenTransport(TimeoutError("slow"))
    error = _connect_with(lambda: transport)
    assert isinstance(error, dc.ConnectTimeout)
    assert str(error) == f"no WebSocket connection to {URL} within 5 s"
    assert transport.aborted


def test_a_defect_in_the_transport_fails_connect_instead_of_stranding_it(caplog) -> None:
    error = _connect_with(lambda: BrokenTransport(RuntimeError("transport bug")))
    assert isinstance(error, dc.ConnectionLost)
    assert "internal error in the reader thread: RuntimeError('transport bug')" in str(error)
    failed = [r for r in caplog.records if r.getMessage().endswith(": the reader thread failed")]
    assert failed
    assert failed[0].levelno == logging.ERROR
    assert failed[0].exc_info is not None


def test_failing_restore_and_disconnect_hooks_are_logged_and_the_connection_carries_on(
    fakes, make_client, caplog
) -> None:
    fake = fakes()
    client = make_client(fake)
    calls: list[str] = []

    def restore(kind: dc.HostKind, reconnected: bool) -> None:
        calls.append(f"restore {reconnected}")
        raise RuntimeError("restore bug")

    def disconnect() -> None:
        calls.append("disconnect")
        raise RuntimeError("disconnect bug")

    client._connection.add_hooks(restore, disconnect=disconnect)
    states = _states(client)
    client.connect()
    fake.drop_connections()
    states.wait_for(2, predicate=lambda change: change[1] is ConnectionState.CONNECTED, timeout=10)
    assert calls == ["restore False", "disconnect", "restore True"]
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert "restoring observations failed" in messages
    assert "disconnect hook failed" in messages
    _settle(client)


def test_a_hello_rejected_after_the_handshake_is_ignored(fakes, make_client, caplog) -> None:
    fake = fakes()
    client = make_client(fake)
    client.connect()
    fake.send_raw('{"type":"hello.rejected","reason":"too late"}')
    _settle(client)
    assert client.state is ConnectionState.CONNECTED
    assert any(
        r.levelno == logging.WARNING and r.getMessage() == "ignored a hello.rejected after the handshake: too late"
        for r in caplog.records
    )


def test_a_failing_binary_router_is_logged_and_the_reader_goes_on(fakes, make_client, caplog) -> None:
    fake = fakes()
    client = make_client(fake)
    client.connect()
    routed: list[bytes] = []

    def router(data: bytes) -> bool:
        routed.append(data)
        raise RuntimeError("router bug")

    client._connection.set_binary_router(router)
    fake.send_raw(b"\x01\x02\x03", binary=True)
    fake.send_raw(b"\x04", binary=True)
    _settle(client)
    assert routed == [b"\x01\x02\x03", b"\x04"]
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == [
        "internal error while routing a binary frame of 3 bytes",
        "internal error while routing a binary frame of 1 bytes",
    ]
    # a frame the router took (here: failed on) is not reported as unsubscribed
    assert not [r for r in caplog.records if "nobody subscribed" in r.getMessage()]
    assert client.state is ConnectionState.CONNECTED


def test_binary_frames_the_router_declines_are_reported_once_per_connection(fakes, make_client, caplog) -> None:
    fake = fakes()
    client = make_client(fake)
    client.connect()
    client._connection.set_binary_router(lambda data: False)
    for _ in range(3):
        fake.send_raw(b"\x00\x01", binary=True)
    _settle(client)
    declined = [r.getMessage() for r in caplog.records if "nobody subscribed" in r.getMessage()]
    assert len(declined) == 1
    assert declined[0].endswith("(binary frame of 2 bytes)")


@pytest.mark.parametrize(("stable_after", "second_delay"), [(0.0, "0.01"), (1000.0, "0.02")])
def test_the_back_off_restarts_after_a_stable_connection(fakes, make_client, stable_after, second_delay) -> None:
    fake = fakes()
    policy = dc.ReconnectPolicy(base_delay=0.01, max_delay=1.0, jitter=0.0, stable_after=stable_after)
    client = make_client(fake, reconnect=policy)
    states = _states(client)
    client.connect()
    for drops in (1, 2):
        fake.drop_connections()
        states.wait_for(drops + 1, predicate=lambda change: change[1] is ConnectionState.CONNECTED, timeout=10)
    waits = [reason for _old, new, reason in states.items if new is ConnectionState.DISCONNECTED]
    assert [wait.rsplit("reconnecting in ", 1)[1] for wait in waits] == ["0.01 s", f"{second_delay} s"]


class HeldTransport(BrokenTransport):
    """A transport whose ``connect`` returns normally once ``release`` is set (it never reads)."""

    def __init__(self, release: threading.Event) -> None:
        super().__init__(RuntimeError("unused"))
        self.release = release
        self.connecting = threading.Event()

    def connect(self, params: ConnectParams) -> None:
        self.connecting.set()
        assert self.release.wait(10)

    def abort(self) -> None:
        self.aborted = True
        self.release.set()


def test_a_connect_that_returns_after_the_handshake_deadline_reports_the_timeout() -> None:
    """The deadline aborts the socket while ``connect`` is in progress: its outcome is the timeout."""
    transport = HeldTransport(threading.Event())  # released by the abort at the deadline
    client = dc.Client(URL, transport_factory=lambda: transport, strict=True, connect_timeout=0.1)
    try:
        with pytest.raises(dc.ConnectTimeout, match=r"^no server_info from ws://no-daemon\.test/ws within 0\.1 s$"):
            client.connect()
        assert transport.aborted
    finally:
        client.close()


@pytest.mark.parametrize("where", ["factory", "connect"])
def test_close_during_the_connect_ends_it_with_client_closed(where: str) -> None:
    inside = threading.Event()

    def made() -> HeldTransport:
        wake = client._connection._link.wake  # set by close() once it is closing
        if where == "factory":
            inside.set()
            assert wake.wait(10)
            return HeldTransport(threading.Event())
        transport = HeldTransport(wake)
        inside.set()
        return transport

    client = dc.Client(URL, transport_factory=made, strict=True, connect_timeout=5.0)
    outcome: list[BaseException] = []

    def connect() -> None:
        try:
            client.connect()
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=connect, name="test-connect")
    thread.start()
    try:
        assert inside.wait(5)
        client.close()
    finally:
        thread.join(10)
    assert len(outcome) == 1
    assert isinstance(outcome[0], dc.ClientClosed)
    assert client.state is ConnectionState.DISPOSED


class BinaryRefusingTransport:
    """Wraps a memory transport; binary frames are refused (``FrameRejected(binary=True)``), as a
    transport that does not deliver them would."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def recv(self) -> str | bytes:
        from daemon_client.transport.base import FrameRejected

        data = self._inner.recv()
        if isinstance(data, bytes):
            raise FrameRejected(f"binary frame of {len(data)} bytes skipped", binary=True, data=data)
        return data


def test_binary_frames_a_transport_refuses_are_reported_once_per_connection(fakes, caplog) -> None:
    fake = fakes()
    factory = fake.transport_factory
    client = dc.Client(URL, transport_factory=lambda: BinaryRefusingTransport(factory()), strict=True)
    try:
        client.connect()
        for _ in range(3):
            fake.send_raw(b"\x00\x01\x02", binary=True)
        _settle(client)
        skipped = [
            r.getMessage() for r in caplog.records if "skipping binary frames on this connection" in r.getMessage()
        ]
        assert len(skipped) == 1
        assert skipped[0].endswith("(binary frame of 3 bytes skipped)")
        assert client.state is ConnectionState.CONNECTED
    finally:
        client.close()


class StuckWriteTransport(BinaryRefusingTransport):
    """Wraps a memory transport; writing a frame that mentions ``stuck_request`` blocks until
    ``release`` is set, whatever happens to the socket (a write the abort cannot end)."""

    def __init__(self, inner: Any, release: threading.Event, stuck: threading.Event) -> None:
        super().__init__(inner)
        self.release = release
        self.stuck = stuck

    def send_text(self, text: str) -> None:
        if "stuck_request" in text:
            self.stuck.set()
            assert self.release.wait(10)
        self._inner.send_text(text)


def test_a_writer_that_outlives_the_abort_is_reported(fakes, caplog, monkeypatch) -> None:
    from daemon_client.runtime import supervisor

    monkeypatch.setattr(supervisor, "CLOSE_GRACE", 0.05)
    fake = fakes()
    factory = fake.transport_factory
    release, stuck = threading.Event(), threading.Event()
    client = dc.Client(
        URL,
        transport_factory=lambda: StuckWriteTransport(factory(), release, stuck),
        strict=True,
        reconnect=dc.ReconnectPolicy(enabled=False),
    )
    states = _states(client)
    try:
        client.connect()
        pending = client.request_async({"type": "stuck_request"}, timeout=30)
        assert stuck.wait(5)
        fake.drop_connections()
        states.wait_for(1, predicate=lambda change: change[1] is ConnectionState.DISCONNECTED, timeout=10)
        assert any(
            r.levelno == logging.WARNING
            and r.getMessage().endswith(": the writer thread did not end after the socket was aborted")
            for r in caplog.records
        )
        assert isinstance(pending.exception(5), dc.ConnectionLost)
    finally:
        release.set()
        client.close()


def test_a_defect_while_handling_a_frame_is_logged_and_the_reader_goes_on(fakes, make_client, caplog) -> None:
    fake = fakes()
    client = make_client(fake)
    client.connect()

    def router(message: Any) -> None:
        raise RuntimeError("router bug")

    client._pushes.set_router("custom_push", router)
    fake.push("custom_push", {"n": 1})
    _settle(client)
    failed = [r for r in caplog.records if r.getMessage().startswith("internal error while handling a frame: ")]
    assert len(failed) == 1
    assert '"custom_push"' in failed[0].getMessage()
    assert failed[0].exc_info is not None
    assert client.state is ConnectionState.CONNECTED
