"""The public API's smaller paths: client options refused at construction, a client that cannot
connect inside ``with`` or ``dc.connect()``, the package's lazy names, workspace creation and
titles refused or answered badly, handle listeners that stop, and a run's outcome that ignores
other agents."""

from __future__ import annotations

from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler
from daemon_client.testing.fake.engine.handlers import RequestContext

CWD = "/home/dev/projects/demo"


# ------------------------------------------------------------------------------ the client


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"connect_timeout": 0}, "timeouts must be > 0"),
        ({"request_timeout": -1.0}, "timeouts must be > 0"),
        ({"max_frame_bytes": 1024}, "max_frame_bytes must be an integer of at least 4096, got 1024"),
        ({"max_frame_bytes": True}, "max_frame_bytes must be an integer of at least 4096, got True"),
    ],
)
def test_client_options_are_checked_at_construction(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dc.Client("ws://fake-daemon/ws", **options)


def test_an_app_version_that_is_no_version_is_warned_about(fakes, caplog) -> None:
    fake = fakes("capable")
    client = dc.Client("ws://fake-daemon/ws", transport_factory=fake.transport_factory, app_version="nightly")
    try:
        assert "app_version 'nightly' is below 0.1.45 or not a version" in caplog.text
    finally:
        client.close()


def test_a_client_that_cannot_connect_in_a_with_block_is_closed(fakes) -> None:
    fake = fakes("capable")
    fake.refuse_connections = True
    client = dc.Client("ws://fake-daemon/ws", transport_factory=fake.transport_factory)
    with pytest.raises(dc.ConnectionLost, match="Cannot connect"), client:
        pytest.fail("the block must not run")
    assert client.state is dc.ConnectionState.DISPOSED


def test_connect_closes_the_client_it_could_not_connect(fakes) -> None:
    fake = fakes("capable")
    fake.refuse_connections = True
    with pytest.raises(dc.ConnectionLost, match="Cannot connect"):
        dc.connect("ws://fake-daemon/ws", transport_factory=fake.transport_factory)
    fake.refuse_connections = False
    with dc.connect("ws://fake-daemon/ws", transport_factory=fake.transport_factory) as client:
        assert client.state is dc.ConnectionState.CONNECTED
    assert client.state is dc.ConnectionState.DISPOSED


def test_the_package_names_its_testing_helpers_lazily() -> None:
    assert dc.__getattr__("testing").FakeDaemon is FakeDaemon
    names = dir(dc)
    assert "testing" in names
    assert "TerminalStream" in names
    with pytest.raises(AttributeError):
        dc.__getattr__("NoSuchName")


# ------------------------------------------------------------------------------ workspaces


def test_a_workspace_creation_answered_without_a_readable_workspace(connected) -> None:
    fake, client = connected("capable")
    fake.on_request("workspace.create.request", lambda ctx: ctx.reply({"workspace": 7, "error": None}))
    with pytest.raises(dc.ProtocolError, match=r"workspace\.create\.request answered with an unreadable workspace: 7"):
        client.workspaces.create(CWD)


def test_a_title_must_be_text(connected) -> None:
    fake, client = connected("capable")
    before = len(fake.received)
    with pytest.raises(ValueError, match="title must be a string or None, not int"):
        client.workspaces.set_title("ws-1", 5)  # type: ignore[arg-type]
    assert len(fake.received) == before


def test_a_title_needs_a_connection_to_know_the_host(fakes, make_client) -> None:
    client = make_client(fakes("capable"))
    with pytest.raises(dc.NotConnected, match="cannot tell whether the daemon supports set workspace titles"):
        client.workspaces.set_title("ws-1", "title")


# ------------------------------------------------------------------------------ handles and runs


def test_a_handle_listener_that_stopped_hears_nothing(connected) -> None:
    fake, client = connected("capable")
    agent_id = fake.agents.upsert(title="watched")["id"]
    handle = client.agents.ref(agent_id)
    stopped, kept = RecordingHandler[Any]("stopped"), RecordingHandler[Any]("kept")
    stop = handle.subscribe(stopped)
    handle.subscribe(kept)
    observed = client.agents.list(subscribe=True)
    stop()
    fake.agents.upsert(agent_id, title="renamed")
    kept.wait_for(1)
    client.ping()
    assert client.flush_callbacks()
    assert stopped.items == []
    assert handle.title == "renamed"
    observed.subscription.release()


@pytest.mark.parametrize("kind", ["capable", "broadcast"])
def test_the_end_of_another_agents_turn_is_no_outcome(connected, kind: str) -> None:
    fake, client = connected(kind)
    agent = client.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"), cwd=CWD)
    wait = fake.registry.handler_for("wait_for_finish_request")
    assert wait is not None

    def another_agent_finishes_first(ctx: RequestContext) -> None:
        event = {"type": "turn_completed", "provider": "mock"}
        ctx.send("agent_stream", {"agentId": "another-agent", "event": event, "timestamp": "2026-01-01T00:00:00Z"})
        wait(ctx)

    fake.on_request("wait_for_finish_request", another_agent_finishes_first)
    result = agent.wait_for_finish(timeout=5)
    assert result.status == "idle"
    assert result.outcome is None


@pytest.mark.parametrize(
    ("options", "text"),
    [
        ({}, "boom"),
        ({"code": "handler_error"}, "boom (code=handler_error)"),
        ({"request_type": "fetch_agent_request"}, "boom (request=fetch_agent_request)"),
        ({"code": "c", "request_type": "r"}, "boom (code=c, request=r)"),
    ],
)
def test_an_rpc_error_names_only_what_it_knows(options: dict[str, Any], text: str) -> None:
    assert str(dc.RpcError("boom", **options)) == text
