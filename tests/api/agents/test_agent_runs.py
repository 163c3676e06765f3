"""Agent handles driving runs: create, send, wait_for_finish, run, cancel, archive, permissions."""

from __future__ import annotations

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler

from ...conftest import KINDS
from ...helpers import session_frames as _frames


@pytest.fixture
def connected(fakes, make_client):
    def make(kind: str) -> tuple[FakeDaemon, dc.Client]:
        fake = fakes(kind)
        client = make_client(fake)
        client.connect()
        return fake, client

    return make


@pytest.mark.parametrize("kind", KINDS)
def test_create_and_run_returns_the_joined_final_message(connected, kind: str) -> None:
    fake, client = connected(kind)
    agent = client.agents.create(
        dc.AgentConfig(provider="mock/ten-second-stream"), cwd="/home/dev/projects/demo", title="Runner"
    )
    assert agent.current() is not None
    assert agent.title == "Runner"
    request_type = "agent.create.request" if kind == "capable" else "create_agent_request"
    sent = _frames(fake, request_type)[-1]
    assert sent["config"]["provider"] == "mock"
    assert sent["config"]["model"] == "ten-second-stream"
    if kind == "capable":
        assert sent["idempotencyKey"]
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    agent.timeline.subscribe(seen).ready.result(5)
    result = agent.run("What is the answer?", timeout=30)
    assert result.status == "idle"
    assert result.error is None
    seen.wait_for(predicate=lambda u: u.type == "turn_completed")
    assert result.last_message == dc.join_messages(seen.items)[-1]
    assert result.final is not None
    assert agent.current() == result.final


@pytest.mark.parametrize("kind", KINDS)
def test_create_failure_is_an_agent_create_error(connected, kind: str) -> None:
    _, client = connected(kind)
    with pytest.raises(dc.AgentCreateError) as info:
        client.agents.create(dc.AgentConfig(provider="nope/model"), cwd="/home/dev")
    assert isinstance(info.value, dc.RpcError)
    with pytest.raises(ValueError, match="working directory"):
        client.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"))


def test_background_needs_a_host_that_has_it(connected) -> None:
    fake, client = connected("broadcast")
    before = len(fake.received)
    with pytest.raises(dc.UnsupportedByHost, match="Update the host"):
        client.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"), cwd="/home/dev", background=True)
    assert len(fake.received) == before


@pytest.mark.parametrize("kind", KINDS)
def test_send_rejected_for_unknown_agent(connected, kind: str) -> None:
    _, client = connected(kind)
    with pytest.raises(dc.RpcError, match="Agent not found"):
        client.agents.ref("no-such-agent").send("hello")
    result = client.agents.ref("no-such-agent").wait_for_finish(timeout=5)
    assert result.status == "error"
    assert "Agent not found" in (result.error or "")


@pytest.mark.parametrize("kind", KINDS)
def test_wait_for_finish_timeout_is_a_status_and_cancel_stops_the_turn(connected, kind: str) -> None:
    _, client = connected(kind)
    agent = client.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"), cwd="/home/dev/projects/demo")
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    agent.timeline.subscribe(seen).ready.result(5)
    agent.send("please hold")
    result = agent.wait_for_finish(timeout=0.3)
    assert result.status == "timeout"
    assert result.last_message is None
    agent.cancel()
    assert seen.wait_for(predicate=lambda u: u.type == "turn_canceled")
    assert agent.wait_for_finish(timeout=5).status == "idle"


@pytest.mark.parametrize("kind", KINDS)
def test_failed_turn_reports_error_status(connected, kind: str) -> None:
    _, client = connected(kind)
    agent = client.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"), cwd="/home/dev/projects/demo")
    result = agent.run("please fail", timeout=10)
    assert result.status == "error"
    assert result.error


@pytest.mark.parametrize("kind", KINDS)
def test_archive(connected, kind: str) -> None:
    fake, client = connected(kind)
    agent = client.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"), cwd="/home/dev/projects/demo")
    archived_at = agent.archive()
    assert archived_at
    assert agent.current().archived_at == archived_at
    assert fake.agents.get(agent.id)["archivedAt"] == archived_at


@pytest.mark.parametrize("kind", KINDS)
def test_permission_request_and_answer(connected, kind: str) -> None:
    _, client = connected(kind)
    agent = client.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"), cwd="/home/dev/projects/demo")
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    agent.timeline.subscribe(seen).ready.result(5)
    agent.send("ask permission")
    requested = seen.wait_for(predicate=lambda u: u.type == "permission_requested")[0]
    assert isinstance(requested.event, dc.PermissionRequested)
    assert agent.wait_for_finish(timeout=5).status == "permission"
    agent.respond_to_permission(requested.event.request.id, allow=True, wait=True, timeout=5)
    resolved = seen.wait_for(predicate=lambda u: u.type == "permission_resolved")[0]
    assert resolved.event.request_id == requested.event.request.id
    assert agent.wait_for_finish(timeout=10).status == "idle"


def test_cancel_of_an_agent_the_old_daemon_does_not_know_times_out(connected) -> None:
    _, client = connected("broadcast")
    with pytest.raises(dc.RequestTimeout, match="cancel_agent_request"):
        client.agents.ref("not-loaded").cancel(timeout=0.2)


def test_an_idempotency_key_the_host_cannot_honour_is_refused(connected) -> None:
    fake, client = connected("broadcast")
    before = len(fake.received)
    with pytest.raises(dc.UnsupportedByHost, match="idempotently"):
        client.agents.create(
            dc.AgentConfig(provider="mock/ten-second-stream"), cwd="/home/dev", prompt="hi", idempotency_key="k-1"
        )
    assert len(fake.received) == before
