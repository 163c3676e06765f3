"""Helpers for the transcript tests of files 14-18: read the recorded lines, and check that a
model read from a wire object lost nothing (every key is a field with the same value, or kept
in ``extra_fields``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from daemon_client.protocol.lenient import to_camel

from ..conftest import TRANSCRIPTS


def transcript(name: str) -> list[dict[str, Any]]:
    """Every line of a recorded transcript, parsed."""
    return [json.loads(line) for line in (TRANSCRIPTS / name).read_text().splitlines()]


def session_frames(name: str, direction: str) -> list[tuple[int, dict[str, Any]]]:
    """(line number, inner session message) of every session frame in one direction."""
    found = []
    for number, line in enumerate(transcript(name), start=1):
        frame = line.get("frame", {})
        if line["dir"] == direction and frame.get("type") == "session":
            found.append((number, frame["message"]))
    return found


def _same(value: Any, wire: Any, where: str) -> None:
    if attrs.has(type(value)):
        assert isinstance(wire, Mapping), where
        assert_lossless(value, wire, where)
    elif isinstance(value, tuple):
        assert isinstance(wire, list), where
        assert len(value) == len(wire), f"{where}: {len(wire) - len(value)} entries lost"
        for index, (item, raw) in enumerate(zip(value, wire, strict=True)):
            _same(item, raw, f"{where}[{index}]")
    elif isinstance(value, Mapping) and isinstance(wire, Mapping) and not attrs.has(type(value)):
        assert set(value) == set(wire), where
        for key in wire:
            _same(value[key], wire[key], f"{where}.{key}")
    elif isinstance(value, float) and isinstance(wire, int):
        assert value == wire, where
    else:
        assert value == wire, f"{where}: {value!r} != {wire!r}"


def assert_lossless(model: Any, wire: Mapping[str, Any], where: str = "") -> None:
    """Every key of ``wire`` is read into ``model`` with its value, or kept in ``extra_fields``;
    ``null`` is read as the field's default."""
    fields = {to_camel(field.name): field.name for field in attrs.fields(type(model))}
    extra = getattr(model, "extra_fields", {})
    for key, raw in wire.items():
        at = f"{where}.{key}" if where else key
        if key in extra:
            assert extra[key] == raw, at
            continue
        name = fields.get(key)
        assert name is not None, f"{at}: neither a field nor kept in extra_fields"
        if raw is None:
            continue
        _same(getattr(model, name), raw, at)


def recorded_replies(name: str) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """The recorded replies of a transcript by request type, in order: (reply type, payload
    without ``requestId``)."""
    sent: dict[str, str] = {}
    replies: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for _, message in session_frames(name, "out"):
        if isinstance(message.get("requestId"), str):
            sent[message["requestId"]] = message["type"]
    for _, message in session_frames(name, "in"):
        payload = message.get("payload", {})
        request_type = sent.get(payload.get("requestId"))
        if request_type is not None:
            body = {key: value for key, value in payload.items() if key != "requestId"}
            replies.setdefault(request_type, []).append((message["type"], body))
    return replies


def replay(fake: Any, name: str, *request_types: str) -> None:
    """Make ``fake`` answer each of ``request_types`` with the transcript's recorded replies, in order."""
    recorded = recorded_replies(name)
    for request_type in request_types:
        queue = list(recorded[request_type])

        def answer(ctx: Any, queue: list[tuple[str, dict[str, Any]]] = queue) -> None:
            reply_type, body = queue.pop(0)
            ctx.reply(body, type=reply_type)

        fake.on_request(request_type, answer)
