"""A daemon on a unix socket: requests, observations, a restart that moves it, and the transport's
timeouts, abort and close; named pipes fail with a clear error."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler
from daemon_client.transport import ConnectParams, TransportError, WebSocketTransport
from daemon_client.transport.unix import open_unix_socket

FAST = dc.ReconnectPolicy(base_delay=0.05, max_delay=0.2, stable_after=0.5)


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    """A short directory for sockets (unix socket paths are limited to about 100 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="dc-", dir="/tmp" if os.path.isdir("/tmp") else None))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, sock_dir: Path) -> Path:
    for name in ("PASEO_HOST", "PASEO_LISTEN", "PASEO_URL", "PASEO_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    path = sock_dir / "home"
    path.mkdir()
    monkeypatch.setenv("PASEO_HOME", str(path))
    return path


@pytest.fixture
def clients() -> Iterator[list[dc.Client]]:
    made: list[dc.Client] = []
    yield made
    for client in made:
        client.close()


def write_pid(home: Path, listen: str) -> None:
    """What the daemon writes once it listens (replacing the file of its previous run)."""
    lock = {"pid": os.getpid(), "startedAt": "now", "hostname": socket.gethostname(), "uid": 0, "listen": listen}
    temporary = home / "paseo.pid.tmp"
    temporary.write_text(json.dumps(lock), encoding="utf-8")
    temporary.replace(home / "paseo.pid")


def test_requests_and_observations_over_a_unix_socket(fakes, sock_dir: Path, clients) -> None:
    fake = fakes("capable")
    fake.on_request("echo_request", lambda ctx: ctx.reply({"echo": ctx.message.get("value")}))
    url = fake.serve(unix_path=str(sock_dir / "daemon.sock"))
    assert url == f"unix://{sock_dir / 'daemon.sock'}"
    assert fake.url == url
    client = dc.Client(url, strict=True, reconnect=FAST)
    clients.append(client)
    info = client.connect()
    assert info.server_id == "srv-fake"
    assert client.url == url
    assert client.request({"type": "echo_request", "value": "über"})["echo"] == "über"
    assert client.ping().round_trip is not None
    hello = fake.wait_for_frame("hello")
    assert {name.lower(): value for name, value in hello.connection.headers.items()}["host"] == "localhost"

    snapshots = RecordingHandler[dc.AgentListResult]("snapshots")
    updates = RecordingHandler[dc.DirectoryMessage[dc.AgentUpdate]]("updates")
    directory = client.agents.list(subscribe=True)
    directory.subscription.subscribe(snapshot=snapshots, update=updates)
    snapshots.wait_for(1)
    agent = fake.agents.upsert(title="Over the socket")
    assert updates.wait_for(1)[0].payload.agent_id == agent["id"]


def test_a_restart_that_moves_the_socket_is_followed_through_the_pid_file(
    fakes, sock_dir: Path, home: Path, clients
) -> None:
    fake = fakes("capable")
    first, second = sock_dir / "first.sock", sock_dir / "second.sock"
    write_pid(home, str(first))
    fake.serve(unix_path=str(first))
    client = dc.Client(strict=True, reconnect=FAST)
    clients.append(client)
    states = RecordingHandler[tuple[dc.ConnectionState, dc.ConnectionState, str]]("states")
    client.on_state_change(states)
    client.connect()
    assert (client.url, client.resolution.source) == (f"unix://{first}", "pid file")
    snapshots = RecordingHandler[dc.AgentListResult]("snapshots")
    client.agents.list(subscribe=True).subscription.subscribe(snapshot=snapshots)
    snapshots.wait_for(1)

    write_pid(home, str(second))
    fake.restart(unix_path=str(second))
    states.wait_for(2, predicate=lambda change: change[1] is dc.ConnectionState.CONNECTED, timeout=10)
    assert client.url == f"unix://{second}"
    assert not first.exists()  # the old socket is gone: only the new pid file could lead here
    before, after = snapshots.wait_for(2, timeout=10)[:2]
    assert after.subscription_id != before.subscription_id
    fake.on_request("echo_request", lambda ctx: ctx.reply({"ok": True}))
    assert client.request({"type": "echo_request"})["ok"] is True


def test_a_restart_on_another_port_is_followed_through_the_pid_file(fakes, home: Path, clients) -> None:
    fake = fakes("capable")
    write_pid(home, fake.serve().split("//", 1)[1].removesuffix("/ws"))
    client = dc.Client(strict=True, reconnect=FAST)
    clients.append(client)
    states = RecordingHandler[tuple[dc.ConnectionState, dc.ConnectionState, str]]("states")
    client.on_state_change(states)
    client.connect()
    old_url = client.url
    fake.restart(port=0)  # listens again on a new port; until the pid file says so, attempts fail
    new_url = fake.url
    write_pid(home, new_url.split("//", 1)[1].removesuffix("/ws"))
    states.wait_for(2, predicate=lambda change: change[1] is dc.ConnectionState.CONNECTED, timeout=10)
    assert client.url == new_url != old_url


def test_an_explicit_address_is_not_looked_up_again(fakes, sock_dir: Path, home: Path, clients) -> None:
    fake = fakes("capable")
    url = fake.serve(unix_path=str(sock_dir / "given.sock"))
    write_pid(home, str(sock_dir / "elsewhere.sock"))
    client = dc.Client(url, strict=True, reconnect=FAST)
    clients.append(client)
    states = RecordingHandler[tuple[dc.ConnectionState, dc.ConnectionState, str]]("states")
    client.on_state_change(states)
    client.connect()
    fake.restart()
    states.wait_for(2, predicate=lambda change: change[1] is dc.ConnectionState.CONNECTED, timeout=10)
    assert client.url == url


def test_a_missing_socket_is_a_clear_connect_error(sock_dir: Path, clients) -> None:
    client = dc.Client(str(sock_dir / "nobody.sock"), connect_timeout=5)
    clients.append(client)
    with pytest.raises(dc.ConnectionLost, match=r"Cannot connect to unix:///.*nobody\.sock: No such file"):
        client.connect()
    assert client.state is dc.ConnectionState.DISCONNECTED


def test_a_socket_nobody_listens_on_is_refused(sock_dir: Path) -> None:
    path = sock_dir / "stale.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))  # bound, never listening: what a crashed daemon leaves behind
    transport = WebSocketTransport()
    with pytest.raises(TransportError, match="refused"):
        transport.connect(ConnectParams(url="ws://localhost/ws", timeout=5, unix_socket=str(path)))
    transport.close()


def test_unix_sockets_where_the_platform_has_none_fail_naming_the_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(socket, "AF_UNIX", raising=False)
    with pytest.raises(OSError, match=r"unix sockets are not available on this platform \(/run/paseo.sock\)"):
        open_unix_socket("/run/paseo.sock", 1.0)


def _silent_server(path: Path) -> tuple[socket.socket, threading.Event, list[socket.socket]]:
    """A unix socket that accepts connections and never answers the upgrade."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)
    accepted = threading.Event()
    peers: list[socket.socket] = []

    def accept() -> None:
        try:
            peers.append(server.accept()[0])
            accepted.set()
        except OSError:
            pass

    threading.Thread(target=accept, name="silent-accept", daemon=True).start()
    return server, accepted, peers


def test_an_unanswered_upgrade_times_out(sock_dir: Path) -> None:
    server, accepted, peers = _silent_server(sock_dir / "silent.sock")
    transport = WebSocketTransport()
    try:
        with pytest.raises(TimeoutError, match=r"no WebSocket connection within 0\.3 s"):
            transport.connect(
                ConnectParams(url="ws://localhost/ws", timeout=0.3, unix_socket=str(sock_dir / "silent.sock"))
            )
        assert accepted.is_set()
    finally:
        transport.close()
        server.close()
        for peer in peers:
            peer.close()


def test_abort_ends_an_upgrade_in_progress(sock_dir: Path) -> None:
    server, accepted, peers = _silent_server(sock_dir / "silent.sock")
    transport = WebSocketTransport()
    outcome: list[BaseException] = []

    def connect() -> None:
        try:
            transport.connect(
                ConnectParams(url="ws://localhost/ws", timeout=30, unix_socket=str(sock_dir / "silent.sock"))
            )
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=connect, name="test-connect")
    thread.start()
    try:
        assert accepted.wait(5)
        transport.abort()
        thread.join(5)
        assert not thread.is_alive()
        assert len(outcome) == 1
        assert isinstance(outcome[0], TransportError)
    finally:
        server.close()
        for peer in peers:
            peer.close()


def test_close_sends_a_close_frame_over_the_socket(fakes, sock_dir: Path) -> None:
    fake: FakeDaemon = fakes("capable")
    fake.serve(unix_path=str(sock_dir / "daemon.sock"))
    client = dc.Client(f"unix://{sock_dir / 'daemon.sock'}", strict=True)
    try:
        client.connect()
        connection = fake.wait_for_frame("hello").connection
    finally:
        client.close()
    assert connection.ended.wait(5)
    assert connection.peer_close_code == 1000
    assert client.state is dc.ConnectionState.DISPOSED


def test_the_fake_replaces_a_stale_socket_file_and_removes_its_own(sock_dir: Path) -> None:
    path = sock_dir / "daemon.sock"
    with socket.socket(socket.AF_UNIX) as leftover:
        leftover.bind(str(path))
    with FakeDaemon() as fake:
        fake.serve(unix_path=str(path))
        with dc.connect(fake.url, strict=True) as client:
            assert client.server_info is not None
    assert not path.exists()
    regular = sock_dir / "regular-file"
    regular.write_text("keep me", encoding="utf-8")
    with FakeDaemon() as fake, pytest.raises(OSError, match="in use"):
        fake.serve(unix_path=str(regular))
    assert regular.read_text(encoding="utf-8") == "keep me"


@pytest.mark.parametrize("address", ["pipe://paseo", "\\\\.\\pipe\\paseo"])
@pytest.mark.parametrize("retry", [False, True])
def test_named_pipes_fail_with_the_limitation_and_the_tcp_alternative(address: str, retry: bool, clients) -> None:
    client = dc.Client(address, reconnect=dc.ReconnectPolicy(retry_initial_connect=retry, base_delay=0.05))
    clients.append(client)
    assert client.url == "pipe://paseo"
    with pytest.raises(dc.ConnectionLost, match=r"Windows named pipe.*PASEO_LISTEN=127\.0\.0\.1:6767.*localhost:6767"):
        client.connect()
    assert client.state is dc.ConnectionState.DISCONNECTED
