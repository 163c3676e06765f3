"""``client.terminals``: every call over memory and loopback on every host kind, the workspace
gate (``features.workspaceTerminals``), handles, arguments refused before sending and replies
without a readable terminal, and the terminal directory with its restore."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler

from ...conftest import TRANSPORTS

HOSTS = {
    "capable": ("capable", {}),
    "capable-without-flag": ("capable", {"workspaceTerminals": False}),
    "selective": ("selective", {}),
    "broadcast": ("broadcast", {}),
}
"""Host configurations: the newest gate on (capable), off (an older capable host), and the
legacy terminal API of selective and 0.1.65-like broadcast hosts."""
FLAGGED = ["capable"]
LEGACY = ["capable-without-flag", "selective", "broadcast"]
CWD = "/home/dev/projects/demo"

Connected = Callable[..., tuple[FakeDaemon, dc.Client]]


@pytest.fixture
def connected(fakes, make_client) -> Connected:
    def make(host: str, transport: str = "memory", **options: Any) -> tuple[FakeDaemon, dc.Client]:
        kind, features = HOSTS[host]
        fake = fakes(kind, features=features)
        client = make_client(fake, transport, **options)
        client.connect()
        return fake, client

    return make


def _sent(fake: FakeDaemon, message_type: str) -> list[dict[str, Any]]:
    return [f["message"] for f in fake.received if f.get("type") == "session" and f["message"]["type"] == message_type]


def _settle(client: dc.Client) -> None:
    client.ping()
    assert client.flush_callbacks()


# ------------------------------------------------------------------------------ every call, every host


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("host", list(HOSTS))
def test_every_call_on_every_host(connected: Connected, host: str, transport: str) -> None:
    fake, client = connected(host, transport)
    terminal = client.terminals.create(cwd=CWD, name="build", command="/bin/fake", args=["-l"])
    info = terminal.current()
    assert info is not None
    assert (info.name, info.cwd, info.title) == ("build", CWD, "/bin/fake -l")
    assert client.terminals.ref(terminal.id) is terminal  # one handle per ID
    listed = client.terminals.list(cwd=CWD)
    assert [t.id for t in listed.terminals] == [terminal.id]
    assert listed.cwd == CWD
    assert [t.extra_fields for t in listed.terminals] == [{}]
    assert terminal.current() is not None
    assert terminal.current().cwd == CWD  # kept although legacy hosts list no cwd
    assert terminal.refresh() == terminal.current()

    assert terminal.write("echo one\r") == len("echo one\r")
    assert terminal.send_keys("echo", "Space", "two", "Enter") == len("echo two\r")
    terminal.resize(30, 100)
    _settle(client)
    capture = terminal.capture()
    assert capture.lines[:4] == ("fake$ echo one", "one", "fake$ echo two", "two")
    assert capture.total_lines == 30  # the resized screen
    assert terminal.capture(-30, -29, strip_ansi=False).lines[0] == "\x1b[1mfake$\x1b[0m echo one"
    assert terminal.capture(5, 2).lines == ()
    assert [(i.via, i.kind) for i in fake.terminals.inputs] == [
        ("json", "input"),
        ("json", "input"),
        ("json", "resize"),
    ]

    terminal.kill()
    assert terminal.current() is None
    assert terminal.refresh() is None
    assert client.terminals.list().terminals == ()
    terminal.kill()  # the daemon confirms for a terminal already gone


@pytest.mark.parametrize("host", list(HOSTS))
def test_size_is_applied_on_every_host(connected: Connected, host: str) -> None:
    fake, client = connected(host)
    terminal = client.terminals.create(cwd=CWD, size=(40, 120))
    _settle(client)
    shell = fake.terminals.get(terminal.id).shell  # type: ignore[union-attr]
    assert (shell.rows, shell.cols) == (40, 120)
    resized_after = [i for i in fake.terminals.inputs if i.kind == "resize"]
    if host in FLAGGED:
        assert _sent(fake, "create_terminal_request")[0]["size"] == {"rows": 40, "cols": 120}
        assert resized_after == []
    else:  # this host would drop size and start at 80x24: the client resizes right after
        assert "size" not in _sent(fake, "create_terminal_request")[0]
        assert [(i.via, i.data) for i in resized_after] == [("json", {"rows": 40, "cols": 120})]


@pytest.mark.parametrize("host", list(HOSTS))
def test_default_names_are_numbered_per_directory(connected: Connected, host: str) -> None:
    _, client = connected(host)
    first = client.terminals.create(cwd=CWD)
    second = client.terminals.create(cwd=CWD)
    other = client.terminals.create(cwd="/tmp")
    assert [t.current().name for t in (first, second, other)] == ["Terminal 1", "Terminal 2", "Terminal 1"]  # type: ignore[union-attr]
    assert {t.id for t in client.terminals.list().terminals} == {first.id, second.id, other.id}
    assert [t.id for t in client.terminals.list(cwd="/tmp").terminals] == [other.id]


# ------------------------------------------------------------------------------ the workspace gate


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_workspace_terminals_on_a_flagged_host(connected: Connected, transport: str) -> None:
    fake, client = connected("capable", transport)
    fake.workspaces.open("/home/dev/projects/api")
    workspace = client.workspaces.list().entries[0]
    handle = client.workspaces.ref(workspace)
    assert client.terminals.workspace_terminals
    created = handle.terminals.create(name="tests")
    assert created.current().workspace_id == workspace.id  # type: ignore[union-attr]
    assert created.current().cwd == workspace.directory  # type: ignore[union-attr]
    assert _sent(fake, "create_terminal_request")[0]["workspaceId"] == workspace.id
    elsewhere = client.terminals.create(workspace_id="other-workspace", cwd=workspace.directory)
    assert [t.id for t in handle.terminals.list().terminals] == [created.id]
    by_directory = client.terminals.list(cwd=workspace.directory)
    assert {t.id for t in by_directory.terminals} == {created.id, elsewhere.id}
    assert client.terminals.list(workspace_id="other-workspace", cwd="/ignored").terminals[0].id == elsewhere.id
    # without cwd the workspace's directory is looked up in the workspace directory
    looked_up = client.terminals.create(workspace_id=workspace.id)
    assert looked_up.current().cwd == workspace.directory  # type: ignore[union-attr]
    with pytest.raises(dc.DaemonClientError, match="no workspace 'missing'"):
        client.terminals.create(workspace_id="missing")


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("host", LEGACY)
def test_workspace_calls_raise_unsupported_by_host_and_send_nothing(
    connected: Connected, host: str, transport: str
) -> None:
    fake, client = connected(host, transport)
    fake.workspaces.open("/home/dev/projects/api")
    handle = client.workspaces.ref(client.workspaces.list().entries[0])
    assert not client.terminals.workspace_terminals
    calls: list[Callable[[], object]] = [
        lambda: client.terminals.create(workspace_id="w1", cwd=CWD),
        lambda: client.terminals.list(workspace_id="w1"),
        lambda: client.terminals.subscribe(print, workspace_id="w1"),
        handle.terminals.create,
        handle.terminals.list,
        lambda: handle.terminals.subscribe(print),
    ]
    for call in calls:
        with pytest.raises(dc.UnsupportedByHost, match=r"features\.workspaceTerminals \(Paseo v0\.7\.3") as caught:
            call()
        version = client.server_info.version  # type: ignore[union-attr]
        assert version in str(caught.value)
    _settle(client)
    assert [f for f in fake.received if "terminal" in (f.message_type or "")] == []


def test_bad_arguments_send_nothing(connected: Connected) -> None:
    fake, client = connected("capable")
    bad: list[Callable[[], object]] = [
        client.terminals.create,
        lambda: client.terminals.create(cwd=CWD, size=(0, 80)),
        lambda: client.terminals.create(cwd=CWD, size={"rows": 24}),
        lambda: client.terminals.create(cwd=CWD, args="not-a-list"),
        lambda: client.terminals.create(cwd=CWD, name=3),  # type: ignore[arg-type]
        lambda: client.terminals.subscribe(print),
        lambda: client.terminals.ref(""),
        lambda: client.terminals.ref("t1").resize(24, True),  # type: ignore[arg-type]
        lambda: client.terminals.ref("t1").capture(start=1.5),  # type: ignore[arg-type]
    ]
    for call in bad:
        with pytest.raises(ValueError):
            call()
    with pytest.raises(TypeError):
        client.terminals.ref("t1").write(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        client.terminals.ref("t1").send_keys("ls", 13)  # type: ignore[arg-type]
    _settle(client)
    assert [f for f in fake.received if "terminal" in (f.message_type or "")] == []


@pytest.mark.parametrize("host", list(HOSTS))
def test_the_daemons_refusals_are_rpc_errors(connected: Connected, host: str) -> None:
    _, client = connected(host)
    with pytest.raises(dc.RpcError, match="must be an absolute path") as caught:
        client.terminals.create(cwd="relative/dir")
    assert (caught.value.request_type, caught.value.code) == ("create_terminal_request", "request_failed")
    with pytest.raises(dc.RpcError, match="Terminal not found"):
        client.terminals.ref("no-such-terminal").stream()
    captured = client.terminals.ref("no-such-terminal").capture()  # no error: nothing to capture
    assert (captured.terminal_id, captured.lines, captured.total_lines) == ("no-such-terminal", (), 0)


def test_kill_reports_a_host_without_terminal_support(connected: Connected) -> None:
    fake, client = connected("broadcast")
    fake.on_request("kill_terminal_request", lambda ctx: ctx.reply({"terminalId": "t1", "success": False}))
    with pytest.raises(dc.RpcError, match="Failed to kill terminal t1") as caught:
        client.terminals.ref("t1").kill()
    assert caught.value.request_type == "kill_terminal_request"


def test_calls_while_not_connected(fakes, make_client) -> None:
    client = make_client(fakes("capable"))
    with pytest.raises(dc.NotConnected):
        client.terminals.create(workspace_id="w1")
    with pytest.raises(dc.NotConnected):
        client.terminals.ref("t1").write("x")
    assert not client.terminals.workspace_terminals


def test_a_three_part_size_or_an_empty_cwd_is_refused_before_sending(connected: Connected) -> None:
    fake, client = connected("capable")
    before = len(fake.received)
    with pytest.raises(ValueError, match=r"size is \(rows, cols\)"):
        client.terminals.create(cwd=CWD, size=(24, 80, 1))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cwd must be a non-empty string"):
        client.terminals.subscribe(lambda changed: None, cwd="")
    assert len(fake.received) == before


def test_a_create_answered_without_a_readable_terminal_is_a_protocol_error(connected: Connected) -> None:
    fake, client = connected("capable")
    fake.on_request("create_terminal_request", lambda ctx: ctx.reply({"terminal": ["not", "an", "object"]}))
    with pytest.raises(dc.ProtocolError, match="create_terminal_response carries an unreadable terminal"):
        client.terminals.create(cwd=CWD)


def test_a_list_names_terminals_this_client_never_saw(connected: Connected) -> None:
    fake, client = connected("broadcast")
    made_here = client.terminals.create(cwd=CWD, name="here")
    fake.terminals.create(CWD, name="elsewhere")
    listed = client.terminals.list(cwd=CWD)
    assert sorted(t.name for t in listed.terminals) == ["elsewhere", "here"]
    assert made_here.current() is not None


# ------------------------------------------------------------------------------ the terminal directory


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("host", list(HOSTS))
def test_directory_subscription_follows_changes(connected: Connected, host: str, transport: str) -> None:
    fake, client = connected(host, transport)
    seen = RecordingHandler[dc.TerminalsChanged]("changes")
    subscription = client.terminals.subscribe(seen, cwd=CWD)
    first = subscription.ready.result(5)
    assert first.terminals == ()
    assert _sent(fake, "subscribe_terminals_request") == [{"type": "subscribe_terminals_request", "cwd": CWD}]
    terminal = client.terminals.create(cwd=CWD, name="watched")
    client.terminals.create(cwd="/elsewhere")  # another directory: not heard
    seen.wait_for(predicate=lambda c: len(c.terminals) == 1)
    terminal.write("title building\r")
    seen.wait_for(predicate=lambda c: bool(c.terminals) and c.terminals[0].title == "building")
    terminal.kill()
    latest = seen.wait_for(2, predicate=lambda c: c.terminals == ())[-1]
    assert latest.cwd == CWD
    assert subscription.current() == latest
    assert all(c.cwd == CWD for c in seen.items)
    if host == "broadcast":  # 0.1.65 repeats the list after a create
        assert sum(1 for c in seen.items if [t.name for t in c.terminals] == ["watched"]) >= 2
    subscription.release()
    subscription.release()
    _settle(client)
    assert _sent(fake, "unsubscribe_terminals_request") == [{"type": "unsubscribe_terminals_request", "cwd": CWD}]
    count = len(seen)
    client.terminals.create(cwd=CWD)
    _settle(client)
    assert len(seen) == count


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("host", list(HOSTS))
def test_directory_subscription_is_restored_after_a_reconnect(connected: Connected, host: str, transport: str) -> None:
    fake, client = connected(host, transport)
    seen = RecordingHandler[dc.TerminalsChanged]("changes")
    subscription = client.terminals.subscribe(seen, cwd=CWD)
    subscription.ready.result(5)
    states = RecordingHandler[Any]("states")
    client.on_state_change(states)
    mark = len(fake.received)
    fake.restart()  # a new server-side session: only a new subscription brings lists
    states.wait_for(predicate=lambda change: change[2] == "reconnected")
    fake.wait_for_frame("subscribe_terminals_request", since=mark)
    seen.wait_for(2)  # the list again, for the new socket
    fake.terminals.create(CWD, name="made after the restart")
    seen.wait_for(predicate=lambda c: [t.name for t in c.terminals] == ["made after the restart"])
    assert len(_sent(fake, "subscribe_terminals_request")) == 2
    subscription.release()


def test_two_subscriptions_of_one_directory_share_the_server_side(connected: Connected) -> None:
    fake, client = connected("broadcast")
    first, second = RecordingHandler[Any]("first"), RecordingHandler[Any]("second")
    one = client.terminals.subscribe(first, cwd=CWD)
    two = client.terminals.subscribe(second, cwd=CWD)
    one.ready.result(5)
    two.ready.result(5)
    assert (one.cwd, one.workspace_id, one.released) == (CWD, None, False)
    assert repr(one) == f"<TerminalDirectorySubscription {CWD} live>"
    one()  # calling it releases it
    assert one.released
    _settle(client)
    assert _sent(fake, "unsubscribe_terminals_request") == []  # the other still listens
    client.terminals.create(cwd=CWD)
    second.wait_for(predicate=lambda c: len(c.terminals) == 1)
    assert all(c.terminals == () for c in first.items)
    with two:
        pass  # leaving the block releases it
    assert two.released
    _settle(client)
    assert len(_sent(fake, "unsubscribe_terminals_request")) == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_workspace_subscriptions_are_tagged_and_separate(connected: Connected, transport: str) -> None:
    fake, client = connected("capable", transport)
    directory = "/home/dev/projects/shared"
    a, b = RecordingHandler[dc.TerminalsChanged]("a"), RecordingHandler[dc.TerminalsChanged]("b")
    sub_a = client.terminals.subscribe(a, workspace_id="wa", cwd=directory)
    sub_b = client.terminals.subscribe(b, workspace_id="wb", cwd=directory)
    sub_a.ready.result(5)
    sub_b.ready.result(5)
    assert _sent(fake, "subscribe_terminals_request")[0] == {
        "type": "subscribe_terminals_request", "cwd": directory, "workspaceId": "wa",
    }  # fmt: skip
    in_a = client.terminals.create(workspace_id="wa", cwd=directory)
    a.wait_for(predicate=lambda c: [t.id for t in c.terminals] == [in_a.id])
    client.terminals.create(workspace_id="wb", cwd=directory)
    b.wait_for(predicate=lambda c: len(c.terminals) == 1)
    _settle(client)
    assert all(c.workspace_id == "wa" and all(t.workspace_id == "wa" for t in c.terminals) for c in a.items)
    assert all(c.workspace_id == "wb" for c in b.items)
    sub_a.release()
    sub_b.release()


def test_untagged_lists_are_filtered_for_workspace_subscriptions(connected: Connected) -> None:
    fake, client = connected("capable")
    seen = RecordingHandler[dc.TerminalsChanged]("seen")
    subscription = client.terminals.subscribe(seen, workspace_id="wa", cwd=CWD)
    subscription.ready.result(5)
    entries = [{"id": "t1", "name": "a", "workspaceId": "wa"}, {"id": "t2", "name": "b", "workspaceId": "wb"},
               {"id": "t3", "name": "c"}]  # fmt: skip
    fake.push("terminals_changed", {"cwd": CWD, "terminals": entries, "subscriptionId": "sub-from-a-newer-host"})
    latest = seen.wait_for(2)[-1]
    assert [t.id for t in latest.terminals] == ["t1", "t3"]
    assert latest.subscription_id == "sub-from-a-newer-host"
    subscription.release()


def test_directory_subscription_made_while_disconnected_is_asked_at_the_handshake(fakes, make_client) -> None:
    fake = fakes("broadcast")
    client = make_client(fake)
    seen = RecordingHandler[dc.TerminalsChanged]("seen")
    subscription = client.terminals.subscribe(seen, cwd=CWD)
    assert not subscription.ready.done()
    client.connect()
    assert subscription.ready.result(5).terminals == ()
    client.close()
    with pytest.raises(dc.ClientClosed):
        client.terminals.subscribe(seen, cwd=CWD).ready.result(5)


def test_an_unreadable_list_is_skipped(connected: Connected, caplog) -> None:
    fake, client = connected("broadcast")
    seen = RecordingHandler[dc.TerminalsChanged]("seen")
    client.terminals.subscribe(seen, cwd=CWD).ready.result(5)
    fake.push("terminals_changed", {"cwd": CWD, "terminals": [{"name": "no id"}, {"id": "t9", "name": "ok"}]})
    assert [t.id for t in seen.wait_for(2)[-1].terminals] == ["t9"]
    assert "skipped TerminalInfo" in caplog.text


def test_a_workspace_subscription_follows_the_workspaces_directory_and_refuses_an_unknown_one(
    connected: Connected,
) -> None:
    _fake, client = connected("capable")
    workspace = client.workspaces.open(CWD)
    subscription = client.terminals.subscribe(lambda changed: None, workspace_id=workspace.id)
    assert subscription.cwd == CWD
    assert subscription.ready.result(5).terminals == ()
    subscription.release()
    with pytest.raises(dc.DaemonClientError, match="no workspace 'ws-missing' with a directory"):
        client.terminals.subscribe(lambda changed: None, workspace_id="ws-missing")
