"""Agent handles driving runs: create, send, wait_for_finish, run, cancel, archive, permissions
(the answer's fields and its confirmation); create arguments refused before sending, agent lists
and their subscribe options, handles made before their first snapshot and replies without an agent."""

from __future__ import annotations

from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler
from daemon_client.testing.fake.engine.handlers import RequestContext

from ...conftest import KINDS
from ...helpers import session_frames as _frames

CWD = "/home/dev/projects/demo"
MOCK = "mock/ten-second-stream"


def _answered_with(fake: FakeDaemon, *pushes: tuple[str, dict[str, Any]]) -> None:
    """Answer every permission response with ``pushes`` (and nothing else)."""

    def answer(ctx: RequestContext) -> None:
        for message_type, payload in pushes:
            ctx.send(message_type, payload)

    fake.on_request("agent_permission_response", answer)


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


# ------------------------------------------------------------------------------ creation


@pytest.mark.parametrize(
    ("config", "options", "message"),
    [
        (dc.AgentConfig(provider="mock/a", model="b"), {}, "names model 'a', but model='b'"),
        (dc.AgentConfig(provider=MOCK), {"title": "   "}, "title must be 1 to 200 characters"),
        (dc.AgentConfig(provider=MOCK), {"title": "x" * 201}, "title must be 1 to 200 characters"),
        (dc.AgentConfig(provider=MOCK), {"idempotency_key": ""}, "idempotency_key must be 1 to 512"),
    ],
)
def test_create_refuses_a_conflicting_model_a_bad_title_or_an_empty_key_before_sending(
    connected, config, options, message: str
) -> None:
    fake, client = connected()
    before = len(fake.received)
    with pytest.raises(ValueError, match=message):
        client.agents.create(config, cwd=CWD, **options)
    assert len(fake.received) == before


def test_create_sends_images_background_and_the_trimmed_title(connected) -> None:
    fake, client = connected("capable", features={"backgroundWorkspaces": True})
    image = {"data": "aGVsbG8=", "mimeType": "image/png"}
    agent = client.agents.create(
        dc.AgentConfig(provider=MOCK), cwd=CWD, title="  Trimmed  ", images=[image], background=False
    )
    (sent,) = _frames(fake, "agent.create.request")
    assert sent["images"] == [image]
    assert sent["background"] is False
    assert sent["config"]["title"] == "Trimmed"
    assert agent.title == "Trimmed"


def test_a_host_with_receipts_but_no_creation_lifecycle_gets_the_idempotency_key(connected) -> None:
    fake, client = connected("capable", features={"creationLifecycle": False})
    agent = client.agents.create(dc.AgentConfig(provider=MOCK), cwd=CWD, idempotency_key="k-1")
    (sent,) = _frames(fake, "create_agent_request")
    assert sent["idempotencyKey"] == "k-1"
    assert agent.current() is not None


# ------------------------------------------------------------------------------ lists and handles


def test_a_list_scoped_to_open_workspaces_sends_its_scope_and_background_flag(connected) -> None:
    fake, client = connected()
    agent_id = fake.agents.upsert(title="listed", cwd=CWD)["id"]
    fake.agents.upsert(title="no workspace", cwd="/home/dev/elsewhere")
    fake.workspaces.upsert(workspace_directory=CWD)  # "active": agents of an open workspace only
    result = client.agents.list(scope="active", include_background=True)
    assert [a.agent.id for a in result.entries] == [agent_id]
    sent = _frames(fake, "fetch_agents_request")[-1]
    assert (sent["scope"], sent["includeBackground"]) == ("active", True)


def test_subscribe_options_given_as_a_mapping_are_checked_before_sending(connected) -> None:
    fake, client = connected()
    before = len(fake.received)
    with pytest.raises(ValueError, match="unknown subscribe options: coalesce"):
        client.agents.list(subscribe={"coalesce": True})
    with pytest.raises(TypeError, match="subscribe must be a bool or SubscribeOptions, not int"):
        client.agents.list(subscribe=1)  # type: ignore[arg-type]
    assert len(fake.received) == before
    result = client.agents.list(subscribe={})  # no options: observe with the defaults
    assert result.subscription is not None
    result.subscription.release()


@pytest.mark.parametrize("kind", KINDS)
def test_a_handle_made_before_its_snapshot_takes_the_snapshot_read_later(connected, kind: str) -> None:
    fake, client = connected(kind)
    agent_id = fake.agents.upsert(title="later")["id"]
    handle = client.agents.ref(agent_id)
    assert handle.current() is None
    snapshot = client.agents.fetch(agent_id)
    assert snapshot is not None
    assert client.agents.ref(snapshot) is handle
    assert handle.title == "later"
    observed = client.agents.list(subscribe=True)
    client.ping()
    assert client.flush_callbacks()
    assert handle.current() == observed.entries[0].agent
    observed.subscription.release()


def test_an_unreadable_placement_in_a_snapshot_keeps_the_known_project(connected) -> None:
    fake, client = connected()
    agent_id = fake.agents.upsert(title="placed")["id"]
    handle = client.agents.ref(agent_id)
    handle.refresh()
    known = handle.project
    assert known is not None
    fake.agents.upsert(agent_id, title="renamed", project={"projectKey": 5})  # no longer a placement
    observed = client.agents.list(subscribe=True)
    assert observed.entries[0].project is None
    client.ping()
    assert client.flush_callbacks()
    assert handle.title == "renamed"
    assert handle.project == known
    observed.subscription.release()


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


def test_a_handle_describes_itself_before_and_after_a_read(connected) -> None:
    _fake, client = connected("capable")
    agent = client.agents.ref("a-unknown")
    assert repr(agent) == "<AgentHandle a-unknown unknown>"
    assert agent.project is None
    created = client.agents.create(dc.AgentConfig(provider=MOCK), cwd=CWD)
    assert repr(created) == f"<AgentHandle {created.id} idle>"
    snapshot = created.refresh()
    assert snapshot is not None
    assert snapshot.id == created.id


def test_a_refresh_that_finds_nothing_keeps_what_was_known(connected) -> None:
    fake, client = connected()
    agent = client.agents.create(dc.AgentConfig(provider=MOCK), cwd=CWD, title="Known")
    fake.on_request("fetch_agent_request", lambda ctx: ctx.reply({"agent": None, "project": None, "error": None}))
    assert agent.refresh() is None
    assert agent.title == "Known"


# ------------------------------------------------------------------------------ prompts, cancel, archive


@pytest.mark.parametrize("kind", KINDS)
def test_send_passes_images_and_the_callers_message_id(connected, kind: str) -> None:
    fake, client = connected(kind)
    agent = client.agents.create(dc.AgentConfig(provider=MOCK), cwd=CWD)
    image = {"data": "aGVsbG8=", "mimeType": "image/png"}
    message_id = agent.send("look", images=[image], message_id="m-1")
    assert message_id == "m-1"
    (sent,) = _frames(fake, "send_agent_message_request")
    assert sent["images"] == [image]
    assert sent["messageId"] == "m-1"
    agent.cancel()


def test_a_cancel_answered_without_an_agent_returns_none_and_keeps_the_handle(connected) -> None:
    fake, client = connected()
    agent = client.agents.create(dc.AgentConfig(provider=MOCK), cwd=CWD, title="Kept")
    fake.on_request("cancel_agent_request", lambda ctx: ctx.reply({"agentId": agent.id}))
    assert agent.cancel() is None
    assert agent.title == "Kept"


def test_an_archive_answered_without_a_time_returns_none_and_changes_no_handle(connected) -> None:
    fake, client = connected()
    created = client.agents.create(dc.AgentConfig(provider=MOCK), cwd=CWD)
    other_client_handle = client.agents.ref("not-read")
    fake.on_request(
        "archive_agent_request",
        lambda ctx: ctx.reply({"agentId": ctx.message["agentId"], "archivedAt": None, "requestId": ctx.request_id}),
    )
    assert other_client_handle.archive() is None
    assert other_client_handle.current() is None
    assert created.archive() is None
    assert created.current() is not None
    assert created.current().archived_at is None


# ------------------------------------------------------------------------------ permission answers


def test_a_permission_denial_carries_its_message_interrupt_and_action_and_an_allow_its_input(connected) -> None:
    fake, client = connected()
    agent = client.agents.ref("a1")
    agent.respond_to_permission("r1", allow=False, message="not now", interrupt=True, selected_action_id="act-2")
    agent.respond_to_permission("r2", allow=True, message="ignored", interrupt=True, updated_input={"path": "/x"})
    client.ping()
    sent = _frames(fake, "agent_permission_response")
    assert [(m["agentId"], m["requestId"], m["response"]) for m in sent] == [
        ("a1", "r1", {"behavior": "deny", "selectedActionId": "act-2", "message": "not now", "interrupt": True}),
        ("a1", "r2", {"behavior": "allow", "updatedInput": {"path": "/x"}}),
    ]


def test_a_permission_wait_ignores_confirmations_of_other_agents_and_requests(connected) -> None:
    fake, client = connected()
    _answered_with(
        fake,
        ("agent_permission_resolved", {"agentId": "another", "requestId": "r1"}),
        ("agent_permission_resolved", {"agentId": "a1", "requestId": "r2"}),
        ("agent_stream", {"agentId": "a1", "event": "not an event"}),
        ("agent_stream", {"agentId": "a1", "event": {"type": "permission_requested", "requestId": "r1"}}),
    )
    with pytest.raises(dc.RequestTimeout, match=r"no confirmation of permission r1 within 0\.2 s") as caught:
        client.agents.ref("a1").respond_to_permission("r1", allow=True, wait=True, timeout=0.2)
    assert caught.value.request_type == "agent_permission_response"


@pytest.mark.parametrize(
    "push",
    [
        ("agent_stream", {"agentId": "a1", "event": {"type": "permission_resolved", "requestId": "r1"}}),
        ("agent_permission_resolved", {"agentId": "a1", "requestId": "r1"}),
    ],
)
def test_either_kind_of_permission_confirmation_ends_the_wait(connected, push: tuple[str, dict[str, Any]]) -> None:
    fake, client = connected()
    _answered_with(fake, push)
    client.agents.ref("a1").respond_to_permission("r1", allow=True, wait=True, timeout=5)
    assert len(_frames(fake, "agent_permission_response")) == 1
