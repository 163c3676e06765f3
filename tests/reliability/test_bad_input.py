"""Bad input from the daemon: every frame is survived, logged truncated, and the client still works.

Each scenario sends one kind of bad frame (or a batch), then proves the client still works: a
request round trip and a live push, on the same connection (no reconnect). Every scenario runs
over the in-memory transport and over loopback (the loopback path reads through the buffered
``FrameReader`` of the websocket-client transport). The regression tests at the end pin
client bugs this file found (each first written as a strict xfail; fixed in daemon_client since).
"""

from __future__ import annotations

import inspect
import itertools
import json
import logging
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

import daemon_client as dc
from daemon_client.protocol.timeline import TimelineEvent, TurnCompleted, UnknownEvent, UnknownItem
from daemon_client.testing import FakeDaemon, RecordingHandler
from daemon_client.transport.base import DEFAULT_MAX_FRAME_BYTES

from ..conftest import KINDS, TRANSPORTS, BackgroundConnect

LOG_LIMIT = 700
"""Longest log line a bad frame may produce (the frame log previews 500 chars at DEBUG)."""
WARNING_LIMIT = 450
"""Longest line that reports one skipped frame (the frame previewed in 200 chars, plus the reason)."""
LONG = 10_000
"""Length of the long bad frames: far more than any log line may hold."""
_numbers = itertools.count(1)


# ----------------------------------------------------------------------------- helpers


class Harness:
    """A connected client, its fake daemon and a recorder of every push the client gets."""

    def __init__(self, fake: FakeDaemon, client: dc.Client, pushes: RecordingHandler[dc.SessionMessage]) -> None:
        self.fake = fake
        self.client = client
        self.pushes = pushes

    def still_works(self) -> None:
        """A request round trip and a live push on the same connection: nothing reconnected."""
        n = next(_numbers)
        assert self.client.request({"type": "echo_request", "value": n}, timeout=5)["echo"] == n
        self.fake.push("still_alive", {"n": n})
        self.pushes.wait_for(1, predicate=lambda m: m.type == "still_alive" and m.payload.get("n") == n)
        assert self.client.state is dc.ConnectionState.CONNECTED
        assert self.fake.accepted_count == 1, "the bad frame cost a reconnect"


def _echo(ctx: Any) -> None:
    ctx.reply({"echo": ctx.message.get("value")})


@pytest.fixture
def harness(fakes, make_client) -> Callable[..., Harness]:
    def make(kind: str = "capable", transport: str = "memory", **options: Any) -> Harness:
        fake = fakes(kind)
        fake.on_request("echo_request", _echo)
        client = make_client(fake, transport, **options)
        pushes = RecordingHandler[dc.SessionMessage]("pushes")
        client.add_push_listener(pushes)
        client.connect()
        return Harness(fake, client, pushes)

    return make


def client_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """Records of the client's own loggers (the fake daemon's loggers excluded)."""
    return [
        r
        for r in caplog.records
        if r.name.startswith("daemon_client") and not r.name.startswith("daemon_client.testing")
    ]


def assert_logs_truncated(caplog: pytest.LogCaptureFixture, limit: int = LOG_LIMIT) -> None:
    for record in client_records(caplog):
        message = record.getMessage()
        assert len(message) <= limit, f"{record.name} logged {len(message)} chars: {message[:300]}…"


def find_record(caplog: pytest.LogCaptureFixture, needle: str, level: int = logging.WARNING) -> logging.LogRecord:
    matches = [r for r in client_records(caplog) if needle in r.getMessage() and r.levelno >= level]
    assert matches, f"no log line at level >= {logging.getLevelName(level)} containing {needle!r}"
    return matches[0]


def session(message_type: str, payload: Any) -> str:
    return json.dumps({"type": "session", "message": {"type": message_type, "payload": payload}})


# ----------------------------------------------------------------------------- undecodable frames


class Bad(NamedTuple):
    """A bad frame, as ``send_raw`` sends it, and the log line it must cause."""

    frame: str | bytes
    logged: str
    """Text the log line contains."""
    level: int = logging.WARNING
    binary: bool = False


D = logging.DEBUG
INFO = logging.INFO
BAD_UTF8 = b'{"type":"session","message":{"type":"x","payload":{"t":"' + b"\xff" * LONG + b'"}}}'
UNDECODABLE: dict[str, Bad] = {
    "long-not-json": Bad("not json " + "x" * LONG, "malformed frame"),
    "empty": Bad("", "malformed frame"),
    "truncated-object": Bad('{"type":"session","message":{"type":"x"', "malformed frame"),
    "array": Bad("[1,2,3]", "not a JSON object"),
    "string": Bad('"' + "s" * LONG + '"', "not a JSON object"),
    "number": Bad("42", "not a JSON object"),
    "null": Bad("null", "not a JSON object"),
    "bom-prefixed": Bad('\ufeff{"type":"session","message":{"type":"x","payload":{}}}', "malformed"),
    "deeply-nested": Bad("[" * 100_000 + "]" * 100_000, "skipped a malformed frame"),
    "huge-number": Bad('{"type":"session","message":{"type":"x","payload":{"n":' + "9" * 400 + "}}}", "malformed"),
    "message-not-object": Bad('{"type":"session","message":"' + "m" * LONG + '"}', "message object"),
    "message-without-type": Bad('{"type":"session","message":{"payload":{}}}', "string type"),
    "message-type-number": Bad('{"type":"session","message":{"type":5,"payload":{}}}', "string type"),
    "payload-list": Bad(session("agent_update", [1] * 3000), "payload is not an object"),
    "payload-string": Bad(session("agent_stream", "p" * LONG), "payload is not an object"),
    "binary": Bad(b"\x00\x01" * LONG, "binary frame", INFO, binary=True),  # one line per connection
    "binary-json": Bad(b'{"type":"session","message":{"type":"x","payload":{}}}', "binary frame", INFO, binary=True),
    "unknown-top-level": Bad('{"type":"brand_new_top_level","x":"' + "y" * LONG + '"}', "unknown type", D),
    "top-level-type-number": Bad('{"type":5}', "unknown type", D),
    "top-level-without-type": Bad('{"x":1}', "unknown type", D),
    "status-error": Bad(session("status", {"status": "error", "message": "Invalid " + "z" * LONG}), "invalid message"),
}


def delivered(pushes: RecordingHandler[dc.SessionMessage]) -> list[str]:
    """Types delivered to push listeners; ``status`` frames are pushes too (the error one is also logged)."""
    return [m.type for m in pushes.items if m.type != "status"]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("bad", [pytest.param(bad, id=name) for name, bad in UNDECODABLE.items()])
def test_undecodable_frame_is_skipped_with_a_truncated_log_line(harness, caplog, transport: str, bad: Bad) -> None:
    h = harness("capable", transport)
    caplog.clear()
    h.fake.send_raw(bad.frame, binary=bad.binary)
    h.still_works()  # frames arrive in order: the bad one was handled before this push
    record = find_record(caplog, bad.logged, bad.level)
    assert len(record.getMessage()) <= WARNING_LIMIT, record.getMessage()
    if isinstance(bad.frame, str) and len(bad.frame) > LOG_LIMIT:  # the frame text itself was logged, cut short
        assert any(f"… ({len(bad.frame)} chars)" in r.getMessage() for r in client_records(caplog))
    assert_logs_truncated(caplog)
    assert delivered(h.pushes) == ["still_alive"]  # nothing of the bad frame was delivered


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_burst_of_every_bad_frame_is_survived_on_every_host_kind(harness, caplog, kind: str, transport: str) -> None:
    h = harness(kind, transport)
    for bad in UNDECODABLE.values():
        h.fake.send_raw(bad.frame, binary=bad.binary)
    h.still_works()
    assert_logs_truncated(caplog)
    assert delivered(h.pushes) == ["still_alive"]
    for bad in UNDECODABLE.values():
        find_record(caplog, bad.logged, bad.level)


INVALID_UTF8 = {
    "invalid-utf8": BAD_UTF8,
    "overlong-utf8": b'{"type":"x","v":"\xc0\xaf"}',
    "surrogate-utf8": b'{"type":"x","v":"\xed\xa0\x80"}',
}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("name", list(INVALID_UTF8))
def test_a_text_frame_that_is_not_utf8_fails_the_connection_with_1007(
    harness, caplog, transport: str, name: str
) -> None:
    """RFC 6455 8.1: the endpoint fails the connection (1007); the client reconnects, and the log
    names the frame's size and the bad byte's position, never the frame's bytes."""
    h = harness("capable", transport)
    frame = INVALID_UTF8[name]
    first = h.fake.connections[0]
    states = RecordingHandler[Any]("states")
    h.client.on_state_change(states)
    caplog.clear()
    h.fake.send_raw(frame)
    states.wait_for(predicate=lambda change: change[2] == "reconnected")
    n = next(_numbers)
    assert h.client.request({"type": "echo_request", "value": n}, timeout=5)["echo"] == n
    assert first.peer_close_code == 1007
    with pytest.raises(UnicodeDecodeError) as bad:
        frame.decode("utf-8")
    messages = [r.getMessage() for r in client_records(caplog) if "not valid UTF-8" in r.getMessage()]
    assert any(f"text frame of {len(frame)} bytes is not valid UTF-8 (at byte {bad.value.start}" in m for m in messages)
    assert not any('"type":"x"' in m or '{"type":"session"' in m for m in messages)  # never the frame's bytes
    assert delivered(h.pushes) == []


# ----------------------------------------------------------------------------- unknown message types


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_unknown_session_message_types_are_delivered_as_they_are(harness, caplog, kind: str, transport: str) -> None:
    h = harness(kind, transport)
    h.fake.send_raw(session("brand_new_push", {"a": 1, "nested": {"b": [1, 2]}}))
    h.fake.send_raw('{"type":"session","message":{"type":"flat_new_push","x":1,"y":"z"}}')  # no payload key
    h.fake.send_raw('{"type":"session","message":{"type":"null_payload_push","payload":null,"k":2}}')
    h.still_works()
    got = {m.type: m.payload for m in h.pushes.items}
    assert got["brand_new_push"] == {"a": 1, "nested": {"b": [1, 2]}}
    assert got["flat_new_push"] == {"x": 1, "y": "z"}
    assert got["null_payload_push"]["k"] == 2
    assert_logs_truncated(caplog)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_unexpected_top_level_pongs_and_hello_frames_are_harmless(harness, caplog, transport: str) -> None:
    h = harness("capable", transport)
    for frame in ('{"type":"pong"}', '{"type":"pong","extra":[1]}', '{"type":"hello","clientId":"x"}',
                  '{"type":"ping"}', '{"type":"server_info"}'):  # fmt: skip
        h.fake.send_raw(frame)
    h.still_works()
    assert_logs_truncated(caplog)


# ----------------------------------------------------------------------------- timelines


def _stream_frame(kind: str, subscription_id: str | None, **payload: Any) -> str:
    body = dict(payload)
    if kind == "capable":
        body = {"subscriptionId": subscription_id, **body}
    return session("agent_stream", body)


def _text_of(update: Any) -> str | None:
    return getattr(getattr(update.event, "item", None), "text", None)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_unknown_stream_events_and_items_reach_the_timeline_handler(harness, caplog, kind: str, transport: str) -> None:
    h = harness(kind, transport)
    h.fake.agents.upsert("a1")
    seen = RecordingHandler[Any]("timeline")
    sub = h.client.agents.ref("a1").timeline.subscribe(seen)
    sub.ready.result(timeout=5)
    sid = sub.subscription_id
    h.fake.timeline.emit("a1", {"type": "brand_new_event", "detail": {"x": 1}})
    h.fake.timeline.append("a1", {"type": "brand_new_item", "body": "hello"})
    unknown_event = seen.wait_for(1, predicate=lambda u: u.type == "brand_new_event")[0]
    assert unknown_event.event == UnknownEvent(
        "brand_new_event", {"type": "brand_new_event", "provider": "mock", "detail": {"x": 1}}
    )
    unknown_item = seen.wait_for(1, predicate=lambda u: isinstance(getattr(u.event, "item", None), UnknownItem))[0]
    assert unknown_item.event.item == UnknownItem("brand_new_item", {"type": "brand_new_item", "body": "hello"})
    assert unknown_item.seq == 1
    seen.clear()
    for event in (
        {"type": "timeline", "item": [1, 2]},
        ["not", "an", "object"],
        None,  # no event at all
        {"type": "permission_requested", "request": 5},  # a known type that cannot be read
        {"type": "timeline", "item": {"type": "assistant_message", "text": "after"}},
    ):
        body = {"agentId": "a1"} if event is None else {"agentId": "a1", "event": event}
        h.fake.send_raw(_stream_frame(kind, sid, **body))
    events = [u.event for u in seen.wait_for(5)]
    assert events[0] == TimelineEvent(item=UnknownItem("", {"value": [1, 2]}))
    assert events[1] == UnknownEvent("", {"value": ["not", "an", "object"]})
    assert events[2] == UnknownEvent("", {"value": None})
    assert events[3] == UnknownEvent("permission_requested", {"type": "permission_requested", "request": 5})
    assert isinstance(events[4], TimelineEvent)
    assert getattr(events[4].item, "text", None) == "after"
    h.still_works()
    assert_logs_truncated(caplog)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_stream_fields_of_the_wrong_type_are_read_leniently(harness, caplog, kind: str, transport: str) -> None:
    h = harness(kind, transport)
    h.fake.agents.upsert("a1")
    seen = RecordingHandler[Any]("timeline")
    sub = h.client.agents.ref("a1").timeline.subscribe(seen)
    sub.ready.result(timeout=5)
    sid = sub.subscription_id
    item = {"type": "assistant_message", "text": "typed wrong"}
    wrong = {"agentId": "a1", "seq": "5", "epoch": 7, "timestamp": 1}
    h.fake.send_raw(_stream_frame(kind, sid, **wrong, event={"type": "timeline", "item": item, "turnId": 9}))
    h.fake.send_raw(_stream_frame(kind, sid, agentId="a1", seq=True, event={"type": "turn_completed", "usage": "x"}))
    h.fake.send_raw(_stream_frame(kind, sid, agentId="a1", event={"type": "timeline", "item": {"type": 5}}))
    h.fake.send_raw(_stream_frame(kind, sid, agentId="a1", event={"type": "timeline", "item": {**item, "text": 42}}))
    first, second, third, fourth = seen.wait_for(4)
    assert (first.seq, first.epoch, first.timestamp) == (None, None, None)
    assert isinstance(first.event, TimelineEvent)
    assert first.event.turn_id is None
    assert _text_of(first) == "typed wrong"
    assert second.seq is None
    assert isinstance(second.event, TurnCompleted | UnknownEvent)
    assert isinstance(third.event, TimelineEvent)
    assert isinstance(third.event.item, UnknownItem)
    assert isinstance(fourth.event, TimelineEvent)  # read leniently or kept as UnknownItem, never lost
    h.still_works()
    assert_logs_truncated(caplog)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_stream_frames_with_a_bad_tag_are_dropped_on_capable_hosts(harness, caplog, transport: str) -> None:
    h = harness("capable", transport)
    h.fake.agents.upsert("a1")
    seen = RecordingHandler[Any]("timeline")
    sub = h.client.agents.ref("a1").timeline.subscribe(seen)
    sub.ready.result(timeout=5)
    event = {"type": "timeline", "item": {"type": "assistant_message", "text": "dropped"}}
    for tag in (5, None, [sub.subscription_id], {"id": sub.subscription_id}, "unknown-subscription"):
        h.fake.send_raw(session("agent_stream", {"subscriptionId": tag, "agentId": "a1", "event": event}))
    h.fake.send_raw(session("agent_stream", {"agentId": "a1", "event": event}))  # untagged: dropped [17]
    h.fake.timeline.append("a1", {"type": "assistant_message", "text": "kept"})
    kept = seen.wait_for(1)
    h.client.flush_callbacks()
    assert [_text_of(u) for u in seen.items] == ["kept"]
    assert kept[0].subscription_id == sub.subscription_id
    h.still_works()
    assert_logs_truncated(caplog)


# ----------------------------------------------------------------------------- directories


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_directory_updates_with_wrong_field_types_are_delivered_leniently(
    harness, caplog, kind: str, transport: str
) -> None:
    h = harness(kind, transport)
    h.fake.agents.upsert("a1", title="first")
    directory = h.client.agents.list(subscribe=True)
    observation = directory.subscription
    assert observation is not None
    updates = RecordingHandler[Any]("updates")
    observation.subscribe(update=updates)
    tag = {"subscriptionId": observation.subscription_id} if kind == "capable" else {}
    for payload in (
        {"kind": 5, "agent": [1, 2], "seq": "7", "generation": {}},
        {"kind": "upsert", "agent": "not-an-object", "agentId": 42},
        {"kind": "remove", "agentId": ["a1"]},
        {"kind": "upsert", "agent": {"id": "a1", "labels": "oops", "createdAt": []}},
        {"kind": "remove", "agentId": "ghost"},  # readable: marks the end of the batch
    ):
        h.fake.send_raw(session("agent_update", {**tag, **payload}))
    updates.wait_for(1, predicate=lambda m: m.payload.agent_id == "ghost")
    readable = [m.payload for m in updates.items]
    assert readable[0].kind == "5"
    assert readable[0].agent is None
    assert readable[0].seq is None
    assert readable[1].agent is None
    assert readable[1].agent_id == "42"
    lenient = readable[3].agent  # odd values: defaults, with the raw values kept
    assert lenient is not None
    assert (lenient.id, lenient.labels, lenient.created_at) == ("a1", {}, None)
    assert lenient.extra_fields == {"labels": "oops", "createdAt": []}
    current = observation.current()
    assert current is not None
    assert [e.agent.id for e in current.entries] == ["a1"]  # no bad update removed it
    h.fake.agents.upsert("a2", title="next")
    updates.wait_for(1, predicate=lambda m: m.payload.agent_id == "a2")
    current = observation.current()
    assert current is not None
    assert {e.agent.id: e.agent.title for e in current.entries} == {"a1": None, "a2": "next"}
    h.still_works()
    assert_logs_truncated(caplog)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("entries", ["a-string", {"k": "v"}], ids=repr)
def test_directory_reply_whose_entries_are_not_a_list_fails_that_read_with_protocol_error(
    harness, caplog, transport: str, entries: Any
) -> None:
    h = harness("capable", transport)
    h.fake.on_request("fetch_agents_request", lambda ctx: ctx.reply({"entries": entries, "pageInfo": {}}))
    with pytest.raises(dc.ProtocolError, match=r"entries"):
        h.client.agents.list()
    h.still_works()
    assert_logs_truncated(caplog)


# ----------------------------------------------------------------------------- replies


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_replies_with_unknown_or_duplicate_request_ids_settle_nothing_else(
    harness, caplog, kind: str, transport: str
) -> None:
    h = harness(kind, transport)

    def twice(ctx: Any) -> None:
        ctx.reply({"n": 1})
        ctx.reply({"n": 2})  # a duplicate of a settled reply

    h.fake.on_request("twice_request", twice)
    h.fake.push("echo_response", {"requestId": "mine-1", "echo": "stale"})  # before anyone asked
    h.fake.push("echo_response", {"requestId": 12345, "echo": "numeric id"})
    h.fake.push("echo_response", {"requestId": None, "echo": "null id"})
    h.fake.push("echo_response", {"requestId": {"id": "mine-1"}, "echo": "object id"})
    h.fake.push("rpc_error", {"requestId": "nobody", "error": "late", "code": "x"})
    assert h.client.request({"type": "twice_request"})["n"] == 1
    assert h.client.request({"type": "echo_request", "requestId": "mine-1", "value": "fresh"})["echo"] == "fresh"
    futures = [h.client.request_async({"type": "echo_request", "value": i}) for i in range(20)]
    assert [f.result(timeout=5)["echo"] for f in futures] == list(range(20))
    h.still_works()
    assert_logs_truncated(caplog)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_reply_of_the_wrong_type_fails_only_that_request(harness, caplog, kind: str, transport: str) -> None:
    h = harness(kind, transport)
    h.fake.on_request("thing_request", lambda ctx: ctx.reply({"x": 1}, type="other_response"))
    h.fake.ignore("slow_request")
    bystander = h.client.request_async({"type": "slow_request"}, timeout=10)
    with pytest.raises(dc.ProtocolError, match=r"thing_request .* 'other_response', expected 'thing_response'"):
        h.client.request({"type": "thing_request"})
    assert not bystander.done()  # another pending request is not touched
    h.still_works()
    h.fake.ignore("slow_request", enabled=False)
    assert_logs_truncated(caplog)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_unreadable_reply_payloads_fail_that_call_only(harness, caplog, transport: str) -> None:
    h = harness("capable", transport)
    h.fake.on_request("fetch_agent_request", lambda ctx: ctx.reply({"agent": {"title": "no id", "status": []}}))
    with pytest.raises(dc.ProtocolError, match="AgentSnapshot"):
        h.client.agents.fetch("x")
    h.fake.on_request("odd_request", lambda ctx: ctx.reply({"error": 5, "code": ["x"]}, type="rpc_error"))
    with pytest.raises(dc.RpcError) as failure:
        h.client.request({"type": "odd_request"})
    assert failure.value.code is None
    assert failure.value.request_type == "odd_request"
    h.still_works()
    assert_logs_truncated(caplog)


# ----------------------------------------------------------------------------- size limit


def test_the_default_frame_limit_is_64_mib(fakes, make_client) -> None:
    assert DEFAULT_MAX_FRAME_BYTES == 64 * 1024 * 1024
    assert inspect.signature(dc.Client).parameters["max_frame_bytes"].default == 64 * 1024 * 1024
    fake = fakes("capable")
    client = make_client(fake)
    client.connect()
    server_end = fake.connections[0].socket
    assert server_end.params.max_frame_bytes == 64 * 1024 * 1024  # what the transport was told


def _frame_of(size: int, fill: str = "x") -> str:
    """A valid push frame of exactly ``size`` UTF-8 bytes (``fill`` is 1 or 2 bytes)."""
    head, tail = '{"type":"session","message":{"type":"sized","payload":{"s":"', '"}}}'
    room = size - len(head) - len(tail)
    width = len(fill.encode())
    text = head + fill * (room // width) + "x" * (room % width) + tail
    assert len(text.encode()) == size
    return text


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("fill", ["x", "é"], ids=["ascii", "two-byte"])
def test_frames_over_the_configured_limit_are_skipped_at_the_exact_byte(
    harness, caplog, transport: str, fill: str
) -> None:
    limit = 4096
    h = harness("capable", transport, max_frame_bytes=limit)
    caplog.clear()
    h.fake.send_raw(_frame_of(limit + 1, fill))
    h.fake.send_raw(_frame_of(limit * 50, fill))
    h.fake.send_raw(_frame_of(limit, fill))
    h.fake.send_raw(_frame_of(limit - 1, fill))
    h.still_works()
    assert [m.type for m in h.pushes.items].count("sized") == 2  # only the two frames within the limit
    rejected = [r for r in client_records(caplog) if "skipped an inbound frame" in r.getMessage()]
    assert len(rejected) == 2
    assert all(r.levelno == logging.WARNING for r in rejected)
    assert_logs_truncated(caplog)


# ----------------------------------------------------------------------------- regressions
# Each of these was a client bug found by this file (first as a strict xfail); see the module docstring.


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_long_message_type_in_a_malformed_frame_is_logged_truncated(harness, caplog, transport: str) -> None:
    """Was: decode_frame put the whole message type into MalformedFrame's text, logged as is."""
    h = harness("capable", transport)
    caplog.clear()
    h.fake.send_raw(session("t" * LONG, [1]))
    h.still_works()
    find_record(caplog, "payload is not an object")
    assert_logs_truncated(caplog)


@pytest.mark.parametrize("frame", [json.dumps({"type": "u" * LONG}), session("v" * LONG, {})], ids=["top", "session"])
def test_long_unknown_types_are_logged_truncated_at_debug(fakes, make_client, caplog, frame: str) -> None:
    """Was: 'ignored a frame of unknown type %r' and 'no listener for %s' logged the whole type."""
    fake = fakes("capable")
    fake.on_request("echo_request", _echo)
    client = make_client(fake)  # no push listener: the registry logs "no listener"
    client.connect()
    caplog.clear()
    fake.send_raw(frame)
    assert client.request({"type": "echo_request", "value": 1})["echo"] == 1
    assert_logs_truncated(caplog)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_stray_hello_rejected_after_the_handshake_is_ignored(harness, caplog, transport: str) -> None:
    """Was: it ended the authenticated connection for good (terminal AuthenticationError) and its
    reason was logged untruncated."""
    h = harness("capable", transport)
    states = RecordingHandler[tuple]("states")
    h.client.on_state_change(states)
    caplog.clear()
    h.fake.send_raw(json.dumps({"type": "hello.rejected", "reason": "r" * LONG}))
    h.still_works()
    # the client used to close the socket itself 1 s after a hello.rejected: wait well beyond that
    with pytest.raises(TimeoutError):
        states.wait_for(1, predicate=lambda c: c[1] is not dc.ConnectionState.CONNECTED, timeout=1.5)
    h.still_works()
    assert h.client.last_error is None
    assert_logs_truncated(caplog)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("key", ["entries", "emptyProjects"])
@pytest.mark.parametrize("value", [5, True, 2.5], ids=repr)
def test_a_directory_reply_with_non_iterable_entries_is_a_protocol_error(
    harness, transport: str, key: str, value: Any
) -> None:
    """Was: list() raised a raw TypeError (the parsers iterated ``payload.get(key) or []``)."""
    h = harness("capable", transport)
    h.fake.on_request("fetch_workspaces_request", lambda ctx: ctx.reply({key: value, "pageInfo": {}}))
    with pytest.raises(dc.ProtocolError, match=key):
        h.client.workspaces.list()
    if key == "entries":
        h.fake.on_request("fetch_agents_request", lambda ctx: ctx.reply({key: value, "pageInfo": {}}))
        with pytest.raises(dc.ProtocolError, match=key):
            h.client.agents.list(subscribe=True)
    h.still_works()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_unreadable_pushes_are_skipped_with_a_log_not_reported_as_callback_errors(
    fakes, make_client, caplog, transport: str
) -> None:
    """Was: a provider update (or a re-established snapshot) whose ``entries`` is not iterable raised
    TypeError on the callback thread, reported as a user callback error (CallbackError in strict mode)."""
    fake = fakes("capable")
    errors: list[BaseException] = []
    client = make_client(fake, transport, strict=False, on_callback_error=errors.append)
    client.connect()
    seen = RecordingHandler[Any]("providers")
    subscription = client.providers.subscribe(seen)
    subscription.ready.result(timeout=5)
    tag = subscription.subscription_id
    fake.send_raw(session("providers_snapshot_update", {"subscriptionId": tag, "entries": 5}))
    fake.send_raw(session("providers_snapshot_update", {"subscriptionId": tag, "entries": []}))
    assert seen.wait_for(1)[0].entries == ()
    assert client.flush_callbacks()
    assert errors == []
    find_record(caplog, "unreadable providers_snapshot_update skipped")
    # a directory snapshot re-established after a reconnect, unreadable the same way
    directory = client.agents.list(subscribe=True).subscription
    assert directory is not None
    snapshots = RecordingHandler[Any]("snapshots")
    directory.subscribe(snapshot=snapshots)
    snapshots.wait_for(1)
    fake.on_request("fetch_agents_request", lambda ctx: ctx.reply({"entries": True, "subscriptionId": "s-2"}))
    fake.drop_connections()
    wait_for_state(client, dc.ConnectionState.CONNECTED, reconnected=fake)
    assert client.flush_callbacks()
    assert errors == []
    assert len(snapshots) == 1  # the unreadable snapshot was skipped, not delivered


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_replies_to_unknown_requests_do_not_reach_push_listeners(harness, kind: str, transport: str) -> None:
    """Was: late, duplicate and foreign replies were routed to push listeners (docs: dropped)."""
    h = harness(kind, transport)

    def twice(ctx: Any) -> None:
        ctx.reply({"n": 1})
        ctx.reply({"n": 2})

    h.fake.on_request("twice_request", twice)
    h.fake.push("echo_response", {"requestId": "nobody-asked", "echo": 0})
    h.fake.push("rpc_error", {"requestId": "nobody", "error": "late"})
    h.fake.push("status", {"requestId": "nobody", "status": "agent_created"})
    h.fake.push("agent_permission_resolved", {"requestId": "perm-1", "agentId": "a1"})  # a push with a requestId
    assert h.client.request({"type": "twice_request"})["n"] == 1
    h.still_works()
    assert delivered(h.pushes) == ["agent_permission_resolved", "still_alive"]


def wait_for_state(client: dc.Client, state: dc.ConnectionState, *, reconnected: FakeDaemon) -> None:
    """Bounded wait for ``state`` on a new connection (``reconnected.accepted_count`` grew)."""
    deadline = time.monotonic() + 10
    while client.state is not state or reconnected.accepted_count < 2:
        assert time.monotonic() < deadline, f"state is {client.state}"
        time.sleep(0.005)


UNREADABLE_SERVER_INFO = session("status", {"status": "server_info", "serverId": {"a": 1}, "features": [1]})


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_unreadable_server_info_after_the_handshake_is_survived(harness, caplog, transport: str) -> None:
    h = harness("capable", transport)
    info = h.client.server_info
    h.fake.send_raw(UNREADABLE_SERVER_INFO)
    h.still_works()
    assert h.client.server_info == info  # the cached server_info is kept
    assert_logs_truncated(caplog)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_unreadable_server_info_during_the_handshake_is_a_prompt_protocol_error(
    fakes, make_client, transport: str
) -> None:
    """Was: logged as an 'internal error'; connect() waited for connect_timeout, then raised ConnectTimeout."""
    fake = fakes("capable")
    fake.stall_handshake = True  # the fake sends no server_info of its own
    client = make_client(fake, transport, connect_timeout=5.0)
    connecting = BackgroundConnect(client)
    fake.wait_for_frame("hello").connection.send_raw(UNREADABLE_SERVER_INFO)
    outcome = connecting.result(timeout=10)
    assert isinstance(outcome, dc.ProtocolError), repr(outcome)
    assert "server_info" in str(outcome)  # a ProtocolError, not the connect timeout: it failed at the frame
    assert client.state is dc.ConnectionState.DISCONNECTED


@pytest.mark.parametrize("limit", [0, -1])
def test_bug_a_frame_limit_that_admits_no_frame_is_accepted(fakes, limit: int) -> None:
    fake = fakes("capable")
    with pytest.raises(ValueError, match="max_frame_bytes"):  # a client never connected starts no thread
        dc.Client("ws://fake/ws", transport_factory=fake.transport_factory, max_frame_bytes=limit)
