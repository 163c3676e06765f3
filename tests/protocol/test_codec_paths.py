"""Codec paths the daemon rarely exercises: lone surrogates and deep nesting (with and without
orjson), status payloads, unstructuring models with unknown fields, and hello redaction."""

from __future__ import annotations

import json

import pytest

from daemon_client.protocol import codec
from daemon_client.protocol.agents import AgentSnapshot
from daemon_client.protocol.codec import (
    MalformedFrame,
    decode_frame,
    encode,
    loads,
    parse_status,
    redact_hello,
    structure,
    unstructure,
)
from daemon_client.protocol.models import SessionMessage

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
