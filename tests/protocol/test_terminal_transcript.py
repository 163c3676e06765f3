"""Transcript 13 (terminals on 0.1.65): every line decodes without loss, binary frames included,
and the recorded daemon frames, replayed to the client in answer to its own calls, give the
results, callbacks and outgoing binary frames the recording shows."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

import daemon_client as dc
from daemon_client.protocol import SessionMessage, decode_frame
from daemon_client.protocol.terminal_frames import (
    INPUT,
    OUTPUT,
    RESIZE,
    SNAPSHOT,
    decode_output,
    decode_terminal_frame,
    encode_input,
    encode_resize,
)
from daemon_client.protocol.terminals import (
    TerminalInfo,
    parse_capture,
    parse_terminal_list,
    parse_terminals_changed,
)
from daemon_client.subscriptions import terminal_streams
from daemon_client.testing import FakeDaemon, RecordingHandler
from daemon_client.testing.fake.engine.connection import FakeConnection
from daemon_client.testing.fake.engine.handlers import RequestContext

from ..conftest import TRANSCRIPTS

FILE = TRANSCRIPTS / "13-terminals.jsonl"
LINES: list[dict[str, Any]] = [json.loads(line) for line in FILE.read_text().splitlines()]
CWD = "/home/dev/projects/demo"
FIRST = "a321004f-c220-483c-82a1-f2626373934a"
SECOND = "5f753a72-f625-466e-b2a7-9d4e40278f15"
REPLY_KEYS = {
    "subscribe_terminal_response": {"terminalId", "slot", "error", "requestId"},
    "kill_terminal_response": {"terminalId", "success", "requestId"},
    "terminal_stream_exit": {"terminalId"},
}


def _binary(line: dict[str, Any]) -> tuple[bytes, bool]:
    """A binary line's bytes and whether they are complete (the hex is cut at 64 bytes)."""
    data = bytes.fromhex(line["frame"]["hex"])
    return data, len(data) == line["frame"]["binary"]


# ------------------------------------------------------------------------------ decoding


def test_every_line_decodes_without_loss() -> None:
    kinds: dict[str, int] = {}
    for number, line in enumerate(LINES, start=1):
        where = f"13-terminals.jsonl:{number}"
        frame = line.get("frame")
        if frame is None:
            assert "open" in line or "close" in line, where
            continue
        if "binary" in frame:
            data, complete = _binary(line)
            decoded = decode_terminal_frame(data)
            assert decoded is not None, where
            kinds[f"{line['dir']}-{decoded.opcode}"] = kinds.get(f"{line['dir']}-{decoded.opcode}", 0) + 1
            if decoded.opcode == OUTPUT:
                assert complete, where
                assert decode_output(decoded.payload).encode() == decoded.payload, where
            elif decoded.opcode == SNAPSHOT:
                assert not complete, where  # 209,438 bytes, of which the hex keeps the first 64
                assert frame["binary"] == 209_438, where
                assert decoded.payload.startswith(b'{"rows":24,"cols":80,"grid":[[{"char":"b"'), where
            elif decoded.opcode == INPUT:
                assert data == encode_input(decoded.slot, decoded.payload.decode()), where
            else:
                assert decoded.opcode == RESIZE, where
                assert data == encode_resize(decoded.slot, **json.loads(decoded.payload)), where
            continue
        if line["dir"] == "out":
            continue  # the client's frames: compared with what this client sends in the replay
        message = decode_frame(json.dumps(frame))
        if not isinstance(message, SessionMessage) or message.type == "status":
            continue
        kinds[message.type] = kinds.get(message.type, 0) + 1
        payload = message.payload
        if message.type == "terminals_changed":
            changed = parse_terminals_changed(payload)
            assert changed.extra_fields == {}, where
            assert all(entry.extra_fields == {} for entry in changed.terminals), where
        elif message.type == "list_terminals_response":
            listed = parse_terminal_list(payload)
            assert listed.extra_fields == {}, where
            assert all(entry.extra_fields == {} and entry.cwd is None for entry in listed.terminals), where
        elif message.type == "capture_terminal_response":
            captured = parse_capture(payload)
            assert captured.extra_fields == {}, where
            assert len(captured.lines) == len(payload["lines"]), where
        elif message.type == "create_terminal_response":
            created = dc.protocol.structure(payload["terminal"], TerminalInfo)
            assert created.extra_fields == {}, where
            assert created.cwd == CWD, where
        else:
            assert set(payload) <= REPLY_KEYS[message.type], where
    assert kinds == {
        "terminals_changed": 7,
        "create_terminal_response": 2,
        "subscribe_terminal_response": 3,
        "in-4": 4,
        "in-1": 5,
        "out-2": 1,
        "out-3": 1,
        "capture_terminal_response": 3,
        "list_terminals_response": 3,
        "terminal_stream_exit": 2,
        "kill_terminal_response": 2,
    }


def _snapshot_payload(prefix: bytes) -> bytes:
    """A whole snapshot of the recorded screen (``bash-5.2# `` on row 0) in 0.1.65's cell format."""
    flags = dict.fromkeys(("bold", "italic", "underline", "dim", "inverse", "strikethrough"), False)
    rows = [list("bash-5.2# ".ljust(80))] + [[" "] * 80 for _ in range(23)]
    state = {"rows": 24, "cols": 80, "grid": [[{"char": c, **flags} for c in row] for row in rows],
             "scrollback": [], "cursor": {"row": 0, "col": 10}, "title": "bash --noprofile --norc"}  # fmt: skip
    data = json.dumps(state, separators=(",", ":")).encode()
    assert data.startswith(prefix)  # the recorded first bytes, exactly
    return data


# ------------------------------------------------------------------------------ the replay


@attrs.define
class Step:
    """One recorded client frame and the daemon frames recorded right after it."""

    number: int
    out: dict[str, Any]
    answers: list[dict[str, Any]]


def _steps() -> list[Step]:
    steps: list[Step] = []
    for number, line in enumerate(LINES, start=1):
        frame = line.get("frame")
        if frame is None or frame.get("type") == "hello":
            continue
        if line["dir"] == "out":
            steps.append(Step(number, frame, []))
        elif steps:
            steps[-1].answers.append(frame)
    return steps


class Replay:
    """Answers each client frame with the frames recorded after the matching client frame."""

    def __init__(self, fake: FakeDaemon) -> None:
        self.fake = fake
        self.steps = _steps()
        self.lock = threading.Lock()
        self.mismatches: list[str] = []
        for kind in {s.out["message"]["type"] for s in self.steps if "message" in s.out}:
            fake.registry.register(kind, self._on_request, required=(), request_id_optional=True)
        fake.registry.set_binary_handler(self._on_binary)

    def _next(self, what: str) -> Step:
        with self.lock:
            if not self.steps:
                self.mismatches.append(f"nothing recorded for {what}")
                raise AssertionError(what)
            return self.steps.pop(0)

    def _on_request(self, ctx: RequestContext) -> None:
        step = self._next(ctx.request_type)
        recorded = step.out.get("message", {})
        same = recorded.get("type") == ctx.request_type
        if not same and not (ctx.request_type == "terminal_input" and "binary" in step.out):
            self.mismatches.append(f"L{step.number}: recorded {recorded.get('type') or step.out}, got {ctx.message}")
        self._answer(ctx.connection, step, recorded.get("requestId"), ctx.request_id)

    def _on_binary(self, connection: FakeConnection, data: bytes) -> None:
        step = self._next("a binary frame")
        if "binary" in step.out:
            if data != bytes.fromhex(step.out["hex"]):
                self.mismatches.append(f"L{step.number}: recorded {step.out['hex']}, got {data.hex()}")
        else:  # recorded as terminal_input JSON; this client types into a streamed terminal in binary
            recorded = step.out["message"]["message"]["data"]
            if data[:1] != bytes([INPUT]) or data[2:].decode() != recorded:
                self.mismatches.append(f"L{step.number}: recorded input {recorded!r}, got {data!r}")
        self._answer(connection, step, None, None)

    def _answer(self, connection: FakeConnection, step: Step, recorded_id: str | None, request_id: str | None) -> None:
        for frame in step.answers:
            if "binary" in frame:
                data = bytes.fromhex(frame["hex"])
                if len(data) < frame["binary"]:
                    data = data[:2] + _snapshot_payload(data[2:])
                connection.send_raw(data, binary=True)
                continue
            payload = frame["message"]["payload"]
            if recorded_id is not None and payload.get("requestId") == recorded_id:
                payload = {**payload, "requestId": request_id}
            connection.send_frame({**frame, "message": {**frame["message"], "payload": payload}})


@pytest.fixture
def replay(fakes, make_client) -> Iterator[tuple[Replay, dc.Client]]:
    fake = fakes("broadcast")
    player = Replay(fake)
    client = make_client(fake, "loopback", client_id="fixture-13-A")
    client.connect()
    yield player, client
    assert player.mismatches == []


def test_transcript_13_replayed_through_the_client(replay: tuple[Replay, dc.Client], monkeypatch) -> None:
    player, client = replay
    parsed: list[int] = []
    real = terminal_streams.parse_terminal_state
    monkeypatch.setattr(terminal_streams, "parse_terminal_state", lambda data: parsed.append(len(data)) or real(data))

    lists = RecordingHandler[dc.TerminalsChanged]("lists")
    directory = client.terminals.subscribe(lists, cwd=CWD)  # L4-L5
    assert directory.ready.result(5).terminals == ()
    shell = client.terminals.create(cwd=CWD, name="fixture-shell", command="/bin/bash", args=["--noprofile", "--norc"])
    assert shell.id == FIRST
    assert shell.current() == TerminalInfo(id=FIRST, name="fixture-shell", cwd=CWD, title="bash --noprofile --norc")
    lists.wait_for(3)  # both recorded lists arrived before the reply (L7, L8)

    snapshots, outputs, exits = (RecordingHandler[Any](name) for name in ("snapshots", "outputs", "exits"))
    stream = shell.stream(on_output=outputs, on_snapshot=snapshots, on_exit=exits)  # L10-L13
    assert stream.slot == 0
    shell.write("echo hello\r")  # recorded as JSON (L14); streamed here, so a binary Input frame
    assert stream.expect(r"hello\r\n.*bash-5\.2# ").group(0).endswith("bash-5.2# ")
    (screen,) = snapshots.wait_for()
    assert screen.screen_lines()[0] == "bash-5.2#"
    assert parsed == [len(_snapshot_payload(b""))]  # two identical 209 KB frames: one parse
    assert outputs.wait_for()[0] == "echo hello\r\n\x1b[?2004l\rhello\r\n\x1b[?2004hbash-5.2# "

    captured = shell.capture()  # L16-L17
    assert captured.lines[:3] == ("bash-5.2# echo hello", "hello", "bash-5.2#")
    assert captured.total_lines == 24
    assert shell.capture(-3, -1, strip_ansi=False).lines == ("", "", "")
    shell.write("sleep 30\r")  # L20
    stream.expect(r"sleep 30\r\n")
    shell.send_keys("C-c")  # L22: 02 00 03, compared byte for byte by the replay
    stream.expect(r"\^C\r\n")
    shell.resize(30, 100)  # L24: 03 00 {"rows":30,"cols":100}
    stream.expect(r"\x1b\[K\rbash-5\.2# ", strip_ansi=False)

    listed = client.terminals.list(cwd=CWD)  # L26-L29
    assert (listed.cwd, [t.id for t in listed.terminals]) == (CWD, [FIRST])
    everything = client.terminals.list()
    assert (everything.cwd, [t.name for t in everything.terminals]) == (None, ["fixture-shell"])
    assert shell.current().cwd == CWD  # type: ignore[union-attr]  # kept: 0.1.65 lists no cwd
    with pytest.raises(dc.RpcError, match="Terminal not found"):
        client.terminals.ref("no-such-terminal").stream()  # L30-L31
    assert client.terminals.ref("no-such-terminal").capture().total_lines == 0  # L32-L33

    shell.kill()  # L34-L37: stream exit, list, reply
    exits.wait_for()
    assert stream.exited
    shell.kill()  # L38-L39
    second = client.terminals.create(cwd=CWD, command="/bin/bash", args=["--noprofile", "--norc"])  # L40-L43
    assert (second.id, second.current().name) == (SECOND, "Terminal 1")  # type: ignore[union-attr]
    second_exits = RecordingHandler[Any]("second exits")
    second_stream = second.stream(on_exit=second_exits)  # L44-L47
    assert second_stream.slot == 1
    second.write("\x04")  # L48-L51: C-d, the shell ends by itself
    second_exits.wait_for()
    assert list(second_stream.output(timeout=5)) == ["\x1b[?2004l\r\r\nexit\r\n"]
    assert client.terminals.list(cwd=CWD).terminals == ()  # L52-L53
    directory.release()  # L54
    client.ping()
    assert client.flush_callbacks()
    assert lists.items[-1].terminals == ()
    assert player.steps == []
    assert len(parsed) == 1  # the second stream has no snapshot reader: its snapshots were never parsed
