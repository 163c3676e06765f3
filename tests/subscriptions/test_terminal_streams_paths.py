"""Terminal streams, the paths a live daemon rarely takes: subscriptions that cannot be sent or
are answered after a disconnect, a release or a close; the stream's own small API; a daemon
that numbers two terminals with one slot. Driven through the manager with a scripted link and
a manual callback queue, and through a client against the fake where the fake can play it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.api.terminals import handle as terminal_handle
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.terminal_frames import OUTPUT, SNAPSHOT
from daemon_client.runtime.dispatch import Dispatcher
from daemon_client.subscriptions.lifecycle import SubscriptionLink
from daemon_client.subscriptions.terminal_streams import StreamState, TerminalStream, TerminalStreamManager
from daemon_client.testing import RecordingHandler

CWD = "/home/dev/projects/demo"
Settle = Callable[[dict[str, Any] | None, BaseException | None], None]


class ScriptedLink:
    """A subscription link whose ``submit`` records the request (or raises ``fail``) and keeps
    its settle hook for the test to call; ``sent`` collects fire-and-forget messages."""

    def __init__(self) -> None:
        self.dispatcher = Dispatcher(executor="manual")
        self.requests: list[dict[str, Any]] = []
        self.settles: list[Settle] = []
        self.sent: list[dict[str, Any]] = []
        self.fail: BaseException | None = None
        self.resets: list[str] = []
        self.link = SubscriptionLink(
            submit=self._submit,
            server_info=lambda: None,
            host_kind=lambda: HostKind.CAPABLE,
            reset_transport=self.resets.append,
            dispatcher=self.dispatcher,
        )
        self.manager = TerminalStreamManager(self.link, self._send)

    def _submit(self, message: dict[str, Any], timeout: float, *, direct: bool = False, on_settle: Settle) -> Future:
        if self.fail is not None:
            raise self.fail
        self.requests.append(message)
        self.settles.append(on_settle)
        return Future()

    def _send(self, message: dict[str, Any], direct: bool = False) -> None:
        self.sent.append(message)

    def stream(self, terminal_id: str = "t1", **callbacks: Any) -> TerminalStream:
        return TerminalStream(self.manager, terminal_id, **callbacks)

    def run_callbacks(self) -> int:
        return self.dispatcher.process_events(timeout=0)

    def unsubscribed(self) -> list[str]:
        return [m["terminalId"] for m in self.sent if m["type"] == "unsubscribe_terminal_request"]


@pytest.fixture
def scripted() -> ScriptedLink:
    return ScriptedLink()


def _live(scripted: ScriptedLink, stream: TerminalStream, slot: int = 0) -> TerminalStream:
    """Connect, add ``stream`` and answer its subscription with ``slot``."""
    if not scripted.manager._connected:
        scripted.manager.restore(HostKind.CAPABLE, reconnected=False)
    scripted.manager.add(stream)
    scripted.settles[-1]({"terminalId": stream.terminal_id, "slot": slot, "error": None}, None)
    assert stream.ready.result(0) == slot
    return stream


# ------------------------------------------------------------------------------ establishment


@pytest.mark.parametrize("error", [dc.ConnectionLost("gone"), dc.NotConnected("not yet")])
def test_a_subscription_that_cannot_be_sent_waits_for_the_next_handshake(scripted: ScriptedLink, error) -> None:
    scripted.manager.restore(HostKind.CAPABLE, reconnected=False)
    scripted.fail = error
    stream = scripted.manager.add(scripted.stream())
    assert stream.state is StreamState.PENDING
    assert not stream.ready.done()
    scripted.fail = None
    scripted.manager.on_disconnect()
    scripted.manager.restore(HostKind.CAPABLE, reconnected=True)
    assert scripted.requests == [{"type": "subscribe_terminal_request", "terminalId": "t1"}]
    scripted.settles[0]({"terminalId": "t1", "slot": 3, "error": None}, None)
    assert stream.ready.result(0) == 3
    assert scripted.manager.slot_for("t1") == 3


def test_a_subscription_refused_by_a_closing_client_stays_quiet(scripted: ScriptedLink) -> None:
    scripted.manager.restore(HostKind.CAPABLE, reconnected=False)
    scripted.fail = dc.ClientClosed()
    errors = RecordingHandler[BaseException]("errors")
    stream = scripted.manager.add(scripted.stream(on_error=errors))
    assert stream.state is StreamState.ESTABLISHING
    scripted.manager.dispose()
    with pytest.raises(dc.ClientClosed):
        stream.ready.result(0)
    scripted.run_callbacks()
    assert [type(e) for e in errors.items] == [dc.ClientClosed]


def test_an_answer_lost_with_the_connection_is_asked_again(scripted: ScriptedLink) -> None:
    scripted.manager.restore(HostKind.CAPABLE, reconnected=False)
    stream = scripted.manager.add(scripted.stream())
    scripted.settles[0](None, dc.ConnectionLost("socket closed"))
    assert stream.state is StreamState.PENDING
    assert not stream.ready.done()
    scripted.manager.on_disconnect()
    scripted.manager.restore(HostKind.CAPABLE, reconnected=True)
    assert len(scripted.requests) == 2
    scripted.settles[1]({"terminalId": "t1", "slot": 0, "error": None}, None)
    assert stream.ready.result(0) == 0


def test_a_repeated_answer_routes_each_frame_once(scripted: ScriptedLink) -> None:
    outputs = RecordingHandler[str]("outputs")
    stream = _live(scripted, scripted.stream(on_output=outputs))
    scripted.settles[0]({"terminalId": "t1", "slot": 0, "error": None}, None)
    assert scripted.manager.route_binary(bytes([OUTPUT, 0]) + b"once")
    scripted.run_callbacks()
    assert outputs.items == ["once"]
    assert stream.slot == 0


def test_an_error_for_a_stream_released_meanwhile_is_not_reported(scripted: ScriptedLink, caplog) -> None:
    scripted.manager.restore(HostKind.CAPABLE, reconnected=False)
    errors = RecordingHandler[BaseException]("errors")
    stream = scripted.manager.add(scripted.stream(on_error=errors))
    stream.release()
    caplog.clear()
    scripted.settles[0]({"terminalId": "t1", "error": "No terminal stream slots available"}, None)
    scripted.run_callbacks()
    assert errors.items == []
    with pytest.raises(dc.SubscriptionReleased, match="released before it was ready"):
        stream.ready.result(0)
    assert "establishing" not in caplog.text


def test_a_lost_answer_for_a_stream_released_meanwhile_is_not_asked_again(scripted: ScriptedLink) -> None:
    scripted.manager.restore(HostKind.CAPABLE, reconnected=False)
    stream = scripted.manager.add(scripted.stream())
    stream.release()
    scripted.settles[0](None, dc.ConnectionLost("socket closed"))
    assert stream.released
    scripted.manager.on_disconnect()
    scripted.manager.restore(HostKind.CAPABLE, reconnected=True)
    assert len(scripted.requests) == 1


def test_a_terminal_gone_after_a_release_during_the_restore_is_not_an_exit(scripted: ScriptedLink) -> None:
    exits = RecordingHandler[Any]("exits")
    stream = _live(scripted, scripted.stream(on_exit=exits))
    scripted.manager.on_disconnect()
    scripted.manager.restore(HostKind.CAPABLE, reconnected=True)
    stream.release()
    scripted.settles[1]({"terminalId": "t1", "error": "Terminal not found"}, None)
    scripted.run_callbacks()
    assert exits.items == []
    assert stream.released
    assert not stream.exited
    assert scripted.unsubscribed() == []  # the slot of the old session went with it


def test_a_timed_out_restore_is_reported_and_frees_the_slot(scripted: ScriptedLink, caplog) -> None:
    errors = RecordingHandler[BaseException]("errors")
    stream = _live(scripted, scripted.stream(on_error=errors))
    scripted.manager.on_disconnect()
    scripted.manager.restore(HostKind.CAPABLE, reconnected=True)
    timeout = dc.RequestTimeout("no reply", request_type="subscribe_terminal_request", timeout=1.0)
    scripted.settles[1](None, timeout)
    scripted.run_callbacks()
    assert errors.items == [timeout]
    assert stream.state is StreamState.FAILED
    assert scripted.unsubscribed() == ["t1"]
    assert "establishing <TerminalStream t1 slot=None failed> failed: no reply" in caplog.text
    assert scripted.resets == []  # a terminal stream is not owned by a server-side subscription


def test_a_silent_answer_is_a_protocol_error(scripted: ScriptedLink) -> None:
    scripted.manager.restore(HostKind.CAPABLE, reconnected=False)
    stream = scripted.manager.add(scripted.stream())
    scripted.settles[0](None, None)
    with pytest.raises(dc.ProtocolError, match="no answer to the terminal subscription"):
        stream.ready.result(0)


# ------------------------------------------------------------------------------ slots


def test_a_slot_handed_to_another_terminal_moves_to_it(scripted: ScriptedLink) -> None:
    first_out, second_out = RecordingHandler[str]("first"), RecordingHandler[str]("second")
    first = _live(scripted, scripted.stream("t1", on_output=first_out), slot=0)
    second = _live(scripted, scripted.stream("t2", on_output=second_out), slot=0)  # a confused daemon
    assert scripted.manager.slot_for("t2") == 0
    assert scripted.manager.slot_for("t1") is None
    first.release()  # its slot now routes to t2: left alone
    assert scripted.manager.route_binary(bytes([OUTPUT, 0]) + b"for t2")
    scripted.run_callbacks()
    assert second_out.items == ["for t2"]
    assert first_out.items == []
    assert scripted.unsubscribed() == ["t1"]
    assert second.slot == 0


def test_two_streams_keep_the_snapshot_when_one_is_released(scripted: ScriptedLink) -> None:
    one, two = RecordingHandler[Any]("one"), RecordingHandler[Any]("two")
    first = _live(scripted, scripted.stream(on_snapshot=one))
    second = _live(scripted, scripted.stream(on_snapshot=two))
    snapshot = b'{"rows":1,"cols":2,"grid":[[{"char":"a"},{"char":"b"}]],"scrollback":[],"cursor":{"row":0,"col":0}}'
    assert scripted.manager.route_binary(bytes([SNAPSHOT, 0]) + snapshot)
    first.release()
    assert scripted.manager.route_binary(bytes([SNAPSHOT, 0]) + snapshot)  # a repeat: not delivered again
    scripted.run_callbacks()
    assert len(two) == 1
    assert two.items[0].screen_lines() == ["ab"]
    assert second.screen is two.items[0]
    assert one.items == []  # released before the callback thread ran
    assert scripted.unsubscribed() == []


# ------------------------------------------------------------------------------ the stream object


def test_the_stream_object_before_any_frame(scripted: ScriptedLink) -> None:
    stream = scripted.manager.add(scripted.stream("t7"))
    assert stream.screen is None
    assert stream.state is StreamState.PENDING
    assert repr(stream) == "<TerminalStream t7 slot=None pending>"
    assert scripted.manager.streams() == [stream]
    with stream as entered:
        assert entered is stream
    assert stream.released
    assert scripted.manager.streams() == []
    with pytest.raises(dc.SubscriptionReleased):
        stream.ready.result(0)
    assert scripted.requests == []  # never connected: nothing asked, nothing to free
    assert scripted.unsubscribed() == []


def test_calling_a_stream_releases_it(scripted: ScriptedLink) -> None:
    stream = _live(scripted, scripted.stream())
    stream()
    assert stream.released
    assert scripted.unsubscribed() == ["t1"]


def test_an_unreadable_snapshot_reads_as_no_screen(scripted: ScriptedLink, caplog) -> None:
    stream = _live(scripted, scripted.stream())
    assert scripted.manager.route_binary(bytes([SNAPSHOT, 0]) + b"not json")
    assert stream.screen is None
    assert "unreadable snapshot" in caplog.text
    assert [r.levelno for r in caplog.records if "unreadable snapshot" in r.getMessage()] == [logging.WARNING]


def test_close_fails_a_stream_that_waits_for_a_connection(scripted: ScriptedLink) -> None:
    errors = RecordingHandler[BaseException]("errors")
    stream = scripted.manager.add(scripted.stream(on_error=errors))
    scripted.manager.dispose()
    with pytest.raises(dc.ClientClosed):
        stream.ready.result(0)
    with pytest.raises(dc.ClientClosed):
        stream.expect("x", timeout=0)
    scripted.run_callbacks()
    assert [type(e) for e in errors.items] == [dc.ClientClosed]
    assert scripted.manager.streams() == []


# ------------------------------------------------------------------------------ through a client


def test_a_stream_asked_for_while_disconnected_times_out(fakes, make_client, monkeypatch) -> None:
    monkeypatch.setattr(terminal_handle, "RESULT_GRACE", 0.0)
    client = make_client(fakes("capable"))
    terminal = client.terminals.ref("t1")
    with pytest.raises(dc.RequestTimeout, match=r"the stream of terminal t1 did not start within 0\.05 s"):
        terminal.stream(timeout=0.05)
    assert repr(terminal) == "<TerminalHandle t1 '?'>"
    assert terminal.write("") == 0  # nothing to send: no connection needed


@pytest.mark.parametrize("kind", ["capable", "broadcast"])
def test_an_exit_without_an_exit_callback_still_ends_the_stream(fakes, make_client, kind: str) -> None:
    client = make_client(fakes(kind))
    client.connect()
    terminal = client.terminals.create(cwd=CWD, name="short")
    assert repr(terminal) == f"<TerminalHandle {terminal.id} 'short'>"
    outputs = RecordingHandler[str]("outputs")
    stream = terminal.stream(on_output=outputs)
    terminal.kill()
    with pytest.raises(dc.TerminalExited):
        stream.expect("never", timeout=5)
    assert stream.exited
    assert client.flush_callbacks()


def test_an_empty_output_frame_adds_nothing_to_read(scripted: ScriptedLink) -> None:
    outputs = RecordingHandler[str]("outputs")
    stream = _live(scripted, scripted.stream(on_output=outputs))
    assert scripted.manager.route_binary(bytes([OUTPUT, 0]))
    assert scripted.manager.route_binary(bytes([OUTPUT, 0]) + b"text")
    scripted.run_callbacks()
    assert outputs.items == ["text"]  # joined: the callback thread had not reached the first
    assert list(stream.output(timeout=0)) == ["text"]


def test_output_the_callback_thread_has_not_reached_is_joined_into_one_call_in_order(scripted: ScriptedLink) -> None:
    """Output frames queued behind each other reach ``on_output`` in one call; anything else
    queued between them (a snapshot, another stream's output) keeps its place."""
    events: list[object] = []
    snapshot = b'{"rows":1,"cols":1,"grid":[[{"char":"s"}]],"scrollback":[],"cursor":{"row":0,"col":0}}'
    first = _live(scripted, scripted.stream("t1", on_output=lambda text: events.append(("t1", text)),
                                            on_snapshot=lambda state: events.append(state.screen_lines())))  # fmt: skip
    _live(scripted, scripted.stream("t2", on_output=lambda text: events.append(("t2", text))), slot=1)
    scripted.run_callbacks()
    for data in (b"a", b"b", b"c"):
        assert scripted.manager.route_binary(bytes([OUTPUT, 0]) + data)
    assert scripted.manager.route_binary(bytes([SNAPSHOT, 0]) + snapshot)
    assert scripted.manager.route_binary(bytes([OUTPUT, 0]) + b"d")
    assert scripted.manager.route_binary(bytes([OUTPUT, 1]) + b"x")
    assert scripted.manager.route_binary(bytes([OUTPUT, 0]) + b"e")
    assert scripted.manager.route_binary(bytes([OUTPUT, 0]) + b"f")
    assert scripted.run_callbacks() == 5
    assert events == [("t1", "abc"), ["s"], ("t1", "d"), ("t2", "x"), ("t1", "ef")]
    events.clear()
    assert scripted.manager.route_binary(bytes([OUTPUT, 0]) + b"g")
    assert scripted.run_callbacks() == 1  # the job that ran is closed: new output, a new call
    assert scripted.manager.route_binary(bytes([OUTPUT, 0]) + b"h")
    assert scripted.run_callbacks() == 1
    assert events == [("t1", "g"), ("t1", "h")]
    assert "".join(first.output(timeout=0)) == "abcdefgh"


def test_output_joined_while_the_callback_thread_runs_loses_and_reorders_nothing(scripted: ScriptedLink) -> None:
    """The reader joining output to a job the callback thread is taking at that moment: every
    character arrives once, in order."""
    received: list[str] = []
    _live(scripted, scripted.stream(on_output=received.append))
    stop = threading.Event()

    def callback_thread() -> None:
        while not stop.is_set():
            scripted.dispatcher.process_events(timeout=0.01)

    runner = threading.Thread(target=callback_thread)
    runner.start()
    try:
        sent = [f"{n}," for n in range(20_000)]
        for text in sent:
            assert scripted.manager.route_binary(bytes([OUTPUT, 0]) + text.encode())
    finally:
        stop.set()
        runner.join(10)
    assert not runner.is_alive()
    scripted.run_callbacks()
    assert "".join(received) == "".join(sent)
    assert 1 <= len(received) <= len(sent)
