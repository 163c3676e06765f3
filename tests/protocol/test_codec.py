"""The codec and models: wire naming, tolerance, and every frame of the 0.1.65 transcripts."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import daemon_client as dc
from daemon_client.errors import ProtocolError
from daemon_client.protocol import (
    CLIENT_CAPABILITIES,
    Hello,
    HelloRejected,
    MalformedFrame,
    PasswordAuth,
    Pong,
    RpcErrorPayload,
    SessionMessage,
    SessionPong,
    UnknownMessage,
    codec,
    config,
    decode_frame,
    encode_hello,
    encode_session,
    parse_server_info,
    projects,
    reply_for,
    stream_payload,
    structure,
    timeline,
    worktrees,
)
from daemon_client.protocol.agents import AgentSnapshot
from daemon_client.protocol.codec import (
    encode,
    loads,
    parse_status,
    redact_hello,
    to_camel,
    unstructure,
)
from daemon_client.protocol.directory import Sort, sort_to_wire
from daemon_client.protocol.hosts import HostKind, decide_host_kind
from daemon_client.protocol.replies import is_reply

from ..conftest import TRANSCRIPTS


def transcript_lines() -> list[tuple[str, int, dict[str, Any]]]:
    lines = []
    for path in sorted(TRANSCRIPTS.glob("*.jsonl")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            lines.append((path.name, number, json.loads(line)))
    return lines


def test_transcripts_are_present() -> None:
    assert len(list(TRANSCRIPTS.glob("*.jsonl"))) == 18


def test_every_recorded_daemon_frame_decodes() -> None:
    """Every frame the 0.1.65 daemon sent decodes; replies, errors and server_info parse to models."""
    counts: dict[str, int] = {}
    for name, number, line in transcript_lines():
        if line["dir"] != "in" or "frame" not in line or "binary" in line["frame"]:
            continue  # binary frames (terminal streams, file 13): tests/protocol/test_terminal_transcript.py
        frame = decode_frame(json.dumps(line["frame"]))
        where = f"{name}:{number}"
        assert not isinstance(frame, UnknownMessage), where
        if isinstance(frame, Pong):
            counts["pong"] = counts.get("pong", 0) + 1
            continue
        assert isinstance(frame, SessionMessage), where
        counts[frame.type] = counts.get(frame.type, 0) + 1
        payload = frame.payload
        if frame.type == "status" and payload["status"] == "server_info":
            info = parse_server_info(payload)
            assert info.server_id == "srv_demo0000000"
            assert info.version == "0.1.65-beta.5"
            assert info.hostname == "devbox"
            assert info.protocol_version is None
            assert decide_host_kind(info.features) is HostKind.BROADCAST
        elif frame.type == "rpc_error":
            error = structure(payload, RpcErrorPayload)
            assert error.code in {"unknown_schema", "invalid_message", "provider_diagnostic_failed"}, where
            assert error.request_id.startswith("req-")
        elif frame.type == "pong":
            pong = structure(payload, SessionPong)
            assert pong.server_received_at is not None
            assert pong.server_sent_at is not None
    # the transcripts cover these message kinds; all of them decoded above
    for kind in [
        "status",
        "pong",
        "agent_update",
        "agent_stream",
        "rpc_error",
        "fetch_agents_response",
        "fetch_agent_timeline_response",
        "providers_snapshot_update",
        "workspace_update",
    ]:
        assert counts.get(kind, 0) > 0, kind


def test_recorded_session_pong_without_client_sent_at() -> None:
    lines = [line for name, _, line in transcript_lines() if name == "01-handshake.jsonl"]
    pongs = [decode_frame(json.dumps(line["frame"])) for line in lines if line["dir"] == "in" and "frame" in line]
    typed = [structure(f.payload, SessionPong) for f in pongs if isinstance(f, SessionMessage) and f.type == "pong"]
    assert [p.client_sent_at is None for p in typed] == [False, True]


def test_client_frames_in_transcripts_use_the_documented_hello_shape() -> None:
    hellos = [line["frame"] for _, _, line in transcript_lines() if line.get("frame", {}).get("type") == "hello"]
    ours = json.loads(encode_hello(Hello(client_id="fixture-01-c1", app_version="0.1.65")))
    assert ours == hellos[0]  # the recorded hello, byte for byte once parsed


def test_hello_wire_shape_and_redaction() -> None:
    text = encode_hello(
        Hello(client_id="c", app_version="0.1.65", capabilities=CLIENT_CAPABILITIES, auth=PasswordAuth("s3cret"))
    )
    frame = json.loads(text)
    assert frame["type"] == "hello"
    assert frame["clientType"] == "cli"
    assert frame["protocolVersion"] == 1
    assert frame["auth"] == {"kind": "password", "password": "s3cret"}
    assert frame["capabilities"]["owned_subscriptions"] is True
    assert "compact_provider_snapshots" not in frame["capabilities"]
    assert "s3cret" not in redact_hello(text)
    assert "s3cret" not in repr(PasswordAuth("s3cret"))


def test_session_envelope() -> None:
    assert json.loads(encode_session({"type": "fetch_agent_request", "requestId": "r1", "agentId": "a"})) == {
        "type": "session",
        "message": {"type": "fetch_agent_request", "requestId": "r1", "agentId": "a"},
    }


def test_session_message_without_payload_uses_flat_fields() -> None:
    frame = decode_frame('{"type":"session","message":{"type":"x","requestId":"r","a":1}}')
    assert frame == SessionMessage("x", {"requestId": "r", "a": 1})


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[1,2]",
        '"text"',
        '{"type":"session"}',
        '{"type":"session","message":[]}',
        '{"type":"session","message":{"payload":{}}}',
        '{"type":"session","message":{"type":"x","payload":[1]}}',
    ],
)
def test_malformed_frames_raise_malformed(text: str) -> None:
    with pytest.raises(MalformedFrame):
        decode_frame(text)


def test_unknown_and_special_top_level_frames() -> None:
    unknown = decode_frame('{"type":"brand_new","x":1}')
    assert isinstance(unknown, UnknownMessage)
    assert unknown.type == "brand_new"
    assert unknown.raw == {"type": "brand_new", "x": 1}
    assert decode_frame('{"type":"pong"}') == Pong()
    rejected = decode_frame('{"type":"hello.rejected","reason":"incorrect_password","accepts":["password"]}')
    assert rejected == HelloRejected(reason="incorrect_password", accepts=("password",))


def test_unknown_fields_are_tolerated_and_blank_names_become_none() -> None:
    info = parse_server_info(
        {
            "status": "server_info",
            "serverId": "s",
            "hostname": " ",
            "version": "",
            "brandNew": {"x": 1},
            "features": {"ownedSubscriptions": True, "futureFlag": "yes"},
        }
    )
    assert info.hostname is None
    assert info.version is None
    assert info.feature("ownedSubscriptions")
    assert not info.feature("futureFlag")
    assert not info.feature("absent")


def test_a_wrong_field_type_gets_the_default_and_a_missing_identity_raises_naming_the_field() -> None:
    assert structure({"requestId": "r", "serverReceivedAt": "soon"}, SessionPong).server_received_at is None
    with pytest.raises(ProtocolError, match="requestId"):
        structure({"serverReceivedAt": 1}, SessionPong)


def test_camel_case_mapping() -> None:
    assert to_camel("server_id") == "serverId"
    assert to_camel("request_type") == "requestType"
    assert to_camel("type") == "type"


@pytest.mark.parametrize(
    ("request_type", "reply_type", "statuses"),
    [
        ("fetch_agents_request", "fetch_agents_response", None),
        ("subscription.release.request", "subscription.release.response", None),
        ("a/b", "a/b/response", None),
        ("ping", "pong", None),
        ("create_agent_request", "status", {"agent_created", "agent_create_failed"}),
        ("archive_agent_request", "agent_archived", None),
    ],
)
def test_reply_naming_rule(request_type: str, reply_type: str, statuses: set[str] | None) -> None:
    matcher = reply_for(request_type)
    assert matcher.type == reply_type
    assert (set(matcher.statuses) if matcher.statuses else None) == statuses


@pytest.mark.parametrize(
    ("features", "kind"),
    [
        ({"ownedSubscriptions": True, "selectiveAgentTimeline": True}, HostKind.CAPABLE),
        ({"selectiveAgentTimeline": True}, HostKind.SELECTIVE),
        ({"explicitEventSubscriptions": True}, HostKind.SELECTIVE),
        ({"providersSnapshot": True}, HostKind.BROADCAST),
        ({}, HostKind.BROADCAST),
        ({"ownedSubscriptions": "true"}, HostKind.BROADCAST),
    ],
)
def test_host_kind_decision(features: dict[str, object], kind: HostKind) -> None:
    assert decide_host_kind(features) is kind


def test_a_status_of_an_unexpected_shape_is_not_a_reply() -> None:
    for odd in ([], {}, ["agent_created"], None, 3):
        assert not is_reply("status", {"status": odd, "requestId": "r1"})
        assert not reply_for("create_agent_request").matches("status", {"status": odd})
    assert is_reply("status", {"status": "agent_created", "requestId": "r1"})


LONE_SURROGATE = '{"type":"session","message":{"type":"agent_stream","payload":{"text":"half \\ud83d"}}}'


def test_a_lone_surrogate_in_a_frame_is_kept() -> None:
    frame = decode_frame(LONE_SURROGATE)
    assert frame == SessionMessage("agent_stream", {"text": "half \ud83d"})


def test_a_broken_frame_with_a_surrogate_escape_is_malformed() -> None:
    with pytest.raises(MalformedFrame, match="frame is not valid JSON"):
        decode_frame('{"type":"pong","text":"\\ud83d"')


def test_a_deeply_nested_frame_with_a_surrogate_escape_is_malformed() -> None:
    with pytest.raises(MalformedFrame, match="nested more than 128 levels deep"):
        decode_frame("[" * 50_000 + '"\\ud83d"' + "]" * 50_000)


def test_without_orjson_deep_nesting_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codec, "_loads", json.loads)
    with pytest.raises(MalformedFrame, match="nested more than 128 levels deep"):
        decode_frame("[" * 50_000 + "]" * 50_000)
    with pytest.raises(MalformedFrame, match="frame is not valid JSON"):
        decode_frame('{"type":')
    assert decode_frame(LONE_SURROGATE) == SessionMessage("agent_stream", {"text": "half \ud83d"})


def test_a_status_payload_keeps_unknown_status_values() -> None:
    status = parse_status({"status": "brand_new", "extra": 1})
    assert status.status == "brand_new"
    assert status.raw == {"status": "brand_new", "extra": 1}
    assert parse_status({}).status == ""


def test_unknown_fields_kept_by_a_model_are_not_written_back() -> None:
    snapshot = structure({"id": "a1", "title": "T", "brandNew": {"x": 1}}, AgentSnapshot)
    assert snapshot.extra_fields == {"brandNew": {"x": 1}}
    wire = unstructure(snapshot)
    assert (wire["id"], wire["title"]) == ("a1", "T")
    assert "brandNew" not in wire
    assert "extraFields" not in wire
    assert "extra_fields" not in wire


def test_loads_and_encode_round_trip_text_and_bytes() -> None:
    text = encode({"type": "ping", "value": "é"})
    assert text == '{"type":"ping","value":"é"}'
    assert loads(text) == loads(text.encode("utf-8")) == {"type": "ping", "value": "é"}


def test_a_hello_that_is_not_json_is_redacted_whole() -> None:
    assert redact_hello("not json, maybe a password") == "<hello>"
    assert json.loads(redact_hello('{"type":"hello","auth":{"password":"p"}}'))["auth"] == {"password": "***"}


def test_a_project_list_without_projects_is_empty_and_a_non_list_is_refused() -> None:
    assert projects.parse_list({}).projects == ()
    with pytest.raises(dc.ProtocolError, match="projects is dict, not a list"):
        projects.parse_list({"projects": {"p1": {}}})


def test_sort_specs_are_checked_and_a_single_one_is_accepted() -> None:
    allowed = frozenset({"updatedAt", "title"})
    with pytest.raises(ValueError, match="sort direction must be 'asc' or 'desc', got 'up'"):
        Sort("title", "up")
    assert sort_to_wire("title", allowed) == [{"key": "title", "direction": "desc"}]
    assert sort_to_wire(Sort("updatedAt", "asc"), allowed) == [{"key": "updatedAt", "direction": "asc"}]
    assert sort_to_wire(None, allowed) is None


def test_older_daemons_get_no_request_for_a_plain_directory() -> None:
    with pytest.raises(ValueError, match="the worktree request of older daemons creates worktrees only"):
        worktrees.create_message("/repo", None, None, newest=False)


def test_a_tool_calls_detail_type_is_read_only_when_it_is_a_string() -> None:
    assert timeline.ToolCall("c1", detail={"type": "shell"}).detail_type == "shell"
    assert timeline.ToolCall("c1", detail={"type": 3}).detail_type is None
    assert timeline.ToolCall("c1").detail_type is None


def test_a_timeline_entry_that_is_not_an_object_is_skipped_with_a_warning(caplog) -> None:
    page = timeline.parse_page(
        {"entries": ["junk", {"item": {"type": "assistant_message", "text": "hi"}, "seq": 1}], "hasOlder": False}
    )
    assert [entry.item for entry in page.entries] == [timeline.AssistantMessage("hi")]
    assert any(
        r.levelno == logging.WARNING and r.getMessage().startswith("skipped TimelineEntry at entries[0]")
        for r in caplog.records
    )


def test_nested_patch_keys_the_host_lacks_are_named_by_their_dotted_path() -> None:
    current = {"agents": {"defaults": {"model": "m"}}, "theme": "dark"}
    patch = {"agents": {"defaults": {"model": "n", "effort": "high"}, "limits": {"x": 1}}, "theme": "light"}
    assert config.unknown_patch_keys(patch, current) == ("agents.defaults.effort", "agents.limits")


def test_an_assistant_message_with_an_unusable_message_id_keeps_its_text() -> None:
    item = timeline.parse_item({"type": "assistant_message", "text": "hi", "messageId": 5})
    assert item == timeline.AssistantMessage("hi", None)


def test_messages_are_joined_from_timeline_events_too() -> None:
    items = [
        timeline.TimelineEvent(timeline.AssistantMessage("Hel")),
        timeline.TimelineEvent(timeline.AssistantMessage("lo")),
        timeline.Reasoning("thinking"),
        timeline.AssistantMessage("again"),
    ]
    assert timeline.join_messages(items) == ["Hello", "again"]


def test_a_known_item_without_its_identity_is_kept_as_an_unknown_item() -> None:
    raw = {"type": "tool_call", "name": "shell", "status": "running"}
    item = timeline.parse_item(raw)
    assert item == timeline.UnknownItem(type="tool_call", raw=raw)


_ABSENT = object()
_odd_values = st.sampled_from([None, True, 7, 1.5, [], {}, "s"])


def _maybe(strategy: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    """A field's value: absent, of its type, or of another."""
    return st.one_of(st.just(_ABSENT), strategy, _odd_values)


def _put(target: dict[str, object], key: str, value: object) -> None:
    if value is not _ABSENT:
        target[key] = value


@given(
    text=_maybe(st.text(max_size=5)), message_id=_maybe(st.text(max_size=3)), item_type=_maybe(st.sampled_from(
        ["assistant_message", "reasoning", "tool_call"])), provider=_maybe(st.text(max_size=3)),
    turn_id=_maybe(st.text(max_size=3)), event_type=_maybe(st.sampled_from(["timeline", "turn_started"])),
    agent_id=_maybe(st.text(max_size=3)), timestamp=_maybe(st.text(max_size=3)), seq=_maybe(st.integers(0, 9)),
    epoch=_maybe(st.text(max_size=3)), item_is_object=st.booleans(), event_is_object=st.booleans(),
)  # fmt: skip
@example(text="chunk", message_id=_ABSENT, item_type="assistant_message", provider="claude", turn_id=_ABSENT,
         event_type="timeline", agent_id="a1", timestamp="t", seq=3, epoch="e", item_is_object=True,
         event_is_object=True)  # fmt: skip
@example(text="chunk", message_id="m1", item_type="assistant_message", provider="claude", turn_id="t1",
         event_type="timeline", agent_id="a1", timestamp="t", seq=3, epoch="e", item_is_object=True,
         event_is_object=True)  # fmt: skip
def test_a_stream_payload_of_any_shape_reads_as_its_fields_say(  # noqa: PLR0917 - one per field
    text: object, message_id: object, item_type: object, provider: object, turn_id: object, event_type: object,
    agent_id: object, timestamp: object, seq: object, epoch: object, item_is_object: bool, event_is_object: bool,
) -> None:  # fmt: skip
    """Whatever shape a frame has, the one-step reading of a text chunk and the field-by-field
    reading agree: the model is the one its fields describe, a field of the wrong type reads
    as absent (its default), an identity of the wrong type as text."""
    item: dict[str, object] = {}
    for key, value in (("type", item_type), ("text", text), ("messageId", message_id)):
        _put(item, key, value)
    event: dict[str, object] = {}
    for key, value in (("type", event_type), ("provider", provider), ("turnId", turn_id)):
        _put(event, key, value)
    _put(event, "item", item if item_is_object else "not an object")
    payload: dict[str, object] = {}
    for key, value in (("agentId", agent_id), ("timestamp", timestamp), ("seq", seq), ("epoch", epoch)):
        _put(payload, key, value)
    _put(payload, "event", event if event_is_object else ["not", "an", "object"])

    update = stream_payload.parse_stream_payload(payload, "sub-1")

    def text_of(value: object, default: str = "") -> str:
        return default if value is _ABSENT else value if type(value) is str else str(value)

    def optional(value: object, kind: type) -> object:
        return value if type(value) is kind else None

    assert update.agent_id == text_of(agent_id)
    assert update.subscription_id == "sub-1"
    assert (update.timestamp, update.seq, update.epoch) == (optional(timestamp, str), optional(seq, int),
                                                           optional(epoch, str))  # fmt: skip
    if not event_is_object:
        assert update.event == timeline.UnknownEvent(type="", raw={"value": ["not", "an", "object"]})
        return
    if event_type != "timeline":
        assert update.type == ("turn_started" if event_type == "turn_started" else text_of(event_type))
        return
    assert isinstance(update.event, timeline.TimelineEvent)
    assert update.event.provider == text_of(provider)
    assert update.event.turn_id == optional(turn_id, str)
    chunk = update.event.item
    if item_is_object and item_type == "assistant_message":
        assert chunk == timeline.AssistantMessage(optional(text, str) or "", optional(message_id, str))
    elif item_is_object and item_type == "reasoning":
        assert chunk == timeline.Reasoning(optional(text, str) or "")
    else:
        assert not isinstance(chunk, timeline.AssistantMessage | timeline.Reasoning)
