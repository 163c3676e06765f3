"""Surviving what a daemon or network does: drops, backoff, stalls, bad frames."""

from __future__ import annotations

import random
import threading
import time

import pytest

import daemon_client as dc
from daemon_client.testing import RecordingHandler
from tests.helpers import supervisor_ended

from ..conftest import KINDS, TRANSPORTS


def _wait_state(client: dc.Client, state: dc.ConnectionState, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while client.state is not state:
        assert time.monotonic() < deadline, f"state is {client.state}, expected {state}"
        time.sleep(0.005)


def test_backoff_policy_grows_caps_and_jitters() -> None:
    policy = dc.ReconnectPolicy()
    plain = dc.ReconnectPolicy(jitter=0.0)
    assert [plain.delay(n) for n in range(7)] == [1.5, 3.0, 6.0, 12.0, 24.0, 30.0, 30.0]
    rng = random.Random(7)
    delays = [policy.delay(2, rng) for _ in range(200)]
    assert all(6.0 * 0.8 <= d <= 6.0 * 1.2 for d in delays)
    assert len(set(delays)) > 100  # jittered, not constant
    assert all(policy.delay(30, rng) <= 30.0 for _ in range(50))
    assert plain.delay(10_000) == 30.0
    with pytest.raises(ValueError, match="jitter"):
        dc.ReconnectPolicy(jitter=1.5)
    with pytest.raises(ValueError, match="base_delay"):
        dc.ReconnectPolicy(base_delay=0)


def test_reconnect_attempts_back_off_while_the_daemon_is_away(fakes, make_client) -> None:
    fake = fakes("capable")
    client = make_client(fake, reconnect=dc.ReconnectPolicy(base_delay=0.05, max_delay=0.4, jitter=0.0))
    reasons = RecordingHandler[tuple]("states")
    client.on_state_change(reasons)
    client.connect()
    fake.refuse_connections = True
    fake.drop_connections()
    waits = reasons.wait_for(5, predicate=lambda c: "reconnecting in" in c[2], timeout=10)
    delays = [float(c[2].rsplit("reconnecting in ", 1)[1].split()[0]) for c in waits]
    assert delays[:5] == [0.05, 0.1, 0.2, 0.4, 0.4]
    fake.refuse_connections = False
    _wait_state(client, dc.ConnectionState.CONNECTED)
    attempts = fake.accepted_count
    # Connected: a further attempt needs this connection to end first. A round trip on it, then
    # no state change after CONNECTED once the callbacks are flushed, proves there was none.
    client.ping()
    assert client.flush_callbacks()
    assert reasons.items[-1][1] is dc.ConnectionState.CONNECTED
    assert fake.accepted_count == attempts


def test_close_interrupts_the_reconnect_wait(fakes, make_client) -> None:
    fake = fakes("capable")
    # An hour's delay: a close() that waited it out would outlast the join's bound.
    client = make_client(fake, reconnect=dc.ReconnectPolicy(base_delay=3600, max_delay=3600))
    client.connect()
    fake.drop_connections()
    _wait_state(client, dc.ConnectionState.DISCONNECTED)
    closer = threading.Thread(target=client.close, name="closer")
    closer.start()
    closer.join(30)
    assert not closer.is_alive()
    assert client.state is dc.ConnectionState.DISPOSED


def test_reconnect_disabled_stays_disconnected(fakes, make_client) -> None:
    fake = fakes("capable")
    client = make_client(fake, reconnect=dc.ReconnectPolicy(enabled=False))
    client.connect()
    fake.drop_connections()
    _wait_state(client, dc.ConnectionState.DISCONNECTED)
    assert supervisor_ended(client)  # reconnect disabled: the supervisor gave up
    assert fake.accepted_count == 1
    assert isinstance(client.last_error, dc.ConnectionLost)
    client.connect()  # an explicit connect() tries again
    assert client.state is dc.ConnectionState.CONNECTED


def test_hello_timeout_close_is_retried(fakes, make_client) -> None:
    fake = fakes("capable")
    client = make_client(fake)
    client.connect()
    fake.close_connections(4001, "Hello timeout")
    fake.wait_for_connections(1)
    deadline = time.monotonic() + 10
    while fake.accepted_count < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    _wait_state(client, dc.ConnectionState.CONNECTED)
    assert fake.accepted_count == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_loopback_daemon_restart_is_survived(fakes, make_client, transport: str) -> None:
    fake = fakes("broadcast")
    fake.on_request("echo_request", lambda ctx: ctx.reply({"ok": True}))
    client = make_client(fake, transport)
    client.connect()
    fake.restart(downtime=0.2)
    _wait_state(client, dc.ConnectionState.DISCONNECTED)
    _wait_state(client, dc.ConnectionState.CONNECTED)
    assert client.request({"type": "echo_request"})["ok"] is True


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_heartbeat_detects_a_stalled_daemon_and_reconnects(fakes, make_client, kind: str, transport: str) -> None:
    fake = fakes(kind)
    client = make_client(fake, transport, heartbeat=dc.Heartbeat(interval=0.05, timeout=0.1, max_misses=2))
    states = RecordingHandler[tuple]("states")
    client.on_state_change(states)
    client.connect()
    pings = fake.wait_for_frame("ping")
    assert pings == {"type": "ping"}
    fake.answer_pings = False
    lost = states.wait_for(predicate=lambda c: c[1] is dc.ConnectionState.DISCONNECTED, timeout=10)[0]
    assert "Heartbeat timeout" in lost[2]
    fake.answer_pings = True
    states.wait_for(2, predicate=lambda c: c[1] is dc.ConnectionState.CONNECTED, timeout=10)
    assert fake.accepted_count == 2


def test_heartbeat_keeps_a_healthy_connection(fakes, make_client) -> None:
    fake = fakes("capable")
    client = make_client(fake, heartbeat=dc.Heartbeat(interval=0.02, timeout=0.5))
    client.connect()
    deadline = time.monotonic() + 10  # five heartbeat rounds, each answered, however long they take
    while sum(1 for f in fake.received if f.get("type") == "ping") < 5:
        assert time.monotonic() < deadline, "fewer than 5 heartbeat pings"
        time.sleep(0.01)
    client.ping()  # a round trip after them: the same connection still carries requests
    assert client.state is dc.ConnectionState.CONNECTED
    assert fake.accepted_count == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_malformed_and_unknown_frames_are_survived(fakes, make_client, kind, transport, caplog) -> None:
    fake = fakes(kind)
    fake.on_request("echo_request", lambda ctx: ctx.reply({"ok": True}))
    client = make_client(fake, transport)
    pushes = RecordingHandler[dc.SessionMessage]("pushes")
    client.add_push_listener(pushes)
    client.connect()
    fake.send_raw("this is not json")
    fake.send_raw(b"\x00\x01binary", binary=True)  # invalid UTF-8 fails the connection: test_bad_input.py
    fake.send_raw('{"type":"brand_new_top_level","x":1}')
    fake.send_raw('{"type":"session","message":{"type":"brand_new_push","payload":{"a":1}}}')
    fake.send_raw('{"type":"session","message":{"type":"agent_update","payload":[1,2]}}')
    fake.send_raw('{"type":"session","message":{"type":"status","payload":{"status":"error","message":"Invalid"}}}')
    fake.push("after_the_noise", {"n": 1})
    received = pushes.wait_for(predicate=lambda m: m.type == "after_the_noise")
    assert received[0].payload == {"n": 1}
    assert pushes.items[0].type == "brand_new_push"
    assert client.request({"type": "echo_request"})["ok"] is True
    assert client.state is dc.ConnectionState.CONNECTED
    assert fake.accepted_count == 1
    text = caplog.text
    assert "malformed frame" in text
    assert "binary frame" in text


def test_oversized_frames_are_skipped(fakes, make_client, caplog) -> None:
    fake = fakes("capable")
    client = make_client(fake, "loopback", max_frame_bytes=5000)
    pushes = RecordingHandler[dc.SessionMessage]("pushes")
    client.add_push_listener(pushes)
    client.connect()
    fake.push("big", {"blob": "x" * 20000})
    fake.push("small", {"n": 1})
    assert pushes.wait_for(predicate=lambda m: m.type == "small")
    assert [m.type for m in pushes.items] == ["small"]
    assert "exceeds 5000 bytes" in caplog.text


@pytest.mark.parametrize("kind", KINDS)
def test_restore_hooks_run_after_each_handshake_before_queued_requests(fakes, make_client, kind: str) -> None:
    """The hook later observations use to re-establish themselves after every reconnect."""
    fake = fakes(kind)
    fake.on_request("echo_request", lambda ctx: ctx.reply({"echo": ctx.message.get("value")}))
    client = make_client(fake)
    calls: list[tuple[dc.HostKind, bool]] = []
    futures = []

    def hook(host_kind: dc.HostKind, reconnected: bool) -> None:
        calls.append((host_kind, reconnected))
        futures.append(client._connection.submit({"type": "echo_request", "value": "restore"}, 5, direct=True))

    client._connection.add_hooks(hook)
    client.connect()
    assert futures[0].result(5)["echo"] == "restore"
    fake.drop_connections()
    _wait_state(client, dc.ConnectionState.DISCONNECTED)
    _wait_state(client, dc.ConnectionState.CONNECTED)
    assert calls == [(dc.HostKind(kind), False), (dc.HostKind(kind), True)]
    assert [f.result(5)["echo"] for f in futures] == ["restore", "restore"]


def test_low_app_version_is_warned_about(fakes, make_client, caplog) -> None:
    make_client(fakes("broadcast"), app_version="0.1.40")
    assert "below 0.1.45" in caplog.text
    caplog.clear()
    make_client(fakes("broadcast"), app_version="0.1.65-beta.5")
    assert "below 0.1.45" not in caplog.text
