"""The ``serverId`` check: a host's connection that reaches another daemon is refused
(``ServerMismatch``), never merged; an unknown ``serverId`` is learned at the first connection."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon

from .conftest import HostClientFactory, wait_until

SECRET = "pw-of-the-other-daemon"


def sessions(fake: FakeDaemon) -> list[str]:
    return [f["message"]["type"] for f in fake.received if f.get("type") == "session"]


def test_a_direct_address_reaching_another_daemon_is_refused(
    fakes: Callable[..., FakeDaemon], host_client: HostClientFactory
) -> None:
    other = fakes(server_id="srv-b", password=SECRET)
    host = dc.Host("laptop", [dc.HostConnection(other.serve(), password=SECRET)], server_id="srv-a")
    client = host_client(host)
    with pytest.raises(dc.ServerMismatch) as raised:
        client.connect()
    refused = raised.value
    assert isinstance(refused, dc.ConnectionLost)
    assert (refused.expected, refused.found) == ("srv-a", "srv-b")
    message = str(refused)
    assert "'srv-a'" in message
    assert "'srv-b'" in message
    assert "laptop" in message
    assert SECRET not in message
    assert SECRET not in refused.connection
    assert client.state is dc.ConnectionState.DISCONNECTED
    assert client.active_connection is None
    assert client.server_info is None
    assert sessions(other) == []  # nothing was asked of the other daemon
    assert client.host is not None
    assert client.host.server_id == "srv-a"


def test_a_wrong_direct_and_a_right_relay_connect_through_the_relay(
    fakes: Callable[..., FakeDaemon], host_client: HostClientFactory
) -> None:
    pytest.importorskip("nacl")
    right, wrong = fakes(server_id="srv-a"), fakes(server_id="srv-b")
    stale = wrong.serve()
    host = dc.Host("laptop", [stale, right.serve_relay()], preferred=stale)
    assert host.server_id == "srv-a"  # from the relay's offer
    client = host_client(host)
    info = client.connect()
    assert info.server_id == "srv-a"
    active = client.active_connection
    assert active is not None
    assert active.kind is dc.discovery.TargetKind.RELAY
    demoted = {p.connection.id: p for p in client._targets.probes}[host.preferred.id]  # type: ignore[attr-defined,union-attr]
    assert demoted.ok is False
    assert "srv-b" in (demoted.error or "")
    assert set(sessions(wrong)) <= {"ping"}  # only the probe's ping: no session was ever used there


def test_an_unknown_server_id_is_learned_then_another_daemon_refused(
    fakes: Callable[..., FakeDaemon], host_client: HostClientFactory
) -> None:
    first, second = fakes(server_id="srv-a"), fakes(server_id="srv-b")
    url_a, url_b = first.serve(), second.serve()
    host = dc.Host("laptop", [url_a, url_b], preferred=url_a)
    assert host.server_id is None
    client = host_client(host)
    changes: list[tuple[str | None, str]] = []
    client.on_connection_change(lambda previous, current, _why: changes.append((previous and previous.id, current.id)))
    lost = threading.Event()
    client.on_state_change(lambda _old, new, _why: lost.set() if new is dc.ConnectionState.DISCONNECTED else None)
    assert client.connect().server_id == "srv-a"
    assert client.host is not None
    assert client.host.server_id == "srv-a"
    assert client.host.connections == host.connections

    first.interrupt_loopback(60.0)  # only the other daemon answers now
    assert lost.wait(10)
    wait_until(lambda: isinstance(client.last_error, dc.ServerMismatch), 10, "never reached srv-b")
    refused = client.last_error
    assert isinstance(refused, dc.ServerMismatch)
    assert (refused.expected, refused.found) == ("srv-a", "srv-b")
    assert client.state is not dc.ConnectionState.CONNECTED
    assert client.active_connection is None
    assert client.flush_callbacks(5)
    assert changes == [(None, host.connections[0].id)]  # never switched to the other daemon
    assert client.host.server_id == "srv-a"


def test_a_daemon_restarted_as_another_on_the_same_port_is_refused(
    fakes: Callable[..., FakeDaemon], host_client: HostClientFactory
) -> None:
    first = fakes(server_id="srv-a")
    url = first.serve()
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    client = host_client(dc.Host("laptop", [url]))
    client.connect()
    assert client.host is not None
    assert client.host.server_id == "srv-a"
    first.close()
    impostor = fakes(server_id="srv-b")
    impostor.serve(port=port)
    wait_until(lambda: isinstance(client.last_error, dc.ServerMismatch), 15, "never reached the impostor")
    assert client.state is not dc.ConnectionState.CONNECTED
    assert client.server_info is None or client.server_info.server_id == "srv-a"
    assert sessions(impostor) == []
