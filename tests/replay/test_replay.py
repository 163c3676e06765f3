"""``ReplayDaemon``: a session recorded with ``trace=`` against the fake daemon replays offline
(in memory and on loopback) and the same script passes; requests are matched by type and
payload, IDs rewritten, pushes kept in place, unrecorded requests fail with a diff."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import daemon_client as dc
import daemon_client.testing
from daemon_client.testing import FakeDaemon, RecordingHandler, ReplayDaemon, ReplayMismatch
from daemon_client.testing.replay.cassette import Recording, RecordingError
from daemon_client.testing.replay.player import ConnectionPlayer, PlayerOptions

from ..conftest import TRANSPORTS

CONFIG = dc.AgentConfig(provider="mock", model="ten-second-stream", mode_id="load-test")


def script(client: dc.Client) -> dict[str, Any]:
    """What the code under test does: observe the directory, create an agent, run a turn,
    read its history, ping. Returns what it saw."""
    directory = client.agents.list(subscribe=True)
    updates = RecordingHandler("updates")
    directory.subscription.subscribe(update=updates)
    agent = client.agents.create(CONFIG, cwd="/home/dev/projects/demo", title="helper", labels={"team": "a"})
    result = agent.run("What is the answer?", timeout=30)
    page = agent.timeline.refetch("tail", limit=50, projection="canonical")
    idle = updates.wait_for(1, predicate=lambda m: m.payload.agent.status == "idle")
    return {
        "title": agent.title,
        "last_message": result.last_message,
        "status": result.status,
        "rows": [entry.item.type for entry in page.entries],
        "seen_idle": idle[0].payload.agent_id == agent.id,
        "pong": client.ping().request_id is not None,
    }


def record(fake: FakeDaemon, path: Path, run: Callable[[dc.Client], Any] = script, **options: Any) -> Any:
    """Run ``run`` against the fake on loopback, tracing to ``path``; return what it returned."""
    with dc.Client(fake.serve(), trace=str(path), strict=True, **options) as client:
        return run(client)


def replay_client(replay: ReplayDaemon, transport: str, **options: Any) -> dc.Client:
    if transport == "loopback":
        return dc.Client(replay.serve(), strict=True, **options)
    return dc.Client("ws://localhost/ws", transport_factory=replay.transport_factory, strict=True, **options)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_recorded_session_replays_offline(transport: str, tmp_path: Path, fakes: Callable[..., FakeDaemon]) -> None:
    path = tmp_path / "session.jsonl"
    live = record(fakes("capable"), path)
    assert live["last_message"] == "The answer is 42."
    with ReplayDaemon(path) as replay:
        client = replay_client(replay, transport)
        try:
            client.connect()
            assert script(client) == live
        finally:
            client.close()
        replay.assert_all_played()  # after close(): its release requests are in the recording too


def test_subscription_and_request_ids_are_rewritten(tmp_path: Path, fakes: Callable[..., FakeDaemon]) -> None:
    """A subscription named by the client: the replayed reply and pushes carry the IDs this
    client sent, not the recorded ones."""
    fake = fakes()

    def watch(ctx: Any) -> None:
        ctx.reply({"subscriptionId": ctx.message["subscriptionId"]})
        ctx.daemon.push("watch_update", {"subscriptionId": ctx.message["subscriptionId"], "value": 1})

    fake.on_request("watch_request", watch)

    def observe(client: dc.Client, request_id: str, subscription_id: str) -> tuple[str, str, str]:
        pushes = RecordingHandler("watch_update")
        client.add_push_listener(pushes, ["watch_update"])
        reply = client.request({"type": "watch_request", "subscriptionId": subscription_id, "requestId": request_id})
        return reply["requestId"], reply["subscriptionId"], pushes.wait_for(1)[0].payload["subscriptionId"]

    path = tmp_path / "ids.jsonl"
    recorded = record(fake, path, lambda c: observe(c, "rec-7", "sub-recorded"))
    assert recorded == ("rec-7", "sub-recorded", "sub-recorded")
    with ReplayDaemon(path) as replay, replay_client(replay, "memory") as client:
        assert observe(client, "mine-9", "sub-today") == ("mine-9", "sub-today", "sub-today")
        replay.assert_all_played()


def test_an_unrecorded_request_fails_with_the_closest_request_and_the_difference(
    tmp_path: Path, fakes: Callable[..., FakeDaemon]
) -> None:
    path = tmp_path / "filter.jsonl"
    record(fakes(), path, lambda c: c.agents.list(filter=dc.AgentFilter(statuses=["idle"], labels={"team": "a"})))
    replay = ReplayDaemon(path)
    with replay_client(replay, "memory") as client:
        with pytest.raises(dc.RpcError) as failed:
            client.agents.list(filter=dc.AgentFilter(statuses=["running"], labels={"team": "a"}))
    message = str(failed.value)
    assert failed.value.code == "replay_unmatched"
    assert "the client sent a frame that is not in the recording" in message
    assert "closest recorded frame: line 4 (out)" in message
    assert 'filter.statuses[0]: recorded "idle", sent "running"' in message
    assert "team" not in message.split("difference")[1]  # only what differs
    with pytest.raises(ReplayMismatch, match=r'filter\.statuses\[0\]: recorded "idle", sent "running"'):
        replay.check()
    replay.close()


def test_leaving_the_block_fails_on_a_mismatch(tmp_path: Path, fakes: Callable[..., FakeDaemon]) -> None:
    path = tmp_path / "ping.jsonl"
    record(fakes(), path, lambda c: c.ping())
    with pytest.raises(ReplayMismatch, match="no_such_request"), ReplayDaemon(path) as replay:
        with replay_client(replay, "memory") as client, pytest.raises(dc.RpcError):
            client.request({"type": "no_such_request"})


def test_error_reply_mode_only_answers_with_an_error(tmp_path: Path, fakes: Callable[..., FakeDaemon]) -> None:
    path = tmp_path / "ping.jsonl"
    record(fakes(), path, lambda c: c.ping())
    with ReplayDaemon(path, on_unmatched="error_reply") as replay, replay_client(replay, "memory") as client:
        with pytest.raises(dc.RpcError) as failed:
            client.request({"type": "fetch_agents_request"})
        assert failed.value.code == "replay_unmatched"
        assert "every" not in str(failed.value)
        client.ping()
        replay.check()  # nothing to report
        replay.assert_all_played()


def test_a_repeated_request_is_answered_once(tmp_path: Path, fakes: Callable[..., FakeDaemon]) -> None:
    path = tmp_path / "once.jsonl"
    record(fakes(), path, lambda c: c.agents.list())
    with ReplayDaemon(path, on_unmatched="error_reply") as replay, replay_client(replay, "memory") as client:
        client.agents.list()
        with pytest.raises(dc.RpcError, match="has already been answered"):
            client.agents.list()


def test_volatile_fields_are_ignored_and_rewritten(tmp_path: Path, fakes: Callable[..., FakeDaemon]) -> None:
    fake = fakes()
    fake.on_request("echo_request", lambda ctx: ctx.reply({"nonce": ctx.message["nonce"], "n": ctx.message["n"]}))
    path = tmp_path / "echo.jsonl"
    record(fake, path, lambda c: c.request({"type": "echo_request", "nonce": "nonce-recorded", "n": 1}))
    with ReplayDaemon(path, on_unmatched="error_reply") as replay, replay_client(replay, "memory") as client:
        with pytest.raises(dc.RpcError, match='nonce: recorded "nonce-recorded", sent "nonce-today"'):
            client.request({"type": "echo_request", "nonce": "nonce-today", "n": 1})
    with ReplayDaemon(path, volatile=["nonce"]) as replay, replay_client(replay, "memory") as client:
        reply = client.request({"type": "echo_request", "nonce": "nonce-today", "n": 1})
        assert reply["nonce"] == "nonce-today"  # the recorded value, rewritten to this client's
        replay.assert_all_played()


def test_a_reconnect_replays_connection_by_connection(tmp_path: Path, fakes: Callable[..., FakeDaemon]) -> None:
    fake = fakes()
    fake.agents.upsert(title="one")
    path = tmp_path / "reconnect.jsonl"

    def session(client: dc.Client, drop: Callable[[], None]) -> list[int]:
        states = RecordingHandler("states")
        client.on_state_change(states)
        counts = [len(client.agents.list().entries)]
        drop()
        states.wait_for(2, predicate=lambda change: change[1] is dc.ConnectionState.CONNECTED)
        counts.append(len(client.agents.list().entries))
        return counts

    fast = dc.ReconnectPolicy(base_delay=0.05, max_delay=0.2)
    assert record(fake, path, lambda c: session(c, fake.drop_connections), reconnect=fast) == [1, 1]
    assert [c.name for c in Recording.load(path).connections] == ["c1", "c2"]
    with ReplayDaemon(path) as replay, replay_client(replay, "memory", reconnect=fast) as client:
        assert session(client, lambda: None) == [1, 1]  # the replay drops the connection where it was dropped
        replay.assert_all_played()
        assert replay.connections_opened == 2


def test_an_extra_connection_is_refused_and_reported(tmp_path: Path, fakes: Callable[..., FakeDaemon]) -> None:
    path = tmp_path / "one.jsonl"
    record(fakes(), path, lambda c: c.ping())
    replay = ReplayDaemon(path)
    try:
        with replay_client(replay, "memory") as client:
            client.ping()
        second = replay_client(replay, "memory")
        with pytest.raises(dc.ConnectionLost, match="refused"):
            second.connect()
        second.close()
        with pytest.raises(ReplayMismatch, match="opened connection #2, but the recording has only 1"):
            replay.check()
    finally:
        replay.close()


def test_unplayed_frames_are_listed(tmp_path: Path, fakes: Callable[..., FakeDaemon]) -> None:
    path = tmp_path / "two.jsonl"
    record(fakes(), path, lambda c: (c.agents.list(), c.ping()))
    with ReplayDaemon(path) as replay, replay_client(replay, "memory") as client:
        client.agents.list()
        with pytest.raises(ReplayMismatch, match=r"2 recorded frame\(s\) were not played") as missing:
            replay.assert_all_played()
        assert '"type":"ping"' in str(missing.value)
        assert '"type":"pong"' in str(missing.value)
        client.ping()
        replay.assert_all_played()


def test_a_connection_never_opened_is_unplayed(tmp_path: Path, fakes: Callable[..., FakeDaemon]) -> None:
    path = tmp_path / "two-clients.jsonl"
    fake = fakes()
    with dc.Client(fake.serve(), trace=str(path)), dc.Client(fake.serve(), trace=str(path)):
        pass
    with ReplayDaemon(path) as replay, replay_client(replay, "memory"):
        assert replay.unplayed() == ["#2 connection 'c2' was never opened"]
    with ReplayDaemon(path, connections=["c2"]) as replay, replay_client(replay, "memory"):
        replay.assert_all_played()
    with pytest.raises(ValueError, match="no connection named 'c9'"):
        ReplayDaemon(path, connections=["c9"])


def test_binary_frames_are_replayed_byte_for_byte(tmp_path: Path, fakes: Callable[..., FakeDaemon]) -> None:
    fake = fakes()
    payload = bytes(range(200))
    path = tmp_path / "binary.jsonl"

    def send_binary(client: dc.Client) -> None:
        client.ping()
        fake.send_raw(payload, binary=True)
        client.ping()

    record(fake, path, send_binary, trace_binary=True)
    retraced = tmp_path / "retraced.jsonl"
    with ReplayDaemon(path) as replay:
        with replay_client(replay, "memory", trace=str(retraced), trace_binary=True) as client:
            client.ping()
            client.ping()
        replay.assert_all_played()

    def binary_frames(trace: Path) -> list[dict[str, Any]]:
        lines = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
        return [line["frame"] for line in lines if "binary" in line.get("frame", {})]

    assert binary_frames(retraced) == binary_frames(path)
    assert binary_frames(path) == [{"binary": 200, "base64": base64.b64encode(payload).decode()}]


def test_a_password_replays_on_loopback(tmp_path: Path, fakes: Callable[..., FakeDaemon]) -> None:
    """The recorded bearer subprotocol is redacted; the replay selects the one this client offers."""
    path = tmp_path / "auth.jsonl"
    record(fakes("broadcast", password="s3cret-Token"), path, lambda c: c.ping(), password="s3cret-Token")
    assert "s3cret-Token" not in path.read_text(encoding="utf-8")
    with ReplayDaemon(path) as replay, dc.Client(replay.serve(), password="s3cret-Token") as client:
        client.ping()
        replay.assert_all_played()


def test_replay_is_exported_from_daemon_client_testing() -> None:
    assert daemon_client.testing.ReplayDaemon is ReplayDaemon
    assert "ReplayDaemon" in daemon_client.testing.__all__
    assert issubclass(ReplayMismatch, AssertionError)


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("not json", r"rec\.jsonl:2: not JSON"),
        ('{"dir":"sideways","t":0,"conn":"c1","frame":{}}', r":2: 'dir' must be 'in' or 'out'"),
        ('{"dir":"in","t":0,"conn":"c1"}', r":2: a line needs exactly one of"),
        ('{"dir":"in","t":0,"conn":"c1","frame":{"binary":5,"base64":"AAE="}}', r"has 2 bytes, not 5"),
        ('{"dir":"in","t":"soon","conn":"c1","frame":{}}', r"'t' must be a number"),
    ],
)
def test_a_malformed_recording_is_refused_with_its_line(line: str, error: str, tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    path.write_text('{"dir":"out","t":0,"conn":"c1","frame":{"type":"hello"}}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(RecordingError, match=error):
        ReplayDaemon(path)


# -- one connection, step by step ----------------------------------------------------------------


class Socket:
    """A ``ServerEnd`` that keeps what the player sends."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def send_text(self, text: str) -> None:
        self.sent.append(text)

    def send_binary(self, data: bytes) -> None:
        self.sent.append(f"binary {len(data)}")

    def close(self, code: int = 1000, reason: str = "") -> None:
        self.sent.append(f"close {code}")

    def abort(self) -> None:
        self.sent.append("abort")

    def take(self) -> list[str]:
        sent, self.sent = self.sent, []
        return [s if s.startswith(("binary", "close", "abort")) else _name(json.loads(s)) for s in sent]


def _name(frame: dict[str, Any]) -> str:
    message = frame.get("message", frame)
    payload = message.get("payload", {})
    return f"{message['type']}:{payload.get('requestId') or payload.get('name', '')}"


def session(message_type: str, request_id: str | None = None, **fields: Any) -> dict[str, Any]:
    message = {"type": message_type, **fields}
    if request_id is not None:
        message["requestId"] = request_id
    return {"type": "session", "message": message}


def push(name: str) -> dict[str, Any]:
    return {"type": "session", "message": {"type": "note", "payload": {"name": name}}}


def reply(request_id: str) -> dict[str, Any]:
    return {"type": "session", "message": {"type": "r_response", "payload": {"requestId": request_id}}}


def player(
    lines: list[tuple[str, float, dict[str, Any]]], clock: Callable[[], float] | None = None
) -> ConnectionPlayer:
    text = [json.dumps({"dir": d, "t": t, "conn": "c1", "frame": f}) for d, t, f in lines]
    recording = Recording.parse(text)
    options = PlayerOptions(
        source="test",
        volatile=frozenset({"requestId"}),
        pace=None if clock is None else 1.0,
        strict=True,
        report=lambda _: None,
        clock=clock or time.monotonic,
    )
    return ConnectionPlayer(recording.connections[0], 1, options)


SCRIPT = [
    ("out", 0.0, session("r", "rec-1", n=1)),
    ("in", 0.1, push("A")),
    ("in", 0.2, reply("rec-1")),
    ("in", 0.3, push("B")),
    ("out", 0.4, session("r", "rec-2", n=2)),
    ("in", 0.5, reply("rec-2")),
    ("in", 0.6, push("C")),
]


def test_pushes_keep_their_place_between_replies() -> None:
    socket = Socket()
    play = player(SCRIPT)
    play.start(socket)
    assert play.pump() is None
    assert socket.take() == []  # nothing before the first request
    play.on_client(json.dumps(session("r", "mine-1", n=1)))
    play.pump()
    assert socket.take() == ["note:A", "r_response:mine-1", "note:B"]
    play.on_client(json.dumps(session("r", "mine-2", n=2)))
    play.pump()
    assert socket.take() == ["r_response:mine-2", "note:C"]
    assert play.unplayed() == []


def test_a_reply_whose_request_comes_late_steps_aside() -> None:
    socket = Socket()
    play = player(SCRIPT)
    play.start(socket)
    play.on_client(json.dumps(session("r", "mine-2", n=2)))  # another thread won the race
    play.pump()
    assert socket.take() == ["note:A", "note:B", "r_response:mine-2", "note:C"]
    play.on_client(json.dumps(session("r", "mine-1", n=1)))
    play.pump()
    assert socket.take() == ["r_response:mine-1"]
    assert play.unplayed() == []


def test_pace_keeps_the_recorded_gaps() -> None:
    now = [100.0]
    socket = Socket()
    play = player(SCRIPT, clock=lambda: now[0])
    play.start(socket)
    play.on_client(json.dumps(session("r", "mine-1", n=1)))
    assert play.pump() == pytest.approx(0.1)  # push A was recorded 0.1 s after the request
    assert socket.take() == []
    now[0] += 0.1
    assert play.pump() == pytest.approx(0.1)
    assert socket.take() == ["note:A"]
    now[0] += 0.25  # late: the reply goes at once, and the next gap counts from then
    assert play.pump() == pytest.approx(0.1)
    assert socket.take() == ["r_response:mine-1"]
    now[0] += 0.1
    assert play.pump() is None  # then it waits for the client
    assert socket.take() == ["note:B"]
