"""Deep nesting and cut characters in frames and recordings: clear errors naming what and where."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from daemon_client.protocol import codec
from daemon_client.protocol.codec import MalformedFrame, decode_frame
from daemon_client.testing.replay.cassette import Recording, RecordingError

OK = json.dumps({"dir": "in", "t": 0.1, "conn": "c1", "frame": {"type": "pong"}})


@pytest.mark.parametrize("depth", [130, 900, 5000])
@pytest.mark.parametrize("stdlib", [False, True])
def test_a_frame_nested_past_the_limit_is_malformed_on_either_parser(monkeypatch, depth: int, stdlib: bool) -> None:
    if stdlib:
        monkeypatch.setattr(codec, "_loads", json.loads)
    text = '{"type":"session","message":{"type":"x","payload":{"a":' + "[" * depth + "]" * depth + "}}}"
    with pytest.raises(MalformedFrame, match=f"frame of {len(text)} chars is nested more than 128 levels deep"):
        decode_frame(text)


def test_a_recording_cut_inside_a_utf8_character_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_bytes(OK.encode() + b"\n" + '{"dir":"in","raw":"é'.encode()[:-1])
    with pytest.raises(RecordingError, match=rf"{path}:2: not UTF-8"):
        Recording.load(path)


def test_a_deeply_nested_recording_line_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text(OK + "\n" + '{"dir":"in","frame":' + "[" * 50_000 + "]" * 50_000 + "}\n", encoding="utf-8")
    with pytest.raises(RecordingError, match=rf"{path}:2: .*nesting limit"):
        Recording.load(path)
