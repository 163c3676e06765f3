"""``TracingTransport`` over a scripted transport: what each kind of inbound outcome (a refused
frame, a binary frame kept back, a close, a failure) and frames outside a connection leave in
the trace."""

from __future__ import annotations

import io
import json
import queue
from typing import Any

import pytest

from daemon_client.transport.base import ConnectParams, FrameRejected, TransportClosed, TransportError
from daemon_client.transport.trace import WireTrace, open_trace

URL = "ws://daemon.test/ws"


class ScriptedInner:
    """Returns (or raises) the queued items from ``recv``; records what is sent."""

    def __init__(self, *items: str | bytes | BaseException) -> None:
        self.items: queue.SimpleQueue[str | bytes | BaseException] = queue.SimpleQueue()
        for item in items:
            self.items.put(item)
        self.sent: list[str | bytes] = []
        self.closed: list[tuple[int, str]] = []
        self.aborted = False

    def connect(self, params: ConnectParams) -> None:
        pass

    def send_text(self, text: str) -> None:
        self.sent.append(text)

    def send_binary(self, data: bytes) -> None:
        self.sent.append(data)

    def recv(self) -> str | bytes:
        item = self.items.get_nowait()
        if isinstance(item, BaseException):
            raise item
        return item

    def abort(self) -> None:
        self.aborted = True

    def close(self, code: int = 1000, reason: str = "") -> None:
        self.closed.append((code, reason))

    @property
    def selected_subprotocol(self) -> str | None:
        return "paseo.v1"


def _traced(inner: ScriptedInner, *, binary_payloads: bool | None = None) -> tuple[Any, WireTrace, io.StringIO]:
    stream = io.StringIO()
    trace = open_trace(stream, binary_payloads=binary_payloads)
    assert trace is not None
    return trace.wrap(lambda: inner)(), trace, stream


def _events(trace: WireTrace, stream: io.StringIO) -> list[dict[str, Any]]:
    trace.close()
    return [
        {key: value for key, value in json.loads(line).items() if key != "t"} for line in stream.getvalue().splitlines()
    ]


def test_frames_outside_a_connection_pass_through_unrecorded() -> None:
    inner = ScriptedInner('{"type":"early"}', FrameRejected("bad", preview=b"\xff"))
    transport, trace, stream = _traced(inner)
    transport.send_text('{"type":"ping"}')
    transport.send_binary(b"\x01")
    assert transport.recv() == '{"type":"early"}'
    with pytest.raises(FrameRejected):
        transport.recv()
    transport.abort()
    assert inner.sent == ['{"type":"ping"}', b"\x01"]
    assert inner.aborted
    assert _events(trace, stream) == []


@pytest.mark.parametrize("binary_payloads", [False, True], ids=["heads", "payloads"])
def test_refused_frames_binary_frames_and_a_failure_are_recorded_once_each(binary_payloads: bool) -> None:
    inner = ScriptedInner(
        FrameRejected("text frame is not valid UTF-8 (invalid start byte)", preview=b"ok\xff"),
        FrameRejected("binary frame skipped", preview=b"\x00", binary=True, data=b"\x00\x01\x02"),
        b"\x07",
        TransportError("connection reset"),
    )
    transport, trace, stream = _traced(inner, binary_payloads=binary_payloads)
    transport.connect(ConnectParams(url=URL, timeout=5, subprotocols=("paseo.v1",)))
    assert transport.selected_subprotocol == "paseo.v1"
    transport.send_binary(b"\x05")
    for _ in range(2):
        with pytest.raises(FrameRejected):
            transport.recv()
    assert transport.recv() == b"\x07"
    with pytest.raises(TransportError, match="connection reset"):
        transport.recv()
    transport.close(1000, "done")  # the end was recorded already
    assert inner.closed == [(1000, "done")]
    events = _events(trace, stream)
    assert [event["dir"] for event in events] == ["out", "out", "in", "in", "in", "in"]
    assert events[0]["open"]["selectedSubprotocol"] == "paseo.v1"
    assert events[2]["raw"] == "ok\ufffd"
    assert events[2]["rejected"] == "text frame is not valid UTF-8 (invalid start byte)"
    if binary_payloads:
        assert events[1]["frame"] == {"binary": 1, "base64": "BQ=="}
        assert events[3]["frame"] == {"binary": 3, "base64": "AAEC"}
        assert events[4]["frame"] == {"binary": 1, "base64": "Bw=="}
    else:  # by default a binary frame is recorded by its length and first two bytes
        assert events[1]["frame"] == {"binary": 1, "hex": "05", "payload": "omitted"}
        assert events[3]["frame"] == {"binary": 3, "hex": "0001", "payload": "omitted"}
        assert events[4]["frame"] == {"binary": 1, "hex": "07", "payload": "omitted"}
    assert events[5]["abort"] == "tcp"


def test_the_peers_close_is_recorded_with_the_echo() -> None:
    inner = ScriptedInner(TransportClosed(1001, "going away"))
    transport, trace, stream = _traced(inner)
    transport.connect(ConnectParams(url=URL, timeout=5))
    with pytest.raises(TransportClosed):
        transport.recv()
    transport.abort()
    events = _events(trace, stream)
    assert [(event["dir"], event.get("close")) for event in events[1:]] == [
        ("in", {"code": 1001, "reason": "going away"}),
        ("out", {"code": 1001, "reason": ""}),
    ]


def test_an_empty_trace_path_is_refused() -> None:
    with pytest.raises(ValueError, match="trace must be a file path or a writable text stream"):
        open_trace("")


def test_binary_payloads_follow_the_environment_unless_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAEMON_CLIENT_TRACE_BINARY", "1")
    for given, expected in (
        (None, {"binary": 3, "base64": "AgBr"}),
        (False, {"binary": 3, "hex": "0200", "payload": "omitted"}),
    ):
        inner = ScriptedInner()
        transport, trace, stream = _traced(inner, binary_payloads=given)
        transport.connect(ConnectParams(url=URL, timeout=5))
        transport.send_binary(b"\x02\x00k")
        assert _events(trace, stream)[1]["frame"] == expected
