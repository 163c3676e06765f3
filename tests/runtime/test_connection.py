"""``Connection``: connect timeouts, sends in each state, reset and close-time releases."""

from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.state import ConnectionState
from daemon_client.testing import RecordingHandler

StateLog = RecordingHandler[tuple[ConnectionState, ConnectionState, str]]


def _states(client: dc.Client) -> StateLog:
    log: StateLog = RecordingHandler("states")
    client.on_state_change(log)
    return log


def test_connect_gives_up_waiting_after_its_own_timeout(fakes, make_client) -> None:
    fake = fakes()
    fake.stall_handshake = True
    client = make_client(fake)
    with pytest.raises(dc.ConnectTimeout, match=r"^no connection to ws://fake-daemon/ws within 0\.05 s$"):
        client.connect(timeout=0.05)


def test_connect_when_connected_returns_the_cached_server_info(fakes, make_client) -> None:
    fake = fakes()
    client = make_client(fake)
    first = client.connect()
    assert client.connect() is first
    assert fake.accepted_count == 1


def test_reset_transport_drops_the_socket_and_the_client_reconnects(fakes, make_client) -> None:
    fake = fakes()
    client = make_client(fake)
    states = _states(client)
    client.connect()
    client._connection.reset_transport("observation state unknown")
    states.wait_for(2, predicate=lambda change: change[1] is ConnectionState.CONNECTED, timeout=10)
    lost = [reason for _old, new, reason in states.items if new is ConnectionState.DISCONNECTED]
    assert lost[0].startswith("observation state unknown; reconnecting in ")
    assert fake.accepted_count == 2


def test_messages_need_a_connection_and_refuse_bad_request_ids(fakes, make_client) -> None:
    fake = fakes()
    client = make_client(fake)
    connection = client._connection
    with pytest.raises(dc.NotConnected, match=r"Transport not connected \(status: idle\)"):
        connection.send_message({"type": "note"})
    with pytest.raises(dc.NotConnected, match="Transport not connected"):
        connection.send_binary(b"\x01")
    client.connect()
    for message in ({}, {"type": ""}, {"type": 3}):
        with pytest.raises(ValueError, match="a request message needs a non-empty 'type'"):
            connection.submit(message, 5)
    for bad in ("", 7):
        with pytest.raises(ValueError, match="requestId must be a non-empty string"):
            connection.submit({"type": "ping_request", "requestId": bad}, 5)
    connection.send_message({"type": "custom_note", "value": 1})
    connection.send_binary(b"\x00\x01")
    note = fake.wait_for_frame("custom_note")
    assert note["message"]["value"] == 1
    assert fake.wait_for_frame(lambda frame: frame.get("binary") == 2)
    client.close()
    with pytest.raises(dc.ClientClosed, match="disposed"):
        connection.send_message({"type": "note"})


def test_releases_at_close_are_awaited_and_a_failing_one_is_logged(fakes, make_client, caplog) -> None:
    fake = fakes()
    client = make_client(fake)
    unanswered: Future[Any] = Future()
    released: list[dc.HostKind] = []

    def release(kind: dc.HostKind) -> list[Future[Any]]:
        released.append(kind)
        return [unanswered]

    def broken_release(kind: dc.HostKind) -> list[Future[Any]]:
        raise RuntimeError("release bug")

    connection = client._connection
    connection.add_hooks(lambda kind, reconnected: None, close=release)
    connection.add_hooks(lambda kind, reconnected: None, close=broken_release)
    connection.add_hooks(lambda kind, reconnected: None)
    client.connect()
    client.close(timeout=0.2)
    assert released == [dc.HostKind("capable")]
    messages = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert (logging.ERROR, "releasing observations at close failed") in messages
    assert (logging.INFO, "1 releases unanswered at close; the daemon releases them on disconnect") in messages
    assert client.state is ConnectionState.DISPOSED
