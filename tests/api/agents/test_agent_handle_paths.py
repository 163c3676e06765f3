"""Agent handles: the permission answer's fields and its confirmation, prompts with images,
replies without an agent, and the handle's own small API."""

from __future__ import annotations

from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon
from daemon_client.testing.fake.engine.handlers import RequestContext

from ...conftest import KINDS
from ...helpers import session_frames as _frames

CWD = "/home/dev/projects/demo"


@pytest.fixture
def connected(fakes, make_client):
    def make(kind: str = "capable") -> tuple[FakeDaemon, dc.Client]:
        fake = fakes(kind)
        client = make_client(fake)
        client.connect()
        return fake, client

    return make


def _answered_with(fake: FakeDaemon, *pushes: tuple[str, dict[str, Any]]) -> None:
    """Answer every permission response with ``pushes`` (and nothing else)."""

    def answer(ctx: RequestContext) -> None:
        for message_type, payload in pushes:
            ctx.send(message_type, payload)

    fake.on_request("agent_permission_response", answer)


def test_a_denial_carries_its_message_interrupt_and_action(connected) -> None:
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


def test_confirmations_of_other_agents_and_requests_do_not_count(connected) -> None:
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
def test_either_confirmation_ends_the_wait(connected, push: tuple[str, dict[str, Any]]) -> None:
    fake, client = connected()
    _answered_with(fake, push)
    client.agents.ref("a1").respond_to_permission("r1", allow=True, wait=True, timeout=5)
    assert len(_frames(fake, "agent_permission_response")) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_prompt_with_images(connected, kind: str) -> None:
    fake, client = connected(kind)
    agent = client.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"), cwd=CWD)
    image = {"data": "aGVsbG8=", "mimeType": "image/png"}
    message_id = agent.send("look", images=[image], message_id="m-1")
    assert message_id == "m-1"
    (sent,) = _frames(fake, "send_agent_message_request")
    assert sent["images"] == [image]
    assert sent["messageId"] == "m-1"
    agent.cancel()


def test_the_handle_before_and_after_a_read(connected) -> None:
    _fake, client = connected("capable")
    agent = client.agents.ref("a-unknown")
    assert repr(agent) == "<AgentHandle a-unknown unknown>"
    assert agent.project is None
    created = client.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"), cwd=CWD)
    assert repr(created) == f"<AgentHandle {created.id} idle>"
    snapshot = created.refresh()
    assert snapshot is not None
    assert snapshot.id == created.id


def test_a_refresh_that_finds_nothing_keeps_what_was_known(connected) -> None:
    fake, client = connected()
    agent = client.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"), cwd=CWD, title="Known")
    fake.on_request("fetch_agent_request", lambda ctx: ctx.reply({"agent": None, "project": None, "error": None}))
    assert agent.refresh() is None
    assert agent.title == "Known"


def test_a_cancel_reply_without_an_agent(connected) -> None:
    fake, client = connected()
    agent = client.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"), cwd=CWD, title="Kept")
    fake.on_request("cancel_agent_request", lambda ctx: ctx.reply({"agentId": agent.id}))
    assert agent.cancel() is None
    assert agent.title == "Kept"


def test_an_archive_of_an_agent_never_read(connected) -> None:
    fake, client = connected()
    created = client.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"), cwd=CWD)
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
