"""The writer of one socket, used directly: the queue bound, binary frames, control replies
after the end, joins, and the stall watchdog across consecutive writes."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator

import pytest

import daemon_client as dc
from daemon_client.runtime.timers import TimerThread
from daemon_client.runtime.writer import Writer
from daemon_client.transport.base import ConnectParams

LOG = logging.getLogger("daemon_client.test.writer")


class GatedTransport:
    """Records what is written; ``block_on`` names a text frame whose write waits for ``gate``."""

    def __init__(self, block_on: str | None = None) -> None:
        self.written: list[object] = []
        self.block_on = block_on
        self.gate = threading.Event()
        self.blocked = threading.Event()
        self.aborted = threading.Event()

    def connect(self, params: ConnectParams) -> None:
        pass

    def send_text(self, text: str) -> None:
        if text == self.block_on:
            self.blocked.set()
            self.gate.wait(10)
        self.written.append(text)

    def send_binary(self, data: bytes) -> None:
        self.written.append(data)

    def recv(self) -> str | bytes:
        raise AssertionError("not read")

    def abort(self) -> None:
        self.aborted.set()
        self.gate.set()

    def close(self, code: int = 1000, reason: str = "") -> None:
        self.written.append((code, reason))

    @property
    def selected_subprotocol(self) -> str | None:
        return None


@pytest.fixture
def timers() -> Iterator[TimerThread]:
    thread = TimerThread("test-writer-timers")
    yield thread
    thread.stop()


def _writer(transport: GatedTransport, timers: TimerThread, **options: object) -> Writer:
    options.setdefault("stall_after", None)
    options.setdefault("on_stall", lambda seconds: None)
    return Writer(transport, name="test-writer", timers=timers, logger=LOG, **options)  # type: ignore[arg-type]


def test_the_queue_refuses_frames_beyond_its_bound_but_always_takes_one(timers) -> None:
    writer = _writer(GatedTransport(), timers, max_queued=10)
    writer.send("a" * 8)
    with pytest.raises(dc.ConnectionLost, match="the daemon is not reading: 8 characters already wait to be sent"):
        writer.send("b" * 5)
    assert writer.queued_chars == 8
    alone = _writer(GatedTransport(), timers, max_queued=10)
    alone.send("c" * 50)  # a frame larger than the bound is accepted into an empty queue
    assert alone.queued_chars == 50


def test_frames_close_and_control_replies_are_written_in_order_and_nothing_after_the_end(timers) -> None:
    transport = GatedTransport()
    writer = _writer(transport, timers)
    assert writer.join(0)  # never started
    joined_itself: list[bool] = []
    writer.send("first")
    writer.send(b"\x00\x01")
    writer.call(lambda: joined_itself.append(writer.join(5)))
    writer.start()
    writer.finish((1000, "bye"), flush=True)
    assert writer.join(5)
    assert transport.written == ["first", b"\x00\x01", (1000, "bye")]
    assert joined_itself == [True]  # the writer thread does not wait for itself
    writer.call(lambda: transport.written.append("late"))  # dropped: the writer has ended
    with pytest.raises(dc.ConnectionLost, match="Connection lost"):
        writer.send("late")
    assert transport.written == ["first", b"\x00\x01", (1000, "bye")]
    assert writer.queued_chars == 0


def test_a_write_that_stalls_after_a_quick_one_is_reported_once(timers) -> None:
    transport = GatedTransport(block_on="stuck")
    stalls: list[float] = []
    stalled = threading.Event()

    def on_stall(seconds: float) -> None:
        stalls.append(seconds)
        stalled.set()
        transport.abort()

    writer = _writer(transport, timers, stall_after=0.05, on_stall=on_stall)
    writer.send("quick")
    writer.send("stuck")
    writer.start()
    try:
        assert transport.blocked.wait(5)
        assert stalled.wait(5)
    finally:
        writer.finish()
        transport.gate.set()
        assert writer.join(5)
    assert len(stalls) == 1
    assert transport.written[0] == "quick"


class FailingTransport(GatedTransport):
    def send_text(self, text: str) -> None:
        raise OSError("broken pipe")


def test_a_failed_write_aborts_the_socket_and_ends_the_writer(timers, caplog) -> None:
    transport = FailingTransport()
    writer = _writer(transport, timers, stall_after=60.0)
    writer.send("doomed")
    writer.send("never")
    writer.start()
    assert transport.aborted.wait(5)
    assert writer.join(5)
    assert transport.written == []
    assert writer.queued_chars == 0
    assert any(r.getMessage() == "write failed: broken pipe" for r in caplog.records)
    assert timers.pending == 0  # the stall watchdog went with the writer


def test_joining_while_another_thread_starts_the_writer_waits_for_it(timers) -> None:
    """close() joins the writer from its own thread while the reader may still be starting it:
    the thread has its ident before ``Thread.start()`` returns, and joining it then raised
    ``RuntimeError: cannot join thread before it is started``."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    errors: list[BaseException] = []
    try:
        for _ in range(5000):
            writer = _writer(GatedTransport(), timers)
            starter = threading.Thread(target=writer.start, name="starter")
            starter.start()
            try:
                while starter.is_alive():
                    writer.join(0)
            except RuntimeError as exc:
                errors.append(exc)
            starter.join(5)
            writer.finish(flush=True)
            assert writer.join(5)
    finally:
        sys.setswitchinterval(previous)
    assert errors == []


def test_a_write_that_ends_just_after_finish_still_lets_the_close_frame_out(timers) -> None:
    """Regression: ``close()`` took a write that was only finishing (its frame out, the writer's
    bookkeeping not yet done) for a stuck one and aborted the socket instead of closing it."""
    transport = GatedTransport(block_on="last")
    writer = _writer(transport, timers)
    writer.start()
    writer.send("last")
    assert transport.blocked.wait(5)
    assert writer.finish((1000, "bye"), flush=True) is False  # a write is in progress
    threading.Timer(0.01, transport.gate.set).start()
    assert writer.wait_current_write(5)
    assert writer.join(5)
    assert transport.written == ["last", (1000, "bye")]
    assert not transport.aborted.is_set()


def test_waiting_for_a_stuck_write_ends_at_its_timeout(timers) -> None:
    transport = GatedTransport(block_on="stuck")
    writer = _writer(transport, timers)
    writer.start()
    writer.send("stuck")
    assert transport.blocked.wait(5)
    writer.finish((1000, "bye"))
    assert writer.wait_current_write(0.01) is False
    assert writer.wait_current_write(0) is False
    transport.abort()
    assert writer.join(5)
    assert writer.wait_current_write(0)  # nothing in progress once it ended
