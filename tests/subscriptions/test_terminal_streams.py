"""Live terminal output: binary frames routed by slot, snapshots parsed once, input and resize as
binary frames, exit, ``output()``/``expect()``, restore after reconnects and stream faults.

The paths a live daemon rarely takes (subscriptions that cannot be sent or are answered after a
disconnect, a release or a close; a daemon that numbers two terminals with one slot; output the
callback thread has not reached yet) and the stream's own small API are driven through the
manager with a scripted link and a manual callback queue."""

from __future__ import annotations

import logging
import re
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
from daemon_client.subscriptions import terminal_streams
from daemon_client.subscriptions.lifecycle import SubscriptionLink
from daemon_client.subscriptions.terminal_streams import StreamState, TerminalStream, TerminalStreamManager
from daemon_client.testing import FakeDaemon, RecordingHandler
from daemon_client.testing.fake.engine.handlers import RequestContext

from ..conftest import TRANSPORTS

HOSTS = {
    "capable": ("capable", {}),
    "capable-without-flag": ("capable", {"workspaceTerminals": False}),
    "selective": ("selective", {}),
    "broadcast": ("broadcast", {}),
}
CWD = "/home/dev/projects/demo"
Settle = Callable[[dict[str, Any] | None, BaseException | None], None]

Connected = Callable[..., tuple[FakeDaemon, dc.Client]]


@pytest.fixture
def connected(fakes, make_client) -> Connected:
    def make(host: str = "capable", transport: str = "memory", **options: Any) -> tuple[FakeDaemon, dc.Client]:
        kind, features = HOSTS[host]
        fake = fakes(kind, features=features)
        client = make_client(fake, transport, **options)
        client.connect()
        return fake, client

    return make


def _sent(fake: FakeDaemon, message_type: str) -> list[dict[str, Any]]:
    return [f["message"] for f in fake.received if f.get("type") == "session" and f["message"]["type"] == message_type]


def _settle(client: dc.Client) -> None:
    client.ping()
    assert client.flush_callbacks()


def _reconnected(client: dc.Client) -> RecordingHandler[Any]:
    states = RecordingHandler[Any]("states")
    client.on_state_change(states)
    return states


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts snapshot parses (the lengths of the payloads parsed)."""
    counted: list[int] = []
    real = terminal_streams.parse_terminal_state

    def counting(data: bytes | str) -> dc.TerminalState:
        counted.append(len(data))
        return real(data)

    monkeypatch.setattr(terminal_streams, "parse_terminal_state", counting)
    return counted


# ------------------------------------------------------------------------------ the stream


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("host", list(HOSTS))
def test_snapshot_output_input_and_exit(connected: Connected, host: str, transport: str) -> None:
    fake, client = connected(host, transport)
    terminal = client.terminals.create(cwd=CWD)
    snapshots, outputs = RecordingHandler[dc.TerminalState]("snapshots"), RecordingHandler[str]("outputs")
    exits = RecordingHandler[Any]("exits")
    stream = terminal.stream(on_output=outputs, on_snapshot=snapshots, on_exit=exits)
    assert stream.slot == 0
    screen = snapshots.wait_for()[0]
    assert (screen.rows, screen.cols) == (24, 80)
    assert screen.screen_lines()[0] == "fake$"
    assert stream.screen == screen
    terminal.send_keys("echo hi", "Enter")
    match = stream.expect(r"\nhi\r\n")
    assert match.group(0) == "\nhi\r\n"
    assert stream.expect(r"fake\$ ").group(0) == "fake$ "
    assert outputs.wait_for()[0] == "echo hi\r\nhi\r\n\x1b[1mfake$\x1b[0m "
    terminal.write("exit\r")
    exits.wait_for()
    assert list(stream.output(timeout=5)) == ["exit\r\n"]
    assert stream.exited
    with pytest.raises(dc.TerminalExited) as ended:
        stream.expect("never")
    assert ended.value.output == ""
    _settle(client)
    assert len(exits) == 1
    assert [(i.via, i.kind) for i in fake.terminals.inputs] == [("binary", "input"), ("binary", "input")]
    assert client.terminals.list().terminals == ()
    stream.release()  # harmless after the exit
    _settle(client)
    assert _sent(fake, "unsubscribe_terminal_request") == []


@pytest.mark.parametrize("host", list(HOSTS))
def test_a_kill_ends_the_stream(connected: Connected, host: str) -> None:
    _, client = connected(host)
    terminal = client.terminals.create(cwd=CWD)
    exits = RecordingHandler[Any]("exits")
    stream = terminal.stream(on_exit=exits)
    terminal.kill()
    exits.wait_for()  # terminal_stream_exit came before the kill response
    assert stream.exited
    assert list(stream.output(timeout=1)) == []  # ended, and nothing was printed while streaming


def test_the_double_snapshot_of_a_broadcast_host_costs_one_parse(connected: Connected, parses: list[int]) -> None:
    fake, client = connected("broadcast")
    terminal = client.terminals.create(cwd=CWD)
    snapshots = RecordingHandler[dc.TerminalState]("snapshots")
    stream = terminal.stream(on_snapshot=snapshots)
    _settle(client)
    assert len(snapshots) == 1  # two byte-identical frames arrived
    assert len(parses) == 1
    assert parses[0] > 200_000  # every cell spelled out, as 0.1.65 sends it
    assert stream.screen is snapshots.items[0]  # the same parse
    fake.terminals.send_snapshot(terminal.id)  # the same screen again, nothing in between: dropped
    _settle(client)
    assert (len(snapshots), len(parses)) == (1, 1)
    terminal.write("echo changed\r")
    stream.expect("changed\r\n.*changed")
    fake.terminals.send_snapshot(terminal.id)
    fake.terminals.send_snapshot(terminal.id)
    snapshots.wait_for(2)
    _settle(client)
    assert (len(snapshots), len(parses)) == (2, 1 + 1)
    assert snapshots.items[1].screen_lines()[:2] == ["fake$ echo changed", "changed"]


def test_snapshots_are_not_parsed_without_a_reader(connected: Connected, parses: list[int]) -> None:
    _, client = connected("broadcast")
    stream = client.terminals.create(cwd=CWD).stream()
    _settle(client)
    assert parses == []
    assert stream.screen is not None
    assert stream.screen is stream.screen
    assert len(parses) == 1


def test_input_and_resize_are_binary_frames_while_streaming(connected: Connected) -> None:
    fake, client = connected("broadcast", "loopback")
    terminal = client.terminals.create(cwd=CWD)
    terminal.write("echo json\r")
    stream = terminal.stream()
    terminal.send_keys("sleep 30", "Enter", "C-c")
    terminal.resize(30, 100)
    stream.expect(re.escape("^C"))
    stream.release()
    terminal.write("echo json again\r")
    _settle(client)
    got = [(i.via, i.kind, i.data) for i in fake.terminals.inputs]
    assert got == [
        ("json", "input", "echo json\r"),
        ("binary", "input", "sleep 30\r\x03"),
        ("binary", "resize", {"rows": 30, "cols": 100}),
        ("json", "input", "echo json again\r"),
    ]
    binary = [f for f in fake.received if "binary" in f]
    assert [f["binary"] for f in binary] == [2 + len("sleep 30\r\x03"), 2 + len('{"rows":30,"cols":100}')]
    shell = fake.terminals.get(terminal.id).shell  # type: ignore[union-attr]
    assert (shell.rows, shell.cols) == (30, 100)
    assert _sent(fake, "unsubscribe_terminal_request") == [
        {"type": "unsubscribe_terminal_request", "terminalId": terminal.id}
    ]


def test_expect_on_raw_text_and_on_cleaned_text(connected: Connected) -> None:
    _, client = connected()
    terminal = client.terminals.create(cwd=CWD)
    stream = terminal.stream()
    terminal.write("color alarm\r")
    assert stream.expect(re.escape("\x1b[31malarm"), strip_ansi=False).group(0) == "\x1b[31malarm"
    terminal.write("color calm\r")
    assert stream.expect(r"calm\r\nfake\$ $").group(0) == "calm\r\nfake$ "  # the escapes are gone
    with pytest.raises(dc.ExpectTimeout) as timed_out:
        stream.expect("never printed", timeout=0.2)
    assert isinstance(timed_out.value, TimeoutError)
    assert timed_out.value.output == ""


def test_output_iteration_ends_when_nothing_arrives(connected: Connected) -> None:
    _, client = connected()
    stream = client.terminals.create(cwd=CWD).stream()
    assert list(stream.output(timeout=0.1)) == []


def test_release_and_close_end_waits(fakes, make_client) -> None:
    fake = fakes("capable")
    client = make_client(fake)
    client.connect()
    terminal = client.terminals.create(cwd=CWD)
    released = terminal.stream()
    released.release()
    with pytest.raises(dc.SubscriptionReleased):
        released.expect("x")
    errors = RecordingHandler[BaseException]("errors")
    open_stream = terminal.stream(on_error=errors)
    client.close()
    with pytest.raises(dc.ClientClosed):
        open_stream.expect("x")
    assert open_stream.released
    with pytest.raises(dc.ClientClosed):
        terminal.stream()


def test_the_output_buffer_is_bounded(connected: Connected, caplog) -> None:
    _, client = connected()
    terminal = client.terminals.create(cwd=CWD)
    stream = terminal.stream(buffer_limit=40)
    everything = RecordingHandler[str]("everything")
    terminal.stream(on_output=everything)  # the same output, on the callback thread
    terminal.write("seq 200\r")
    everything.wait_for(predicate=lambda chunk: "200\r\n" in chunk)
    client.flush_callbacks()  # every chunk reached the unread stream too: more than it holds
    assert stream.dropped > 0
    assert stream.expect("200\r\n")
    assert "unread output over 40 characters" in caplog.text


def test_a_stream_may_keep_no_output_to_pull(connected: Connected, caplog) -> None:
    """``buffer_limit=0``: every character reaches ``on_output``, nothing is kept (no drops, no
    warning), and pulling says why it cannot."""
    _, client = connected()
    terminal = client.terminals.create(cwd=CWD)
    everything = RecordingHandler[str]("everything")
    stream = terminal.stream(on_output=everything, buffer_limit=0)
    kept_text = RecordingHandler[str]("kept")
    kept = terminal.stream(on_output=kept_text)  # a stream of the same terminal keeps its own
    terminal.write("seq 200\r")
    everything.wait_for(predicate=lambda chunk: "200\r\n" in "".join(everything.items))
    assert kept.expect("200\r\n")
    terminal.write("echo h\u00e9llo \u2713\r")  # decoded on the callback thread: multi-byte text too
    everything.wait_for(predicate=lambda chunk: "h\u00e9llo \u2713\r\n" in "".join(everything.items))
    assert kept.expect("h\u00e9llo \u2713\r\n")
    client.flush_callbacks()
    assert "".join(everything.items) == "".join(kept_text.items)
    assert stream.dropped == 0
    assert "unread output over" not in caplog.text
    with pytest.raises(ValueError, match="keeps none"):
        stream.expect("200")
    with pytest.raises(ValueError, match="buffer_limit=0"):
        stream.output(timeout=0)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="0 or more"):
            terminal.stream(buffer_limit=bad)  # type: ignore[arg-type]
    stream.release()


def test_pulling_works_with_a_manual_executor(connected: Connected) -> None:
    _, client = connected(callback_executor="manual")
    terminal = client.terminals.create(cwd=CWD)
    stream = terminal.stream()
    terminal.write("echo manual\r")
    assert stream.expect(r"\nmanual").group(0) == "\nmanual"  # no process_events() needed


# ------------------------------------------------------------------------------ several streams


def test_two_streams_of_one_terminal_share_its_slot(connected: Connected) -> None:
    fake, client = connected("broadcast")
    terminal = client.terminals.create(cwd=CWD)
    first, second = RecordingHandler[str]("first"), RecordingHandler[str]("second")
    one = terminal.stream(on_output=first)
    two = terminal.stream(on_output=second)
    assert one.slot == two.slot == 0
    terminal.write("echo both\r")
    first.wait_for()
    second.wait_for()
    one.release()
    _settle(client)
    assert _sent(fake, "unsubscribe_terminal_request") == []
    terminal.write("echo second only\r")
    two.expect("second only\r\n")
    two.release()
    _settle(client)
    assert len(_sent(fake, "unsubscribe_terminal_request")) == 1
    session = fake.sessions[client.client_id]
    assert fake.terminals.slots(session) == {}


def test_streams_of_two_terminals_get_their_own_frames(connected: Connected) -> None:
    _, client = connected("capable", "loopback")
    left, right = client.terminals.create(cwd=CWD), client.terminals.create(cwd=CWD)
    left_stream, right_stream = left.stream(), right.stream()
    assert (left_stream.slot, right_stream.slot) == (0, 1)
    left.write("echo left\r")
    right.write("echo right\r")
    assert "right" not in left_stream.expect(r"\nleft\r\n").string
    assert "left" not in right_stream.expect(r"\nright\r\n").string


# ------------------------------------------------------------------------------ reconnects and faults


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("host", list(HOSTS))
def test_a_stream_dropped_mid_stream_is_restored(connected: Connected, host: str, transport: str) -> None:
    fake, client = connected(host, transport)
    terminal = client.terminals.create(cwd=CWD)
    snapshots = RecordingHandler[dc.TerminalState]("snapshots")
    stream = terminal.stream(on_snapshot=snapshots)
    snapshots.wait_for()
    states = _reconnected(client)
    fake.terminals.drop_mid_stream(terminal.id, after=3)
    terminal.write("seq 50\r")
    states.wait_for(predicate=lambda change: change[2] == "reconnected")
    restored = snapshots.wait_for(2)[-1]  # the screen after the reconnect shows what was missed
    assert "50" in restored.screen_lines()
    assert len(_sent(fake, "subscribe_terminal_request")) == 2
    received = "".join(stream.output(timeout=0.5))
    assert received.startswith("seq 50\r\n1\r\n")
    assert "\n50\r\n" not in received  # lost with the connection; the snapshot has it
    terminal.write("echo after\r")
    assert stream.expect(r"\nafter\r\n")


def test_the_slot_map_is_rebuilt_after_a_reconnect(connected: Connected, caplog) -> None:
    fake, client = connected("broadcast", "loopback")
    left, right = client.terminals.create(cwd=CWD), client.terminals.create(cwd=CWD)
    left_stream = left.stream()
    heard = RecordingHandler[str]("right")
    right_stream = right.stream(on_output=heard)
    assert (left_stream.slot, right_stream.slot) == (0, 1)
    left_stream.release()
    states = _reconnected(client)
    mark = len(fake.received)
    fake.restart()  # a new server-side session numbers its slots from 0 again
    states.wait_for(predicate=lambda change: change[2] == "reconnected")
    fake.wait_for_frame("subscribe_terminal_request", since=mark)
    _settle(client)
    assert right_stream.slot == 0
    heard.clear()
    caplog.clear()
    fake.send_raw(bytes([1, 1]) + b"stale slot", binary=True)  # the old number means nothing now
    fake.send_raw(bytes([1, 0]) + b"current slot", binary=True)
    _settle(client)
    assert heard.items == ["current slot"]
    assert "skipping binary frames" in caplog.text


def test_unknown_opcodes_slots_and_families_are_ignored(connected: Connected, caplog) -> None:
    fake, client = connected("capable", "loopback")
    terminal = client.terminals.create(cwd=CWD)
    outputs = RecordingHandler[str]("outputs")
    snapshots = RecordingHandler[Any]("snapshots")
    stream = terminal.stream(on_output=outputs, on_snapshot=snapshots)
    snapshots.wait_for()
    caplog.clear()
    fake.terminals.inject_frame(0x05, 0, b'{"mode":"live"}')  # Restore (newest): tolerated, ignored
    fake.terminals.inject_frame(0x10, 0, b"file-begin")  # the file transfer family
    fake.terminals.inject_frame(0x7F, 0, b"future opcode")
    fake.terminals.inject_frame(0x01, 9, b"a slot nobody holds")
    fake.terminals.inject_frame(0x04, 9, b"{}")
    fake.terminals.inject_frame(0x04, 0, b"not json")  # a broken snapshot: skipped, the stream lives on
    for junk in [bytes([0x01]), b""]:  # too short to be terminal frames
        fake.send_raw(junk, binary=True)
    terminal.write("echo fine\r")
    stream.expect(r"\nfine")
    _settle(client)
    assert outputs.items == ["echo fine\r\nfine\r\n\x1b[1mfake$\x1b[0m "]
    assert len(snapshots) == 1
    lines = [r for r in caplog.records if "skipping binary frames" in r.getMessage()]
    assert len(lines) == 1
    assert lines[0].levelno == logging.INFO
    assert "unreadable snapshot skipped" in caplog.text
    assert client.state is dc.ConnectionState.CONNECTED


def test_a_terminal_that_ended_while_away_ends_its_stream(connected: Connected) -> None:
    fake, client = connected("broadcast")
    terminal = client.terminals.create(cwd=CWD)
    exits = RecordingHandler[Any]("exits")
    stream = terminal.stream(on_exit=exits)
    states = _reconnected(client)
    fake.refuse_connections = True
    fake.drop_connections()
    states.wait_for(predicate=lambda change: change[1] is dc.ConnectionState.DISCONNECTED)
    fake.terminals.kill(terminal.id)
    fake.refuse_connections = False
    exits.wait_for()  # "Terminal not found" when subscribing again
    assert stream.exited
    with pytest.raises(dc.TerminalExited):
        stream.expect("x", timeout=1)


def test_a_stream_released_while_away_is_unsubscribed_at_the_next_handshake(connected: Connected) -> None:
    fake, client = connected("broadcast")
    terminal = client.terminals.create(cwd=CWD)
    stream = terminal.stream()
    states = _reconnected(client)
    fake.refuse_connections = True
    fake.drop_connections()
    states.wait_for(predicate=lambda change: change[1] is dc.ConnectionState.DISCONNECTED)
    stream.release()
    fake.refuse_connections = False
    states.wait_for(predicate=lambda change: change[2] == "reconnected")
    fake.wait_for_frame("unsubscribe_terminal_request")
    assert fake.terminals.slots(fake.sessions[client.client_id]) == {}
    assert len(_sent(fake, "subscribe_terminal_request")) == 1


def test_a_failed_restore_is_reported(connected: Connected) -> None:
    fake, client = connected("broadcast")
    terminal = client.terminals.create(cwd=CWD)
    errors = RecordingHandler[BaseException]("errors")
    stream = terminal.stream(on_error=errors)
    fake.on_request(
        "subscribe_terminal_request",
        lambda ctx: ctx.reply({"terminalId": terminal.id, "error": "No terminal stream slots available"}),
    )
    fake.drop_connections()
    (error,) = errors.wait_for()
    assert isinstance(error, dc.RpcError)
    assert "No terminal stream slots available" in str(error)
    with pytest.raises(dc.RpcError):
        stream.expect("x", timeout=1)
    assert not stream.exited


def _held_subscriptions(fake: FakeDaemon) -> threading.Event:
    """Hold every later ``subscribe_terminal_request`` until the returned event is set."""
    answer = threading.Event()
    subscribe = fake.registry.handler_for("subscribe_terminal_request")
    assert subscribe is not None

    def late(ctx: RequestContext) -> None:
        answer.wait(10)
        subscribe(ctx)

    fake.on_request("subscribe_terminal_request", late)
    return answer


def test_a_subscription_that_timed_out_frees_its_slot(connected: Connected) -> None:
    fake, client = connected("broadcast")
    terminal = client.terminals.create(cwd=CWD)
    answer = _held_subscriptions(fake)
    with pytest.raises(dc.RequestTimeout, match=r"got no reply within 0\.2 s"):
        terminal.stream(timeout=0.2)
    answer.set()  # the daemon gives it a slot after all; the unsubscribe sent meanwhile frees it
    frame = fake.wait_for_frame("unsubscribe_terminal_request")
    assert frame["message"]["terminalId"] == terminal.id
    _settle(client)
    assert fake.terminals.slots(fake.sessions[client.client_id]) == {}


def test_a_stream_released_while_it_is_restored_frees_its_slot(connected: Connected) -> None:
    fake, client = connected("broadcast")
    terminal = client.terminals.create(cwd=CWD)
    stream = terminal.stream()
    answer = _held_subscriptions(fake)
    states = _reconnected(client)
    mark = len(fake.received)
    fake.drop_connections()
    states.wait_for(predicate=lambda change: change[2] == "reconnected")
    fake.wait_for_frame("subscribe_terminal_request", since=mark)  # held by the fake
    stream.release()
    answer.set()
    frame = fake.wait_for_frame("unsubscribe_terminal_request", since=mark)
    assert frame["message"]["terminalId"] == terminal.id
    _settle(client)
    assert fake.terminals.slots(fake.sessions[client.client_id]) == {}


def test_an_unusable_slot_is_a_protocol_error(connected: Connected) -> None:
    fake, client = connected()
    fake.on_request(
        "subscribe_terminal_request", lambda ctx: ctx.reply({"terminalId": "t1", "slot": 300, "error": None})
    )
    with pytest.raises(dc.ProtocolError, match="unusable slot 300"):
        client.terminals.ref("t1").stream()
    assert client.terminals.ref("t1").write("x") == 1  # no slot: sent as terminal_input


def test_a_process_that_ends_by_itself_ends_the_stream(connected: Connected) -> None:
    fake, client = connected("selective", "loopback")
    terminal = client.terminals.create(cwd=CWD)
    lists = RecordingHandler[dc.TerminalsChanged]("lists")
    client.terminals.subscribe(lists, cwd=CWD).ready.result(5)
    exits = RecordingHandler[Any]("exits")
    stream = terminal.stream(on_exit=exits)
    fake.terminals.exit(terminal.id)
    exits.wait_for()
    lists.wait_for(predicate=lambda changed: changed.terminals == ())
    assert stream.exited
    assert terminal.refresh() is None


# ------------------------------------------------------------------------------ a scripted link


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


# ------------------------------------------------------------------------------ scripted: establishment


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


def test_a_subscription_refused_by_a_closing_client_fails_with_client_closed_at_dispose(scripted: ScriptedLink) -> None:
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


def test_a_subscription_answered_with_nothing_is_a_protocol_error(scripted: ScriptedLink) -> None:
    scripted.manager.restore(HostKind.CAPABLE, reconnected=False)
    stream = scripted.manager.add(scripted.stream())
    scripted.settles[0](None, None)
    with pytest.raises(dc.ProtocolError, match="no answer to the terminal subscription"):
        stream.ready.result(0)


# ------------------------------------------------------------------------------ scripted: slots


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


def test_the_snapshot_stays_with_the_stream_that_remains_when_one_of_two_is_released(scripted: ScriptedLink) -> None:
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


# ------------------------------------------------------------------------------ scripted: the stream object


def test_a_stream_before_any_frame_has_no_screen_and_a_with_block_releases_it(scripted: ScriptedLink) -> None:
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


def test_an_unreadable_snapshot_reads_as_no_screen_with_one_warning(scripted: ScriptedLink, caplog) -> None:
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


def test_a_stream_asked_for_while_disconnected_times_out_naming_the_terminal(fakes, make_client, monkeypatch) -> None:
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


# ------------------------------------------------------------------------------ scripted: joined output


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
