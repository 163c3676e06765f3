"""User-visible behaviours that no test pinned down before (each would survive a planted bug).

Replies and frames: a ``status`` push carrying a pending ``requestId`` is not that request's
reply; a stray continuation frame after a complete message is a protocol error; a WebSocket
ping is answered (with its payload) on the real transport. Streams and permissions:
``TimelineStream`` ends on its timeout and raises on close; ``respond_to_permission`` sends
each option as documented and ``wait=True`` matches only its own confirmation. Listeners and
releases: ``add_push_listener`` returns a working remover; releasing an observation while it
is being established frees the daemon side; a failing release resets the connection. Faults:
a restore hook or a ``callback_executor`` that raises harms nothing else; ``with Client(...)``
and ``dc.connect()`` whose connect fails leave no thread behind.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler
from daemon_client.transport.base import TransportError
from daemon_client.transport.frames import OP_TEXT, FrameReader
from tests.reliability.conftest import StateLog, client_threads, wait_until
from tests.reliability.stalls import BOUND, DeafDaemon
from tests.transport.test_frames import frame

TIMELINE_REQUEST = "agent.timeline.set_subscription.request"
RELEASE = "subscription.release.request"


def connected(fakes, make_client, kind: str = "capable", **options: Any) -> tuple[FakeDaemon, dc.Client]:  # type: ignore[no-untyped-def]
    fake = fakes(kind)
    fake.agents.upsert("a1")
    client = make_client(fake, **options)
    client.connect()
    return fake, client


def threads_of(client: dc.Client) -> list[str]:
    return [name for name in client_threads() if name.startswith(f"{client._name}-")]


# ----------------------------------------------------------------------------- replies and frames
def test_a_status_push_with_a_pending_request_id_is_not_its_reply(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client)

    def handler(ctx) -> None:  # type: ignore[no-untyped-def]
        ctx.connection.send_session("status", {"status": "agent_busy", "requestId": ctx.request_id})
        ctx.reply({"echo": ctx.message.get("value")})

    fake.on_request("echo_request", handler)
    assert client.request({"type": "echo_request", "value": 7}, timeout=BOUND)["echo"] == 7
    assert client.state is dc.ConnectionState.CONNECTED


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    left, right = socket.socketpair()
    yield left, right
    left.close()
    right.close()


@pytest.mark.parametrize("first", ["whole", "fragmented"])
def test_a_stray_continuation_after_a_complete_message_is_a_protocol_error(pair, first: str) -> None:
    left, right = pair
    whole = frame(b"complete")
    message = whole if first == "whole" else frame(b"comp", fin=False) + frame(b"lete", 0x0)
    right.sendall(message + frame(b"stray", 0x0))
    reader = FrameReader(left, None)
    assert reader.next_message() == (OP_TEXT, b"complete")
    with pytest.raises(TransportError, match="continuation"):
        reader.next_message()


def test_a_websocket_ping_is_answered_on_the_real_transport() -> None:
    daemon = DeafDaemon(deaf=False)
    client = dc.Client(daemon.url, strict=True, reconnect=dc.ReconnectPolicy(enabled=False))
    try:
        client.connect(timeout=BOUND)
        daemon.send_ping(b"ping payload 1")
        daemon.send_ping(b"ping payload 2")
        wait_until(lambda: len(daemon.pongs) == 2, BOUND, lambda: f"pongs: {daemon.pongs}")
        assert daemon.pongs == [b"ping payload 1", b"ping payload 2"]
    finally:
        client.close()
        daemon.close()


# ----------------------------------------------------------------------------- streams and permissions
def test_a_timeline_stream_ends_when_nothing_arrives_in_time(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client)
    with client.agents.ref("a1").timeline.stream(timeout=0.2) as stream:
        stream.subscription.ready.result(BOUND)
        seq = fake.timeline.append("a1", {"type": "assistant_message", "text": "one"})
        updates = list(stream)  # the row, then nothing within 0.2 s: the iteration ends
    assert [u.seq for u in updates] == [seq]
    assert stream.next(0) is None


def test_a_timeline_stream_raises_client_closed_when_the_client_closes(fakes, make_client) -> None:
    _fake, client = connected(fakes, make_client)
    stream = client.agents.ref("a1").timeline.stream(timeout=None)
    stream.subscription.ready.result(BOUND)
    outcome: list[BaseException | None] = []

    def consume() -> None:
        try:
            for _update in stream:
                pass
            outcome.append(None)
        except BaseException as exc:  # handed to the test
            outcome.append(exc)

    consumer = threading.Thread(target=consume, name="stream-consumer")
    consumer.start()
    client.close()
    consumer.join(BOUND)
    assert len(outcome) == 1
    assert isinstance(outcome[0], dc.ClientClosed)


def permission_frames(fake: FakeDaemon) -> list[dict[str, Any]]:
    return [dict(f["message"]) for f in fake.received if f.matches("agent_permission_response")]


def test_respond_to_permission_sends_each_option(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client)
    agent = client.agents.ref("a1")
    agent.respond_to_permission(
        "perm-1", allow=True, selected_action_id="act-2", updated_input={"path": "/tmp/x"}, message="ignored"
    )
    agent.respond_to_permission("perm-2", allow=False, message="not this one", interrupt=True, updated_input={"x": 1})
    agent.respond_to_permission("perm-3", allow=False)
    wait_until(lambda: len(permission_frames(fake)) == 3, BOUND, lambda: f"{permission_frames(fake)}")
    responses = {m["requestId"]: m["response"] for m in permission_frames(fake)}
    assert all(m["agentId"] == "a1" for m in permission_frames(fake))
    assert responses == {
        "perm-1": {"behavior": "allow", "selectedActionId": "act-2", "updatedInput": {"path": "/tmp/x"}},
        "perm-2": {"behavior": "deny", "message": "not this one", "interrupt": True},
        "perm-3": {"behavior": "deny"},
    }


def test_respond_to_permission_waits_for_its_own_confirmation(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client)
    fake.agents.upsert("a2")

    def confirm(ctx) -> None:  # type: ignore[no-untyped-def]
        agent_id, request_id = ctx.message["agentId"], ctx.message["requestId"]
        # Confirmations of another agent and of another request first: neither may count.
        ctx.connection.send_session("agent_permission_resolved", {"agentId": "a2", "requestId": request_id})
        ctx.connection.send_session("agent_permission_resolved", {"agentId": agent_id, "requestId": "other"})
        if request_id == "perm-ok":
            ctx.connection.send_session("agent_permission_resolved", {"agentId": agent_id, "requestId": request_id})

    fake.on_request("agent_permission_response", confirm)
    agent = client.agents.ref("a1")
    agent.respond_to_permission("perm-ok", allow=True, wait=True, timeout=BOUND)
    with pytest.raises(dc.RequestTimeout, match="perm-unconfirmed"):
        agent.respond_to_permission("perm-unconfirmed", allow=True, wait=True, timeout=0.3)


# ----------------------------------------------------------------------------- listeners and releases
def test_the_push_listener_remover_stops_delivery(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client)
    kept: RecordingHandler[dc.SessionMessage] = RecordingHandler("kept")
    removed: RecordingHandler[dc.SessionMessage] = RecordingHandler("removed")
    client.add_push_listener(kept, ["custom"])
    remove = client.add_push_listener(removed, ["custom"])
    fake.push("custom", {"n": 1})
    removed.wait_for(1)
    remove()
    remove()  # idempotent
    fake.push("custom", {"n": 2})
    kept.wait_for(2)
    assert client.flush_callbacks(BOUND)
    assert [m.payload["n"] for m in removed.items] == [1]


class HeldRequests:
    """Holds requests of one type on the fake until released, then lets its handler answer."""

    def __init__(self, fake: FakeDaemon, request_type: str) -> None:
        self._original = fake.registry.handler_for(request_type)
        assert self._original is not None
        self.arrived = threading.Event()
        self._go = threading.Event()
        fake.on_request(request_type, self._handle)

    def _handle(self, ctx) -> None:  # type: ignore[no-untyped-def]
        self.arrived.set()
        self._go.wait(BOUND)
        self._original(ctx)

    def release(self) -> None:
        self._go.set()


def test_releasing_a_timeline_subscription_while_it_is_established_frees_the_daemon_side(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client)
    held = HeldRequests(fake, TIMELINE_REQUEST)
    sub = client.agents.ref("a1").timeline.subscribe(lambda update: None)
    assert held.arrived.wait(BOUND)
    sub.release()  # not acknowledged yet: nothing to release by ID
    with pytest.raises(dc.SubscriptionReleased):
        sub.ready.result(0)
    held.release()  # the daemon creates it now; the client must release it
    fake.wait_for_frame(RELEASE, timeout=BOUND)
    wait_until(lambda: fake.timeline.subscriptions() == [], BOUND, lambda: f"{fake.timeline.subscriptions()}")


def test_releasing_a_directory_observation_while_it_is_reestablished_frees_the_daemon_side(fakes, make_client) -> None:
    fake, client = connected(fakes, make_client)
    observation = client.agents.list(subscribe=True).subscription
    assert observation is not None
    states = StateLog()
    client.on_state_change(states)
    held = HeldRequests(fake, "fetch_agents_request")
    fake.drop_connections()
    assert held.arrived.wait(BOUND)  # the re-establishment after the reconnect
    observation.release()
    held.release()
    states.wait_reconnects(1, timeout=BOUND)
    fake.wait_for_frame(RELEASE, timeout=BOUND)
    wait_until(lambda: fake.directory_observations() == [], BOUND, lambda: f"{fake.directory_observations()}")


@pytest.mark.parametrize("what", ["timeline", "directory"])
def test_a_failing_release_resets_the_connection(fakes, make_client, what: str) -> None:
    fake, client = connected(fakes, make_client)
    if what == "timeline":
        subscription: Any = client.agents.ref("a1").timeline.subscribe(lambda update: None)
        subscription.ready.result(BOUND)
    else:
        subscription = client.agents.list(subscribe=True).subscription
    states = StateLog()
    client.on_state_change(states)
    fake.fail_next(RELEASE)
    subscription.release(timeout=BOUND)  # the daemon's side is unknown now: start afresh
    states.wait_reconnects(1, timeout=BOUND)
    assert fake.accepted_count == 2
    assert any("release failed" in reason for _, _, reason in states.items), states.items


# ----------------------------------------------------------------------------- faults
def test_a_restore_hook_that_raises_harms_neither_the_others_nor_the_connection(fakes, make_client, caplog) -> None:
    fake, client = connected(fakes, make_client)
    calls: list[tuple[str, bool]] = []

    def failing(kind: dc.HostKind, reconnected: bool) -> None:
        calls.append(("failing", reconnected))
        raise RuntimeError("restore hook defect")

    def working(kind: dc.HostKind, reconnected: bool) -> None:
        calls.append(("working", reconnected))

    with pytest.raises(RuntimeError, match="restore hook defect"):  # run now, on this thread
        client._connection.add_hooks(failing)
    client._connection.add_hooks(working)
    states = StateLog()
    client.on_state_change(states)
    fake.drop_connections()
    states.wait_reconnects(1, timeout=BOUND)
    assert calls == [("failing", False), ("working", False), ("failing", True), ("working", True)]
    assert "restoring observations failed" in caplog.text
    assert client.ping(timeout=BOUND).round_trip >= 0


def test_a_callback_executor_that_raises_is_reported_and_later_callbacks_still_run(fakes) -> None:
    fake = fakes()
    errors: list[BaseException] = []
    ran: list[int] = []
    calls = 0

    def executor(fn: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("executor defect")
        fn()

    delivered: RecordingHandler[dc.SessionMessage] = RecordingHandler("delivered")
    client = dc.Client(
        "ws://fake/ws",
        transport_factory=fake.transport_factory,
        callback_executor=executor,
        on_callback_error=errors.append,
    )
    try:
        client.connect()
        client.add_push_listener(lambda m: (ran.append(m.payload["n"]), delivered(m)), ["custom"])
        for n in range(3):
            fake.push("custom", {"n": n})
        delivered.wait_for(2, timeout=BOUND)
        assert client.flush_callbacks(BOUND)
    finally:
        client.close()
    assert len(errors) == 1
    assert isinstance(errors[0], RuntimeError)
    assert len(ran) == 2  # the one the executor dropped is lost, and reported; the others ran


def test_with_client_whose_connect_fails_raises_and_leaves_no_thread(fakes) -> None:
    fake = fakes()
    fake.refuse_connections = True
    client = dc.Client("ws://fake/ws", transport_factory=fake.transport_factory)
    with pytest.raises(dc.ConnectionLost), client:
        pytest.fail("the body must not run")
    assert client.state is dc.ConnectionState.DISPOSED
    assert threads_of(client) == []


def test_dc_connect_whose_connect_fails_raises_and_leaves_no_thread(fakes) -> None:
    fake = fakes()
    fake.refuse_connections = True
    before = set(client_threads())
    with pytest.raises(dc.ConnectionLost):
        dc.connect("ws://fake/ws", transport_factory=fake.transport_factory)
    assert set(client_threads()) <= before
    with pytest.raises(dc.AuthenticationError):  # a terminal failure, on loopback
        dc.connect(fakes(password="right").serve(), password="wrong", timeout=BOUND)
    assert set(client_threads()) <= before
