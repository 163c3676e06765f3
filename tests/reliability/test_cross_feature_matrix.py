"""The cross-feature matrix: every transport × frame kind × trace × host kind cell.

transport {websocket, unix socket, relay (the fake relay, end-to-end encrypted), a host of a direct
and a relay connection (probed, the direct one preferred), in memory} ×
frame kind {JSON text, binary terminal output, binary terminal input} × trace {off, on} ×
host kind {capable, broadcast}. Each cell delivers every frame of its kind, and with the trace
on, the trace holds no secret in any frame kind: neither the client's password nor what was
typed into or printed by a terminal (binary payloads are recorded by their first two bytes).
Where two features meet, the defects were; each cell is one such meeting.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler

TRANSPORTS = ["websocket", "unix", "relay", "host", "memory"]
FRAME_KINDS = ["json", "terminal_output", "terminal_input"]
TRACES = ["trace_off", "trace_on"]
HOSTS = ["capable", "broadcast"]
CWD = "/home/dev/projects/matrix"
PASSWORD = "matrix-password-8d1f"


def _client(fake: FakeDaemon, transport: str, tmp_path: Path, **options: Any) -> dc.Client:
    options.update(strict=True, connect_timeout=10.0)
    options["reconnect"] = dc.ReconnectPolicy(base_delay=0.05, max_delay=0.2, stable_after=0.5)
    if transport == "websocket":
        return dc.Client(fake.serve(allow_insecure_password=True), password=PASSWORD, **options)
    if transport == "unix":
        return dc.Client(fake.serve(unix_path=str(tmp_path / "daemon.sock")), password=PASSWORD, **options)
    if transport == "relay":  # the pairing offer is the credential: no password travels
        return dc.Client(fake.serve_relay(), **options)
    if transport == "host":  # the direct connection carries the password, the relay none
        direct = dc.HostConnection(fake.serve(allow_insecure_password=True), password=PASSWORD)
        return dc.Client(dc.Host("matrix", [fake.serve_relay(), direct], preferred=direct), **options)
    return dc.Client("ws://fake-daemon/ws", transport_factory=fake.transport_factory, password=PASSWORD, **options)


@pytest.fixture
def cell(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[FakeDaemon, dc.Client, Path | None]]:
    params = request.node.callspec.params
    transport, host, traced = params["transport"], params["host"], params["trace"] == "trace_on"
    if transport in ("relay", "host"):
        pytest.importorskip("nacl")
    fake = FakeDaemon(host_kind=dc.HostKind(host), password=None if transport == "relay" else PASSWORD)
    trace = tmp_path / "trace.jsonl" if traced else None
    client = _client(fake, transport, tmp_path, trace=str(trace) if trace else None)
    try:
        client.connect()
        yield fake, client, trace
    finally:
        client.close()
        fake.close()


def _secrets_in(trace: Path, secrets: list[str]) -> list[str]:
    """Every secret found in the trace: as text, or inside a recorded binary payload."""
    text = trace.read_text(encoding="utf-8")
    found = [secret for secret in secrets if secret in text]
    for line in text.splitlines():
        frame = json.loads(line).get("frame")
        if not isinstance(frame, dict) or "binary" not in frame:
            continue
        try:
            payload = base64.b64decode(frame["base64"]) if "base64" in frame else bytes.fromhex(frame.get("hex", ""))
        except (binascii.Error, ValueError):
            continue
        found += [secret for secret in secrets if secret.encode() in payload]
    return found


def _json_cell(fake: FakeDaemon, client: dc.Client) -> list[str]:
    pushes = RecordingHandler[dc.SessionMessage]("pushes")
    client.add_push_listener(pushes)
    token = f"push-{uuid.uuid4().hex[:8]}"
    for n in range(3):
        fake.push("matrix_push", {"n": n, "token": token})
    got = pushes.wait_for(3, predicate=lambda m: m.type == "matrix_push")
    assert [m.payload["n"] for m in got] == [0, 1, 2]
    client.ping()
    return [PASSWORD]


def _terminal_cell(fake: FakeDaemon, client: dc.Client, kind: str) -> list[str]:
    terminal = client.terminals.create(cwd=CWD)
    outputs = RecordingHandler[str]("outputs")
    stream = terminal.stream(on_output=outputs)
    secret = f"typed-{uuid.uuid4().hex[:10]}"
    if kind == "terminal_input":
        terminal.write(f"echo {secret}\r")  # a binary Input frame on the stream's slot
        stream.expect(f"\n{secret}\r\n")
        assert [i.via for i in fake.terminals.inputs if i.kind == "input"] == ["binary"]
        assert fake.terminals.inputs[-1].data == f"echo {secret}\r"
    else:
        fake.terminals.type(terminal.id, f"echo {secret}\r")  # typed on the daemon's side: output only
        match = stream.expect(rf"\n({secret})\r\n")
        assert match.group(1) == secret
    assert secret in "".join(outputs.wait_for(predicate=lambda text: secret in text and text.count(secret) >= 1))
    stream.release()
    return [PASSWORD, secret]


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("trace", TRACES)
@pytest.mark.parametrize("kind", FRAME_KINDS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_cell_delivers_its_frames_and_traces_no_secret(
    cell: tuple[FakeDaemon, dc.Client, Path | None], transport: str, kind: str, trace: str, host: str
) -> None:
    fake, client, trace_path = cell
    secrets = _json_cell(fake, client) if kind == "json" else _terminal_cell(fake, client, kind)
    assert client.state is dc.ConnectionState.CONNECTED
    sessions = [f for f in fake.received if f.get("type") == "hello" and f.get("clientId") == client.client_id]
    assert len(sessions) == 1, "a frame of this cell cost a reconnect"  # a host's probes are other clients
    if trace_path is not None:
        client.close()  # the trace is complete once the client is closed
        assert trace_path.stat().st_size > 0
        assert _secrets_in(trace_path, secrets) == []
        recorded = [json.loads(line) for line in trace_path.read_text(encoding="utf-8").splitlines()]
        frames = [line["frame"] for line in recorded if isinstance(line.get("frame"), dict)]
        if kind == "json":
            assert any(f.get("message", {}).get("type") == "matrix_push" for f in frames)
        else:  # the binary frames of the stream are in the trace, by their heads
            heads = [f for f in frames if "binary" in f]
            wanted = "02" if kind == "terminal_input" else "01"
            assert any(f["hex"].startswith(wanted) and f["payload"] == "omitted" for f in heads), heads
