"""A host's client with other features: the wire trace scrubs every connection's password,
a relay terminal works after a failover, and TLS settings apply to the wss:// connections only."""

from __future__ import annotations

import ssl
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler

from .conftest import HostClientFactory

FIRST, SECOND = "first-password-7c1e", "second-password-2b9d"
CWD = "/home/dev/projects/hosts"


def switched_on(client: dc.Client) -> threading.Event:
    switched = threading.Event()
    client.on_connection_change(lambda previous, _current, _why: switched.set() if previous is not None else None)
    return switched


def test_the_trace_scrubs_every_connections_password(
    fakes: Callable[..., FakeDaemon], host_client: HostClientFactory, tmp_path: Path
) -> None:
    one, two = fakes(server_id="srv-a", password=FIRST), fakes(server_id="srv-a", password=SECOND)
    first = dc.HostConnection(one.serve(), password=FIRST)
    second = dc.HostConnection(f"tcp://127.0.0.1:{two.serve().rsplit(':', 1)[1].split('/')[0]}?password={SECOND}")
    host = dc.Host("laptop", [first, second], preferred=first)
    path = tmp_path / "wire.jsonl"
    client = host_client(host, trace=path)
    switched = switched_on(client)
    client.connect()
    assert client.active_connection is first
    client.ping()
    one.interrupt_loopback(60.0)
    assert switched.wait(15)
    assert client.active_connection is second
    client.ping()
    client.close()
    text = path.read_text()
    assert FIRST not in text
    assert SECOND not in text
    assert text.count('"hello"') >= 2  # both connections' handshakes were traced
    assert "<redacted>" in text


def test_a_relay_terminal_after_a_failover(fakes: Callable[..., FakeDaemon], host_client: HostClientFactory) -> None:
    pytest.importorskip("nacl")
    fake = fakes(server_id="srv-a")
    direct = fake.serve()
    host = dc.Host("laptop", [direct, fake.serve_relay()], preferred=direct)
    client = host_client(host)
    switched = switched_on(client)
    client.connect()
    fake.interrupt_loopback(60.0)
    assert switched.wait(15)
    active = client.active_connection
    assert active is not None
    assert active.kind is dc.discovery.TargetKind.RELAY
    terminal = client.terminals.create(cwd=CWD)
    outputs = RecordingHandler[str]("outputs")
    stream = terminal.stream(on_output=outputs)
    secret = f"typed-{uuid.uuid4().hex[:10]}"
    fake.terminals.type(terminal.id, f"echo {secret}\r")
    match = stream.expect(rf"\n({secret})\r\n")
    assert match.group(1) == secret
    stream.release()


def test_tls_settings_are_for_the_wss_connections_only(
    fakes: Callable[..., FakeDaemon], host_client: HostClientFactory
) -> None:
    """A pinned CA for a host's wss:// connection does not make its ws:// one unusable: the
    ws:// connection is probed and dialled without it."""
    fake = fakes(server_id="srv-a")
    plain = fake.serve()
    host = dc.Host("laptop", ["wss://127.0.0.1:1/ws", plain])
    client = host_client(host, ssl_context=ssl.create_default_context())
    assert client.connect().server_id == "srv-a"
    active = client.active_connection
    assert active is not None
    assert active.url == plain
    probes = {p.connection.url: p for p in client._targets.probes}  # type: ignore[attr-defined]
    assert probes[plain].ok is True
