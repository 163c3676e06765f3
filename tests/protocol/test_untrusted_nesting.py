"""Deep nesting and cut characters in frames and recordings: clear errors naming what and where."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from daemon_client._brackets import few_brackets
from daemon_client._nesting import MAX_DEPTH
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


DEEP = "[" * 50_000 + "]" * 50_000


def test_a_deeply_nested_plaintext_frame_on_the_relay_is_not_a_message_type() -> None:
    from daemon_client.transport.relay.channel import message_type

    assert message_type('{"type":"e2ee_ready","x":' + DEEP + "}") is None


def test_a_deeply_nested_traced_frame_is_recorded_as_scrubbed_raw_text() -> None:
    import io

    from daemon_client.transport.trace_sink import TraceSink

    sink = TraceSink(io.StringIO()).acquire()
    try:
        sink.secrets.add(["hunter2-secret"])
        line = json.loads(sink._line(0.0, "c1", "in", "text", '{"password":"hunter2-secret","x":' + DEEP + "}"))
    finally:
        sink.release(5.0)
    assert "frame" not in line
    assert "hunter2-secret" not in line["raw"]
    assert line["raw"].startswith('{"password":"<redacted>"')


def test_a_deeply_nested_command_line_value_is_taken_as_text() -> None:
    from daemon_client.cli.settings import _value

    assert _value(DEEP) == DEEP
    assert _value('{"a":[1]}') == {"a": [1]}


@given(st.text(alphabet='{[]}a"é', max_size=300), st.integers(0, 40))
def test_the_bracket_prefilter_counts_both_brackets_up_to_the_limit(text: str, limit: int) -> None:
    """``few_brackets`` says what counting every ``{`` and ``[`` would say, for text and bytes."""
    expected = text.count("{") + text.count("[") <= limit
    assert few_brackets(text, limit) is expected
    assert few_brackets(text.encode(), limit) is expected


@pytest.mark.parametrize(("opener", "closer"), [('{"a":', "}"), ("[", "]")])
def test_a_frame_at_the_limit_is_read_and_one_past_it_is_refused(opener: str, closer: str) -> None:
    """A frame nested exactly ``MAX_DEPTH`` deep is read; one level more is refused, whichever
    bracket nests it and however few brackets the rest of the frame holds."""

    def frame(depth: int) -> str:  # the envelope takes three levels
        value = opener * (depth - 3) + "1" + closer * (depth - 3)
        return '{"type":"session","message":{"type":"x","payload":{"v":' + value + "}}}"

    assert decode_frame(frame(MAX_DEPTH)).payload["v"] is not None  # type: ignore[union-attr]
    with pytest.raises(MalformedFrame, match="nested more than"):
        decode_frame(frame(MAX_DEPTH + 1))
