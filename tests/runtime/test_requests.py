"""Requests: correlation, rpc_error (and what its message names), timeouts, queuing while
connecting, failure on drop and close."""

from __future__ import annotations

import logging
import time
from concurrent.futures import wait
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import RequestContext

from ..conftest import KINDS, TRANSPORTS, BackgroundConnect

FRAMES_LOG = "daemon_client.connection.frames"


def _echo(ctx: RequestContext) -> None:
    ctx.reply({"echo": ctx.message.get("value")})


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_request_response_and_rpc_error(fakes, make_client, kind: str, transport: str) -> None:
    fake = fakes(kind)
    fake.on_request("echo_request", _echo)
    client = make_client(fake, transport)
    client.connect()
    assert client.request({"type": "echo_request", "value": 42}) == {"requestId": "req-1", "echo": 42}
    pong = client.ping()
    assert pong.round_trip is not None
    assert pong.round_trip >= 0
    assert pong.client_sent_at is not None
    with pytest.raises(dc.RpcError) as info:
        client.request({"type": "no_such_request"})
    assert info.value.code == "unknown_schema"
    assert info.value.request_type == "no_such_request"
    fake.fail_next("echo_request", error="boom", code="handler_error")
    with pytest.raises(dc.RpcError, match="boom") as failed:
        client.request({"type": "echo_request", "value": 1})
    assert failed.value.code == "handler_error"
    assert client.request({"type": "echo_request", "value": 2})["echo"] == 2  # connection kept


@pytest.mark.parametrize(
    ("options", "text"),
    [
        ({}, "boom"),
        ({"code": "handler_error"}, "boom (code=handler_error)"),
        ({"request_type": "fetch_agent_request"}, "boom (request=fetch_agent_request)"),
        ({"code": "c", "request_type": "r"}, "boom (code=c, request=r)"),
    ],
)
def test_an_rpc_error_message_names_only_the_code_and_request_it_knows(options: dict[str, Any], text: str) -> None:
    assert str(dc.RpcError("boom", **options)) == text


def test_request_frame_is_wrapped_and_ids_are_unique(fakes, make_client) -> None:
    fake = fakes("capable")
    fake.on_request("echo_request", _echo)
    client = make_client(fake)
    client.connect()
    futures = [client.request_async({"type": "echo_request", "value": n}) for n in range(50)]
    done, _ = wait(futures, timeout=10)
    assert len(done) == 50
    assert [f.result()["echo"] for f in futures] == list(range(50))
    frames = [f for f in fake.received if f.get("type") == "session"]
    ids = [f["message"]["requestId"] for f in frames]
    assert len(set(ids)) == len(ids)
    assert frames[0]["message"] == {"type": "echo_request", "value": 0, "requestId": ids[0]}


def test_caller_supplied_request_id_is_kept(fakes, make_client) -> None:
    fake = fakes("capable")
    fake.on_request("echo_request", _echo)
    client = make_client(fake)
    client.connect()
    assert client.request({"type": "echo_request", "requestId": "mine-1", "value": 1})["requestId"] == "mine-1"
    with pytest.raises(ValueError, match="type"):
        client.request({"value": 1})


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_timeout_then_late_reply_is_dropped(fakes, make_client, transport: str) -> None:
    fake = fakes("capable")
    replies: list[RequestContext] = []
    fake.on_request("slow_request", replies.append)
    fake.on_request("echo_request", _echo)
    client = make_client(fake, transport)
    client.connect()
    with pytest.raises(dc.RequestTimeout) as info:
        client.request({"type": "slow_request"}, timeout=0.2)
    assert info.value.request_type == "slow_request"
    assert info.value.timeout == 0.2
    assert "slow_request" in str(info.value)
    replies[0].reply({"late": True})  # dropped: nobody waits for it any more
    assert client.request({"type": "echo_request", "value": 3})["echo"] == 3
    assert client.state is dc.ConnectionState.CONNECTED


def test_request_async_times_out_without_anyone_waiting(fakes, make_client) -> None:
    fake = fakes("capable")
    fake.ignore("never_request")
    client = make_client(fake)
    client.connect()
    future = client.request_async({"type": "never_request"}, timeout=0.1)
    assert isinstance(future.exception(timeout=5), dc.RequestTimeout)


def test_reply_of_the_wrong_type_fails_that_request(fakes, make_client) -> None:
    fake = fakes("capable")
    fake.on_request("thing_request", lambda ctx: ctx.reply({"x": 1}, type="other_response"))
    client = make_client(fake)
    client.connect()
    with pytest.raises(dc.ProtocolError, match="other_response"):
        client.request({"type": "thing_request"})


def test_unknown_and_duplicate_request_ids_are_ignored(fakes, make_client) -> None:
    fake = fakes("capable")

    def twice(ctx: RequestContext) -> None:
        ctx.reply({"n": 1})
        ctx.reply({"n": 2})

    fake.on_request("twice_request", twice)
    fake.on_request("echo_request", _echo)
    client = make_client(fake)
    client.connect()
    fake.push("twice_response", {"requestId": "nobody-asked", "n": 0})
    assert client.request({"type": "twice_request"})["n"] == 1
    assert client.request({"type": "echo_request", "value": 5})["echo"] == 5


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_pending_requests_fail_with_connection_lost_and_client_reconnects(fakes, make_client, kind, transport) -> None:
    fake = fakes(kind)
    fake.ignore("slow_request")
    fake.on_request("echo_request", _echo)
    client = make_client(fake, transport)
    states: list[tuple[dc.ConnectionState, str]] = []
    client.on_state_change(lambda old, new, reason: states.append((new, reason)))
    client.connect()
    pending = [client.request_async({"type": "slow_request"}, timeout=30) for _ in range(3)]
    fake.wait_for_frame(lambda f: f.get("message", {}).get("type") == "slow_request")
    fake.drop_connections()
    for future in pending:
        error = future.exception(timeout=5)
        assert isinstance(error, dc.ConnectionLost)
        assert error.code == "DAEMON_CONNECTION_LOST"
    fake.wait_for_connections(1, timeout=10)
    deadline = time.monotonic() + 10
    while client.state is not dc.ConnectionState.CONNECTED and time.monotonic() < deadline:
        time.sleep(0.01)
    assert client.request({"type": "echo_request", "value": 7})["echo"] == 7
    assert client.flush_callbacks()
    seen = [state for state, _ in states]
    assert seen[:3] == [dc.ConnectionState.IDLE, dc.ConnectionState.CONNECTING, dc.ConnectionState.CONNECTED]
    assert dc.ConnectionState.DISCONNECTED in seen
    assert seen[-1] is dc.ConnectionState.CONNECTED
    assert any("reconnecting in" in reason for _, reason in states)
    assert states[-1][1] == "reconnected"


def test_requests_while_connecting_wait_and_are_sent_after_the_handshake(fakes, make_client, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger=FRAMES_LOG)
    fake = fakes("capable")
    fake.stall_handshake = True
    fake.on_request("echo_request", _echo)
    client = make_client(fake)
    connecting = BackgroundConnect(client)
    hello = fake.wait_for_frame("hello")
    assert client.state is dc.ConnectionState.CONNECTING
    queued = client.request_async({"type": "echo_request", "value": "queued"}, timeout=10)
    # request_async() decides before it returns: written at once (and logged), or queued until
    # the handshake. It was queued, unsent: nothing can reach the daemon before server_info.
    assert not [r for r in caplog.records if r.name == FRAMES_LOG and "echo_request" in r.getMessage()]
    assert [(e.request_type, e.sent_at) for e in client._requests._queued] == [("echo_request", None)]
    assert not queued.done()
    hello.connection.send_frame({"type": "session", "message": {"type": "status", "payload": fake.server_info}})
    assert queued.result(timeout=5)["echo"] == "queued"
    assert client._requests._queued == []  # written after the handshake
    assert isinstance(connecting.result(), dc.ServerInfo)
    assert client.state is dc.ConnectionState.CONNECTED


def test_queued_request_times_out_if_the_handshake_never_completes(fakes, make_client) -> None:
    fake = fakes("capable")
    fake.stall_handshake = True
    client = make_client(fake, connect_timeout=0.5)
    connecting = BackgroundConnect(client)
    fake.wait_for_frame("hello")
    with pytest.raises(dc.RequestTimeout, match="waiting for the connection"):
        client.request({"type": "echo_request"}, timeout=0.1)
    assert isinstance(connecting.result(), dc.ConnectTimeout)


def test_requests_when_idle_disconnected_or_closed(fakes, make_client) -> None:
    fake = fakes("capable", password="pw")
    client = make_client(fake, password="bad")
    with pytest.raises(dc.NotConnected, match="idle"):
        client.request({"type": "echo_request"})
    with pytest.raises(dc.AuthenticationError):
        client.connect()
    with pytest.raises(dc.NotConnected, match="disconnected"):
        client.request_async({"type": "echo_request"})
    client.close()
    with pytest.raises(dc.ClientClosed, match="disposed"):
        client.request({"type": "echo_request"})
    with pytest.raises(dc.ClientClosed):
        client.connect()


def test_close_fails_pending_requests_with_client_closed(fakes, make_client) -> None:
    fake = fakes("capable")
    fake.ignore("slow_request")
    client = make_client(fake)
    client.connect()
    pending = client.request_async({"type": "slow_request"}, timeout=30)
    fake.wait_for_frame(lambda f: f.get("message", {}).get("type") == "slow_request")
    client.close()
    error = pending.exception(timeout=5)
    assert isinstance(error, dc.ClientClosed)
    assert str(error) == "Daemon client closed"
    assert client.state is dc.ConnectionState.DISPOSED
    client.close()  # idempotent


def test_close_sends_a_normal_close_frame(fakes, make_client) -> None:
    fake = fakes("capable")
    client = make_client(fake, "loopback")
    client.connect()
    connection = fake.wait_for_connections(1)[0]
    client.close()
    deadline = time.monotonic() + 5
    while connection.peer_close_code is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert connection.peer_close_code == 1000
    assert connection.peer_close_reason == "Client closed"
