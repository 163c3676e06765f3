"""Ending a socket: a request for another socket, or for a handshake already done, is ignored;
the first reason given is the one reported; a repeated state is not announced again."""

from __future__ import annotations

import daemon_client as dc
from daemon_client.runtime.handshake import Failure
from daemon_client.state import ConnectionState
from daemon_client.testing import RecordingHandler

StateLog = RecordingHandler[tuple[ConnectionState, ConnectionState, str]]


def test_end_socket_ignores_other_sockets_and_handshaken_ones_when_asked(fakes, make_client) -> None:
    fake = fakes()
    client = make_client(fake, reconnect=dc.ReconnectPolicy(enabled=False))
    client.connect()
    link = client._connection._link
    sock = link.socket
    assert sock is not None
    link.end_socket(Failure(dc.ConnectionLost("not this one")), code=1001, reason="x", only=object())  # type: ignore[arg-type]
    link.end_socket(Failure(dc.ConnectionLost("too late")), code=1001, reason="x", only=sock, unless_handshaken=True)
    client.ping()
    assert client.state is ConnectionState.CONNECTED
    assert sock.failure is None


def test_the_first_reason_to_end_a_socket_is_the_one_reported(fakes, make_client) -> None:
    fake = fakes()
    client = make_client(fake, reconnect=dc.ReconnectPolicy(enabled=False))
    states: StateLog = RecordingHandler("states")
    client.on_state_change(states)
    client.connect()
    link = client._connection._link
    with link.lock:  # both requests reach the socket before the reader sees it end
        sock = link.socket
        assert sock is not None
        sock.failure = Failure(dc.ConnectionLost("first reason"))
    link.end_socket(Failure(dc.ConnectionLost("second reason")), code=1001, reason="x", only=sock)
    states.wait_for(1, predicate=lambda change: change[1] is ConnectionState.DISCONNECTED, timeout=10)
    reasons = [reason for _old, new, reason in states.items if new is ConnectionState.DISCONNECTED]
    assert reasons == ["first reason"]
    assert isinstance(client.last_error, dc.ConnectionLost)
    assert str(client.last_error) == "first reason"


def test_a_state_set_again_is_not_announced_again(fakes, make_client) -> None:
    client = make_client(fakes())
    states: StateLog = RecordingHandler("states")
    client.on_state_change(states)
    link = client._connection._link
    link.set_state(ConnectionState.IDLE, "again")
    client.connect()
    assert [new for _old, new, _reason in states.items][:2] == [ConnectionState.IDLE, ConnectionState.CONNECTING]
