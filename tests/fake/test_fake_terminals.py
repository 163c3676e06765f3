"""The fake daemon's terminals, driven with raw frames: the scripted shell, the wire shapes of
each host generation (transcript 13 for 0.1.65), slots and binary frames, and stream faults."""

from __future__ import annotations

import json
from typing import Any

import pytest

from daemon_client.protocol.terminals import parse_terminal_state
from daemon_client.testing.fake.terminals.shell import PROMPT, ScriptedShell

from ..raw_client import Connect, Fake, RawClient, connect_fixture

connect = connect_fixture()
CWD = "/home/dev/projects/demo"


def _binary(client: RawClient) -> bytes:
    event = client.next_event()
    assert event[0] == "binary", event
    data: bytes = event[1]
    return data


# ------------------------------------------------------------------------------ the scripted shell


def test_the_shell_is_deterministic() -> None:
    runs = []
    for _ in range(2):
        shell = ScriptedShell()
        events = [*shell.start(), *shell.feed("echo hi\rseq 2\r"), *shell.feed("nope\r")]
        runs.append((events, shell.capture(None, None, True), shell.snapshot()))
    assert runs[0] == runs[1]
    events = runs[0][0]
    assert events == [
        ("output", PROMPT),
        ("output", "echo hi\r\nhi\r\n" + PROMPT + "seq 2\r\n"),
        ("output", "1\r\n"),
        ("output", "2\r\n"),
        ("output", PROMPT),
        ("output", "nope\r\nfake-sh: nope: command not found\r\n" + PROMPT),
    ]


def test_the_shell_edits_sleeps_and_exits() -> None:
    shell = ScriptedShell(rows=5, cols=10)
    shell.start()
    assert shell.feed("ab\x7fc\x1b[D") == [("output", "ab\b \bc")]
    assert shell.feed("\r") == [("output", "\r\nfake-sh: ac: command not found\r\n" + PROMPT)]
    assert shell.feed("sleep 9\r") == [("output", "sleep 9\r\n")]
    assert shell.feed("typed ahead\x03") == [("output", "typed ahead^C\r\n" + PROMPT)]
    assert shell.status == 130  # interrupted
    assert shell.feed("false; echo $?; nope; echo $?\r") == [
        ("output", "false; echo $?; nope; echo $?\r\n1\r\nfake-sh: nope: command not found\r\n127\r\n" + PROMPT)
    ]
    assert shell.feed("echo a; sleep 1; echo b\r") == [("output", "echo a; sleep 1; echo b\r\na\r\n")]
    assert shell.feed("\x03") == [("output", "^C\r\n" + PROMPT)]  # the rest of the line is dropped
    assert shell.feed("title build\r") == [("title", "build"), ("output", "title build\r\n" + PROMPT)]
    assert shell.title == "build"
    assert shell.resize(5, 10) == []  # the current size: nothing
    assert shell.resize(6, 12) == [("output", "\r\x1b[K" + PROMPT)]
    assert shell.feed("x\x04") == [("output", "x")]  # C-d on a non-empty line does nothing
    assert shell.feed("\x7f\x04") == [("output", "\b \bexit\r\n"), ("exit", "")]
    assert shell.exited
    assert shell.feed("echo too late\r") == []


def test_capture_numbers_scrollback_then_screen() -> None:
    shell = ScriptedShell(rows=3, cols=20)
    shell.start()
    shell.feed("seq 4\r")
    lines, total = shell.capture(None, None, True)
    assert lines == ["fake$ seq 4", "1", "2", "3", "4", "fake$"]
    assert total == 6
    assert shell.capture(-2, -1, True) == (["4", "fake$"], 6)
    assert shell.capture(-100, 0, True) == (["fake$ seq 4"], 6)
    assert shell.capture(4, 2, True) == ([], 6)
    assert shell.capture(0, 0, False) == ([PROMPT + "seq 4"], 6)
    state = parse_terminal_state(shell.snapshot())
    assert state.lines() == lines
    assert (state.rows, state.cols, state.cursor.row, state.cursor.col) == (3, 20, 2, 6)
    assert len(state.scrollback) == 3
    shell.feed("clear\r")
    assert shell.capture(None, None, True)[0][-3:] == ["fake$", "", ""]


def test_long_lines_wrap_at_the_width() -> None:
    shell = ScriptedShell(rows=4, cols=8)
    shell.start()
    shell.feed("echo 123456789\r")
    assert shell.capture(None, None, True)[0] == ["fake$ ec", "ho 12345", "6789", "12345678", "9", "fake$"]


# ------------------------------------------------------------------------------ 0.1.65 on the wire


def test_the_recorded_terminal_session_of_a_broadcast_host(fakes: Fake, connect: Connect) -> None:
    """The frames of transcript 13, in its order (IDs, prompts and sizes aside)."""
    fake = fakes("broadcast")
    client = connect(fake, "fixture-13-A")
    client.send_session("subscribe_terminals_request", cwd=CWD)
    assert client.message() == ("terminals_changed", {"cwd": CWD, "terminals": []})
    request = client.call(
        "create_terminal_request", cwd=CWD, name="fixture-shell", command="/bin/bash", args=["--noprofile", "--norc"],
        workspaceId="ignored", size={"rows": 5, "cols": 5},
    )  # fmt: skip
    (kind, created), before = client.reply(request)
    entry = {"id": created["terminal"]["id"], "name": "fixture-shell", "title": "/bin/bash --noprofile --norc"}
    assert before == [("terminals_changed", {"cwd": CWD, "terminals": [entry]})] * 2
    assert (kind, created) == ("create_terminal_response",
                               {"requestId": request, "terminal": {**entry, "cwd": CWD}, "error": None})  # fmt: skip
    terminal_id = entry["id"]
    assert fake.terminals.get(terminal_id).shell.rows == 24  # type: ignore[union-attr]

    assert client.ask("subscribe_terminal_request", terminalId=terminal_id) == {
        "requestId": client.fake.received[-1]["message"]["requestId"], "terminalId": terminal_id, "slot": 0,
        "error": None,
    }  # fmt: skip
    first, second = _binary(client), _binary(client)
    assert first == second
    assert first[:2] == b"\x04\x00"
    assert first[2:].startswith(b'{"rows":24,"cols":80,"grid":[[{"char":"f","bold":false,"italic":false')
    assert len(first) > 200_000

    client.send_session("terminal_input", terminalId=terminal_id, message={"type": "input", "data": "echo hello\r"})
    assert _binary(client) == b"\x01\x00" + f"echo hello\r\nhello\r\n{PROMPT}".encode()
    captured = client.ask("capture_terminal_request", terminalId=terminal_id)
    assert captured["lines"][:4] == ["fake$ echo hello", "hello", "fake$", ""]
    assert captured["totalLines"] == 24
    client.send_session("terminal_input", terminalId=terminal_id, message={"type": "input", "data": "sleep 30\r"})
    assert _binary(client) == b"\x01\x00sleep 30\r\n"
    client.send_binary(b"\x02\x00\x03")
    assert _binary(client) == b"\x01\x00^C\r\n" + PROMPT.encode()
    client.send_binary(b'\x03\x00{"rows":30,"cols":100}')
    assert _binary(client) == b"\x01\x00\r\x1b[K" + PROMPT.encode()

    assert client.ask("list_terminals_request", cwd=CWD)["terminals"] == [entry]
    everything = client.ask("list_terminals_request")
    assert "cwd" not in everything
    assert everything["terminals"] == [entry]
    refused = client.ask("subscribe_terminal_request", terminalId="no-such-terminal")
    assert (refused["error"], "slot" in refused) == ("Terminal not found", False)
    assert client.ask("capture_terminal_request", terminalId="no-such-terminal")["lines"] == []

    request = client.call("kill_terminal_request", terminalId=terminal_id)
    (kind, killed), before = client.reply(request)
    assert before == [
        ("terminal_stream_exit", {"terminalId": terminal_id}),
        ("terminals_changed", {"cwd": CWD, "terminals": []}),
    ]
    assert killed["success"] is True
    assert client.ask("kill_terminal_request", terminalId=terminal_id)["success"] is True  # gone: still true

    second_id = client.ask("create_terminal_request", cwd=CWD)["terminal"]["id"]
    assert client.ask("list_terminals_request", cwd=CWD)["terminals"][0]["name"] == "Terminal 1"
    assert client.ask("subscribe_terminal_request", terminalId=second_id)["slot"] == 1  # not reused
    assert _binary(client)[:2] == _binary(client)[:2] == b"\x04\x01"
    client.send_session("terminal_input", terminalId=second_id, message={"type": "input", "data": "\x04"})
    assert _binary(client) == b"\x01\x01exit\r\n"
    assert client.message() == ("terminal_stream_exit", {"terminalId": second_id})
    assert client.message() == ("terminals_changed", {"cwd": CWD, "terminals": []})
    client.send_session("unsubscribe_terminals_request", cwd=CWD)
    client.quiet()


def test_a_flagged_host_speaks_workspaces(fakes: Fake, connect: Connect) -> None:
    fake = fakes("capable")
    client = connect(fake)
    client.send_session("subscribe_terminals_request", cwd=CWD, workspaceId="w1")
    assert client.message() == ("terminals_changed", {"cwd": CWD, "workspaceId": "w1", "terminals": []})
    request = client.call("create_terminal_request", cwd=CWD, workspaceId="w1", size={"rows": 10, "cols": 40})
    (_, created), before = client.reply(request)
    entry = {"id": created["terminal"]["id"], "name": "Terminal 1", "cwd": CWD, "workspaceId": "w1", "title": "fake-sh"}
    assert created["terminal"] == entry
    assert before == [("terminals_changed", {"cwd": CWD, "workspaceId": "w1", "terminals": [entry]})]
    other = client.ask("create_terminal_request", cwd=CWD, workspaceId="w2")["terminal"]
    assert client.ask("list_terminals_request", workspaceId="w1", cwd="/else")["terminals"] == [entry]
    assert client.ask("list_terminals_request", cwd=CWD)["terminals"] == [entry, other]
    assert fake.terminals.get(entry["id"]).shell.rows == 10  # type: ignore[union-attr]
    client.quiet()  # one list per change on this host, and none for another workspace


def test_binary_input_on_a_slot_the_session_does_not_hold_is_ignored(fakes: Fake, connect: Connect) -> None:
    fake = fakes("broadcast")
    owner, stranger = connect(fake, "owner"), connect(fake, "stranger")
    terminal = fake.terminals.create(CWD)
    assert owner.ask("subscribe_terminal_request", terminalId=terminal.id)["slot"] == 0
    _binary(owner), _binary(owner)  # the two snapshots
    stranger.send_binary(b"\x02\x00echo intruder\r")  # slot 0 belongs to another session
    stranger.send_binary(b"\x02\x07nobody\r")
    stranger.send_binary(b"\x09\x00unknown opcode")
    owner.send_binary(b"\x03\x00not json")
    owner.send_binary(b"\x02\x00")  # empty input
    owner.quiet()
    stranger.quiet()
    assert [(i.terminal_id, i.data) for i in fake.terminals.inputs] == [(terminal.id, "")]
    assert fake.terminals.get(terminal.id).shell.capture(0, 0, True)[0] == ["fake$"]  # type: ignore[union-attr]


def test_every_socket_of_a_streaming_session_gets_the_frames(fakes: Fake, connect: Connect) -> None:
    fake = fakes("capable")
    first, second = connect(fake, "same"), connect(fake, "same")
    terminal = fake.terminals.create(CWD)
    assert first.ask("subscribe_terminal_request", terminalId=terminal.id)["slot"] == 0
    assert _binary(first)[:2] == _binary(second)[:2] == b"\x04\x00"
    fake.terminals.type(terminal.id, "echo both\r")
    assert _binary(first) == _binary(second)


def test_a_drop_mid_stream_ends_the_sockets_after_n_frames(fakes: Fake, connect: Connect) -> None:
    fake = fakes("broadcast")
    client = connect(fake)
    terminal = fake.terminals.create(CWD)
    client.ask("subscribe_terminal_request", terminalId=terminal.id)
    _binary(client), _binary(client)
    fake.terminals.drop_mid_stream(terminal.id, after=2)
    fake.terminals.type(terminal.id, "seq 5\r")
    assert _binary(client) == b"\x01\x00seq 5\r\n"
    assert _binary(client) == b"\x01\x001\r\n"
    assert client.expect_close() == (None, "")
    lines = fake.terminals.get(terminal.id).shell.capture(None, None, True)[0]  # type: ignore[union-attr]
    assert lines[:8] == ["fake$ seq 5", "1", "2", "3", "4", "5", "fake$", ""]  # the shell went on


def test_fresh_snapshots_and_slot_exhaustion(fakes: Fake, connect: Connect) -> None:
    fake = fakes("capable")
    client = connect(fake)
    terminals = [fake.terminals.create(CWD, size=(2, 8)) for _ in range(257)]  # small snapshots
    for index, terminal in enumerate(terminals[:256]):
        assert client.ask("subscribe_terminal_request", terminalId=terminal.id)["slot"] == index
        assert _binary(client)[:2] == bytes([4, index])
    refused = client.ask("subscribe_terminal_request", terminalId=terminals[256].id)
    assert refused == {"requestId": refused["requestId"], "terminalId": terminals[256].id,
                       "error": "No terminal stream slots available"}  # fmt: skip
    again = client.ask("subscribe_terminal_request", terminalId=terminals[3].id)
    assert again["slot"] == 3  # the slot it already has, and a fresh snapshot
    assert _binary(client)[:2] == b"\x04\x03"
    client.send_session("unsubscribe_terminal_request", terminalId=terminals[3].id)
    assert client.ask("subscribe_terminal_request", terminalId=terminals[256].id)["slot"] == 3
    snapshot: dict[str, Any] = json.loads(_binary(client)[2:])
    assert snapshot["grid"][0][0] == {"char": "f", "bold": False, "italic": False, "underline": False, "dim": False,
                                      "inverse": False, "strikethrough": False}  # fmt: skip
    fake.terminals.send_snapshot(terminals[0].id)
    assert _binary(client)[:2] == b"\x04\x00"


@pytest.mark.parametrize("kind", ["capable", "broadcast"])
def test_refusals_are_in_the_response(fakes: Fake, connect: Connect, kind: str) -> None:
    client = connect(fakes(kind))
    assert client.ask("create_terminal_request", cwd="relative")["terminal"] is None
    agent = client.ask("create_terminal_request", cwd=CWD, agentId="a1")
    assert agent["error"] == "Agent-backed terminals are no longer supported for agent a1"
    unknown = client.ask("terminal.rename.request", terminalId="t", title="x")
    assert unknown["code"] == "unknown_schema"
