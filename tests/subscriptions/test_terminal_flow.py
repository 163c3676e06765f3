"""Terminal output under the callback queue's flow control: Output frames are admitted one by
one like pushes; over the limit they are skipped for ``on_output`` (counted, one WARNING), while
``output()``/``expect()`` still get everything; the accounting is released when the runs are
delivered, or discarded by an executor that refuses them."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon

CWD = "/home/dev/projects/demo"
BOUND = 10.0


def _frame(slot: int | None, n: int) -> bytes:
    assert slot is not None
    return bytes((1, slot)) + b"frame %04d;" % n


class _StuckCallback:
    """An ``on_output`` that records what it gets and is stuck in its calls until released."""

    def __init__(self) -> None:
        self.got: list[str] = []
        self.entered = threading.Event()
        self.gate = threading.Event()

    def __call__(self, text: str) -> None:
        self.got.append(text)
        self.entered.set()
        assert self.gate.wait(BOUND)


def _all_output(stream: dc.TerminalStream) -> str:
    return "".join(stream.output(timeout=0))


@pytest.mark.parametrize("host", ["capable", "broadcast"])
def test_output_over_the_limit_is_skipped_for_on_output_and_resumes_after_draining(
    fakes: Callable[..., FakeDaemon], make_client: Callable[..., dc.Client], host: str,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    caplog.set_level(logging.INFO, logger="daemon_client.subscriptions.terminal_streams")
    fake = fakes(host)
    client = make_client(fake, flow_control=dc.FlowControl(max_events=20))
    client.connect()
    terminal = client.terminals.create(cwd=CWD)
    on_output = _StuckCallback()  # the callback thread is stuck in it while output floods in
    got, entered, gate = on_output.got, on_output.entered, on_output.gate
    stream = terminal.stream(on_output=on_output, buffer_limit=10**7)
    fake.send_raw(_frame(stream.slot, 0), binary=True)
    assert entered.wait(BOUND)
    for n in range(1, 201):
        fake.send_raw(_frame(stream.slot, n), binary=True)
    client.ping()  # answered after the 200 frames: all were routed
    assert stream.skipped > 0
    gate.set()
    assert client.flush_callbacks(BOUND)
    delivered = "".join(got)
    everything = _all_output(stream)  # the pull side got every frame
    assert everything.endswith("frame 0200;")
    assert len(delivered) + stream.skipped == len(everything)  # ASCII: one byte per character
    assert everything.startswith(delivered)  # on_output got the oldest; the newest were skipped
    assert client.stats().queued_events == 0  # every admitted frame was counted done
    assert client.stats().queued_bytes == 0
    lagging = [r for r in caplog.records if "is lagging" in r.getMessage()]
    assert len(lagging) == 1
    assert lagging[0].levelno == logging.WARNING

    skipped = stream.skipped
    fake.send_raw(_frame(stream.slot, 201), binary=True)  # the backlog drained: delivered again
    client.ping()
    assert client.flush_callbacks(BOUND)
    assert got[-1].endswith("frame 0201;")
    assert stream.skipped == skipped
    recovered = [r for r in caplog.records if "recovered after lagging" in r.getMessage()]
    assert [r.getMessage().split(": ", 1)[1] for r in recovered] == [f"{skipped} bytes of output skipped for on_output"]
    assert _all_output(stream) == "frame 0201;"
    stream.release()


def test_without_limits_nothing_is_skipped(
    fakes: Callable[..., FakeDaemon], make_client: Callable[..., dc.Client]
) -> None:
    fake = fakes()
    client = make_client(fake, flow_control=dc.FlowControl(None, None))
    client.connect()
    terminal = client.terminals.create(cwd=CWD)
    on_output = _StuckCallback()
    got, gate = on_output.got, on_output.gate
    stream = terminal.stream(on_output=on_output, buffer_limit=0)
    for n in range(500):
        fake.send_raw(_frame(stream.slot, n), binary=True)
    client.ping()
    gate.set()
    assert client.flush_callbacks(BOUND)
    assert "".join(got) == "".join(f"frame {n:04d};" for n in range(500))
    assert stream.skipped == 0
    assert client.stats().queued_events == 0


def test_a_run_an_executor_refuses_releases_what_the_backlog_counted(fakes: Callable[..., FakeDaemon]) -> None:
    fake = fakes()
    errors: list[BaseException] = []
    refusing = threading.Event()

    def executor(fn: Any) -> None:
        if refusing.is_set():
            raise RuntimeError("the window is closing")
        fn()

    client = dc.Client("ws://fake/ws", transport_factory=fake.transport_factory, callback_executor=executor,
                       on_callback_error=errors.append)  # fmt: skip
    try:
        client.connect()
        terminal = client.terminals.create(cwd=CWD)
        got: list[str] = []
        stream = terminal.stream(on_output=got.append, buffer_limit=0)
        refusing.set()
        for n in range(5):
            fake.send_raw(_frame(stream.slot, n), binary=True)
        client.ping()  # answered after the frames: all were routed, their runs queued
        deadline = time.monotonic() + BOUND
        while client.stats().queued_events and time.monotonic() < deadline:
            time.sleep(0.01)  # the dispatcher hands the runs over; the executor refuses each
        assert client.stats().queued_events == 0  # counted done all the same: flow control is not wedged
        assert client.stats().queued_bytes == 0
        assert errors  # reported
        assert got == []  # never delivered
        refusing.clear()
        fake.send_raw(_frame(stream.slot, 5), binary=True)
        client.ping()
        assert client.flush_callbacks(BOUND)
        assert got == ["frame 0005;"]
    finally:
        client.close()


def test_output_queued_for_a_stream_released_meanwhile_is_counted_done(
    fakes: Callable[..., FakeDaemon], make_client: Callable[..., dc.Client]
) -> None:
    fake = fakes()
    client = make_client(fake)
    client.connect()
    terminal = client.terminals.create(cwd=CWD)
    on_output = _StuckCallback()
    got, entered, gate = on_output.got, on_output.entered, on_output.gate
    stream = terminal.stream(on_output=on_output, buffer_limit=0)
    slot = stream.slot
    fake.send_raw(_frame(slot, 0), binary=True)
    assert entered.wait(BOUND)
    for n in range(1, 50):
        fake.send_raw(_frame(slot, n), binary=True)
    client.ping()  # the 49 frames are queued behind the stuck callback
    stream.release()
    gate.set()
    assert client.flush_callbacks(BOUND)
    assert got == ["frame 0000;"]  # nothing after the release
    assert client.stats().queued_events == 0
    assert client.stats().queued_bytes == 0
