"""The wire trace: ``Client(trace=...)``, ``DAEMON_CLIENT_TRACE`` and ``--trace`` write every
frame in and out in the transcript format, never a credential, without holding up the reader."""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.cli.main import main as cli_main
from daemon_client.testing import FakeDaemon, RecordingHandler, ReplayDaemon
from daemon_client.transport.base import Transport
from daemon_client.transport.trace import TRACE_ENV, TracingTransport, open_trace
from daemon_client.transport.trace_scrub import REDACTED

from ..conftest import TRANSPORTS

PASSWORD = "s3cret-Token-9f2"
PROXY = "Basic cHJveHktdXNlcjpwcm94eS1wYXNz"
URL_TOKEN = "url-token-77aa"


def lines_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def frames(lines: list[dict[str, Any]], direction: str) -> list[dict[str, Any]]:
    return [line["frame"] for line in lines if line["dir"] == direction and "frame" in line]


def inner_types(lines: list[dict[str, Any]], direction: str) -> list[str]:
    return [f["message"]["type"] if f.get("type") == "session" else f["type"] for f in frames(lines, direction)]


class FlushingStream(io.StringIO):
    """A text stream that tells when it was flushed."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed = threading.Event()

    def flush(self) -> None:
        super().flush()
        self.flushed.set()

    def wait_for(self, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float = 5.0) -> list[dict[str, Any]]:
        """The lines written, once a flush leaves lines that satisfy ``predicate``."""
        deadline = time.monotonic() + timeout
        while True:
            self.flushed.clear()
            lines = lines_of(self.getvalue())
            if predicate(lines):
                return lines
            assert self.flushed.wait(max(0.0, deadline - time.monotonic())), f"never flushed as expected: {lines}"


class BlockedStream(io.StringIO):
    """A text stream whose writes wait until released (a pipe nobody reads)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def write(self, text: str) -> int:
        self.entered.set()
        assert self.release.wait(10), "the test never released the stream"
        return super().write(text)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_trace_records_every_frame_in_the_transcript_format(
    transport: str, tmp_path: Path, fakes: Callable[..., FakeDaemon], make_client: Callable[..., dc.Client]
) -> None:
    fake = fakes()
    fake.agents.upsert(title="one")
    path = tmp_path / "session.jsonl"
    client = make_client(fake, transport, trace=str(path))
    client.connect()
    assert [e.agent.title for e in client.agents.list().entries] == ["one"]
    client.ping()
    client.close()
    lines = lines_of(path.read_text(encoding="utf-8"))
    assert {line["conn"] for line in lines} == {"c1"}
    assert lines[0]["open"] == {"path": "/ws", "subprotocols": None, "status": 101, "selectedSubprotocol": None}
    assert inner_types(lines, "out") == ["hello", "fetch_agents_request", "ping"]
    assert inner_types(lines, "in") == ["status", "fetch_agents_response", "pong"]
    assert lines[-1] == {
        "dir": "out",
        "t": lines[-1]["t"],
        "conn": "c1",
        "close": {"code": 1000, "reason": "Client closed"},
    }
    times = [line["t"] for line in lines]
    assert times == sorted(times)
    assert all(set(line) >= {"dir", "t", "conn"} for line in lines)


def test_a_stream_is_written_and_flushed_but_not_closed(
    fakes: Callable[..., FakeDaemon], make_client: Callable[..., dc.Client]
) -> None:
    stream = FlushingStream()
    client = make_client(fakes(), trace=stream)
    client.connect()
    client.close()
    assert stream.flushed.is_set()
    assert not stream.closed
    assert inner_types(lines_of(stream.getvalue()), "out") == ["hello"]


def test_the_environment_variable_names_the_trace(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fakes: Callable[..., FakeDaemon],
    make_client: Callable[..., dc.Client],
) -> None:
    path = tmp_path / "env.jsonl"
    monkeypatch.setenv(TRACE_ENV, str(path))
    client = make_client(fakes())
    client.connect()
    client.close()
    assert inner_types(lines_of(path.read_text(encoding="utf-8")), "in") == ["status"]


def test_no_trace_means_no_wrapper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRACE_ENV, raising=False)
    assert open_trace(None) is None
    monkeypatch.setenv(TRACE_ENV, "")
    assert open_trace(None) is None


def test_a_traced_client_runs_through_the_wrapper(fakes: Callable[..., FakeDaemon]) -> None:
    fake = fakes()
    made: list[Transport] = []

    def factory() -> Transport:
        made.append(fake.transport_factory())
        return made[-1]

    stream = io.StringIO()
    trace = open_trace(stream)
    assert trace is not None
    wrapped = trace.wrap(factory)()
    assert isinstance(wrapped, TracingTransport)
    assert made  # the real transport is built by the given factory
    trace.close()


def test_bad_trace_targets_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="writable text stream"):
        dc.Client("ws://localhost/ws", trace=42)  # type: ignore[arg-type]
    with pytest.raises(OSError):
        dc.Client("ws://localhost/ws", trace=str(tmp_path / "missing" / "dir" / "t.jsonl"))


def test_binary_frames_are_recorded_whole_in_base64_with_trace_binary(
    fakes: Callable[..., FakeDaemon], make_client: Callable[..., dc.Client]
) -> None:
    fake = fakes()
    stream = io.StringIO()
    client = make_client(fake, trace=stream, trace_binary=True)
    client.connect()
    payload = bytes(range(256)) * 3
    fake.send_raw(payload, binary=True)
    client.ping()  # the binary frame came before the pong
    client.close()
    binary = [f for f in frames(lines_of(stream.getvalue()), "in") if "binary" in f]
    assert binary == [{"binary": len(payload), "base64": base64.b64encode(payload).decode()}]


def test_a_reconnect_flushes_the_first_connection_and_numbers_the_next(
    fakes: Callable[..., FakeDaemon], make_client: Callable[..., dc.Client]
) -> None:
    fake = fakes()
    stream = FlushingStream()
    client = make_client(fake, trace=stream)
    states = RecordingHandler("states")
    client.on_state_change(states)
    client.connect()
    fake.drop_connections()
    ended = stream.wait_for(lambda lines: any("abort" in line for line in lines))  # flushed when it ended
    assert [(line["dir"], line["conn"]) for line in ended if "abort" in line] == [("in", "c1")]
    states.wait_for(2, predicate=lambda change: change[1] is dc.ConnectionState.CONNECTED)
    client.ping()
    client.close()
    lines = lines_of(stream.getvalue())
    assert [line["open"]["path"] for line in lines if "open" in line] == ["/ws", "/ws"]
    assert [line["conn"] for line in lines if "open" in line] == ["c1", "c2"]


def test_the_reader_is_not_held_up_by_a_blocked_output(
    fakes: Callable[..., FakeDaemon], make_client: Callable[..., dc.Client]
) -> None:
    fake = fakes()
    fake.agents.upsert(title="one")
    stream = BlockedStream()
    client = make_client(fake, trace=stream)
    client.connect()
    assert stream.entered.wait(5)  # the writer thread is stuck in write()
    for _ in range(3):  # replies keep coming while the trace cannot be written
        assert len(client.agents.list().entries) == 1
    stream.release.set()
    client.close()
    assert inner_types(lines_of(stream.getvalue()), "out").count("fetch_agents_request") == 3


def test_two_clients_on_one_path_share_the_file_and_it_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fakes: Callable[..., FakeDaemon]
) -> None:
    fake = fakes()
    fake.agents.upsert(title="one")
    path = tmp_path / "two.jsonl"
    monkeypatch.setenv(TRACE_ENV, str(path))
    with dc.Client(fake.serve()) as first, dc.Client(fake.serve()) as second:
        assert len(first.agents.list().entries) == 1
        assert second.ping().request_id
    monkeypatch.delenv(TRACE_ENV)
    lines = lines_of(path.read_text(encoding="utf-8"))
    assert [line["conn"] for line in lines if "open" in line] == ["c1", "c2"]
    with ReplayDaemon(path) as replay:
        with dc.Client("ws://localhost/ws", transport_factory=replay.transport_factory) as first:
            with dc.Client("ws://localhost/ws", transport_factory=replay.transport_factory) as second:
                assert [e.agent.title for e in first.agents.list().entries] == ["one"]
                assert second.ping().request_id
                replay.assert_all_played()


# -- credentials ---------------------------------------------------------------------------------


def assert_no_secret(text: str, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in text, f"{secret!r} reached the trace"
        for part in (secret[: len(secret) // 2 + 1], secret[len(secret) // 2 :]):
            assert part not in text or len(part) < 4, f"part of {secret!r} reached the trace"


def test_no_credential_reaches_the_trace(fakes: Callable[..., FakeDaemon]) -> None:
    """Every carrier: the bearer subprotocol (offered and selected), the Authorization header,
    the hello's ``auth``, a token in the URL, and the password inside frames in both
    directions (a request field, free text, a daemon push, a close reason)."""
    fake = fakes("broadcast", password=PASSWORD)  # a broadcast host also reads hello.auth
    fake.on_request(
        "echo_request",
        lambda ctx: ctx.reply({"echo": ctx.message.get("note"), "token": PASSWORD, "nested": {"password": PASSWORD}}),
    )
    stream = io.StringIO()
    url = f"{fake.serve()}?token={URL_TOKEN}"
    with dc.Client(url, password=PASSWORD, trace=stream) as client:
        reply = client.request({"type": "echo_request", "note": f"my password is {PASSWORD}", "password": PASSWORD})
        assert reply["token"] == PASSWORD  # the client itself sees the real values
        fake.push("activity_log", {"content": f"logged in with {PASSWORD} via {URL_TOKEN}"})
        client.ping()
        fake.close_connections(4000, f"bye {PASSWORD}")
    text = stream.getvalue()
    assert_no_secret(text, PASSWORD, URL_TOKEN)
    lines = lines_of(text)
    opened = lines[0]["open"]
    assert opened["subprotocols"] == [f"paseo.bearer.{REDACTED}"]
    assert opened["selectedSubprotocol"] == f"paseo.bearer.{REDACTED}"
    assert opened["path"] == f"/ws?token={REDACTED}"
    hello = frames(lines, "out")[0]
    assert hello["auth"] == {"kind": "password", "password": REDACTED}
    request = frames(lines, "out")[1]["message"]
    assert (request["password"], request["note"]) == (REDACTED, f"my password is {REDACTED}")
    echo = frames(lines, "in")[1]["message"]["payload"]
    assert (echo["token"], echo["nested"]["password"]) == (REDACTED, REDACTED)
    assert REDACTED in json.dumps(frames(lines, "in"))


def test_no_proxy_header_or_unsendable_password_reaches_the_trace(fakes: Callable[..., FakeDaemon]) -> None:
    """``auth_header`` (sent to a proxy) and a password that only the hello can carry."""
    fake = fakes("broadcast")
    fake.on_request("echo_request", lambda ctx: ctx.reply({"echo": ctx.message.get("note")}))
    stream = io.StringIO()
    with dc.Client(fake.serve(), auth_header=PROXY, trace=stream) as client:
        client.request({"type": "echo_request", "note": PROXY})
    spaced = "pass word with spaces"
    second = io.StringIO()
    fake_pw = fakes("capable", password=spaced)
    fake_pw.on_request("echo_request", lambda ctx: ctx.reply({"echo": ctx.message.get("note")}))
    with dc.Client(fake_pw.serve(), password=spaced, trace=second) as client:
        client.request({"type": "echo_request", "note": spaced})
    assert_no_secret(stream.getvalue(), PROXY, PROXY.split()[1])
    assert_no_secret(second.getvalue(), spaced)
    assert frames(lines_of(second.getvalue()), "out")[0]["auth"]["password"] == REDACTED


def test_the_cli_writes_a_trace(
    tmp_path: Path, fakes: Callable[..., FakeDaemon], capsys: pytest.CaptureFixture[str]
) -> None:
    fake = fakes()
    fake.agents.upsert(title="traced")
    path = tmp_path / "cli.jsonl"
    assert cli_main(["--trace", str(path), "agents", "--host", fake.serve()]) == 0
    assert "traced" in capsys.readouterr().out
    assert "fetch_agents_request" in inner_types(lines_of(path.read_text(encoding="utf-8")), "out")


def test_later_clients_of_a_process_append_to_its_trace(tmp_path: Path, fakes: Callable[..., FakeDaemon]) -> None:
    fake = fakes()
    path = tmp_path / "sequential.jsonl"
    path.write_text("left over from an earlier run\n", encoding="utf-8")
    for _ in range(2):
        with dc.Client(fake.serve(), trace=str(path)) as client:
            client.ping()
    lines = lines_of(path.read_text(encoding="utf-8"))  # the earlier run's line is gone
    assert [line["conn"] for line in lines if "open" in line] == ["c1", "c2"]
    times = [line["t"] for line in lines]
    assert times == sorted(times)
