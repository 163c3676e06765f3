"""Agent handle extras (commands, mode/model/thinking/feature, update, attention, delete, detach,
fork context) and the turn outcome of ``run``/``wait_for_finish``, on every host kind over memory
and loopback; transcript 15 read without loss and replayed through the handle."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.protocol import decode_frame, structure
from daemon_client.protocol.agent_settings import AttentionCleared
from daemon_client.protocol.agents import AgentSnapshot, ProjectPlacement
from daemon_client.protocol.directory import parse_agent_list, parse_agent_update
from daemon_client.testing import FakeDaemon, RecordingHandler
from daemon_client.testing.fake.engine.handlers import RequestContext

from ...conftest import KINDS, TRANSPORTS
from ..lossless import assert_lossless, recorded_replies, replay, session_frames, transcript

Connected = Callable[..., tuple[FakeDaemon, dc.Client]]
CWD = "/home/dev/projects/demo"
RECORDED_ID = "a7c34638-5085-4284-bc5d-9cbfba0b3a29"


def _sent(fake: FakeDaemon, message_type: str) -> list[dict[str, Any]]:
    return [f["message"] for f in fake.received if f.message_type == message_type]


def _agent(fake: FakeDaemon, client: dc.Client, **fields: Any) -> dc.AgentHandle:
    fields.setdefault("provider", "claude")
    return client.agents.ref(fake.agents.upsert(**fields)["id"])


# ------------------------------------------------------------------------------ commands


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_commands(connected: Connected, kind: str, transport: str) -> None:
    fake, client = connected(kind, transport)
    commands = _agent(fake, client).commands()
    assert [c.name for c in commands] == ["review", "compact"]
    assert commands[0].argument_hint == "[path]"
    assert commands[0].kind == ("command" if kind == "capable" else None)  # newest hosts only
    with pytest.raises(dc.RpcError, match="Agent does not support listing commands") as caught:
        _agent(fake, client, provider="mock").commands()
    assert caught.value.request_type == "list_commands_request"
    with pytest.raises(dc.RpcError, match="Agent not found"):
        client.agents.ref("no-such-agent").commands()


# ------------------------------------------------------------------------------ settings


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_mode_model_thinking_and_feature(connected: Connected, kind: str, transport: str) -> None:
    fake, client = connected(kind, transport)
    agent = _agent(fake, client, model="sonnet")
    updates = RecordingHandler[Any]("updates")
    client.agents.list(subscribe=True)
    agent.subscribe(updates)
    result = agent.set_mode("plan")
    assert (result.accepted, result.agent_id) == (True, agent.id)
    updates.wait_for(1)  # the daemon pushes the agent's upsert after the reply
    assert agent.current().current_mode_id == "plan"
    agent.set_model("opus")
    agent.set_thinking("high")
    agent.set_feature("web_search", True)
    snapshot = agent.refresh()
    assert snapshot is not None
    assert (snapshot.model, snapshot.thinking_option_id) == ("opus", "high")
    assert [(f.id, f.value) for f in snapshot.features or ()] == [("web_search", True)]
    agent.set_model(None)  # the provider's default
    agent.set_thinking(None)  # cleared
    snapshot = agent.refresh()
    assert snapshot is not None
    assert (snapshot.model, snapshot.thinking_option_id) == (None, None)
    sent = [{k: v for k, v in m.items() if k != "requestId"} for m in _sent(fake, "set_agent_thinking_request")]
    assert sent[-1] == {"type": "set_agent_thinking_request", "agentId": agent.id, "thinkingOptionId": None}


@pytest.mark.parametrize("kind", KINDS)
def test_a_refused_setting_raises(connected: Connected, kind: str) -> None:
    fake, client = connected(kind)
    with pytest.raises(dc.RpcError, match="does not support setting features"):
        _agent(fake, client, provider="mock").set_feature("web_search", True)
    with pytest.raises(dc.RpcError, match="must be a UUID"):  # exact IDs only, no prefixes or titles
        client.agents.ref("no-such-agent").set_mode("plan")
    unloaded = _agent(fake, client)
    fake.settings.unloaded.add(unloaded.id)
    with pytest.raises(dc.RpcError, match="Agent not found"):
        unloaded.set_model("opus")
    with pytest.raises(ValueError, match="mode_id"):
        unloaded.set_mode("  ")


@pytest.mark.parametrize(("kind", "noticed"), [("capable", True), ("selective", True), ("broadcast", False)])
def test_newer_hosts_add_a_notice(connected: Connected, kind: str, noticed: bool) -> None:
    fake, client = connected(kind)
    fake.settings.notice = {"type": "warning", "message": "Applies to the next turn"}
    result = _agent(fake, client).set_model("opus")
    if noticed:
        assert result.notice == dc.SettingNotice(message="Applies to the next turn", type="warning")
    else:
        assert result.notice is None


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_update_renames_and_merges_labels(connected: Connected, kind: str, transport: str) -> None:
    fake, client = connected(kind, transport)
    agent = _agent(fake, client, labels={"fixture": "settings"})
    agent.update(title="  Renamed  ", labels={"stage": "renamed"})
    agent.update(labels={"stage": "final"})
    snapshot = agent.refresh()
    assert snapshot is not None
    assert snapshot.title == "Renamed"
    assert dict(snapshot.labels) == {"fixture": "settings", "stage": "final"}  # merged, never replaced
    fake.settings.unloaded.add(agent.id)
    agent.update(title="Stored only")  # works for an agent that is stored but not loaded
    assert fake.agents.get(agent.id)["title"] == "Stored only"
    before = len(_sent(fake, "update_agent_request"))
    for bad in ({}, {"title": "  "}, {"labels": {}}, {"labels": {"a": 1}}):
        with pytest.raises(ValueError):
            agent.update(**bad)
    assert len(_sent(fake, "update_agent_request")) == before


@pytest.mark.parametrize("kind", KINDS)
def test_clear_attention(connected: Connected, kind: str) -> None:
    fake, client = connected(kind)
    agent = _agent(fake, client, requiresAttention=True, attentionReason="finished")
    snapshot = agent.clear_attention()
    assert snapshot is not None
    assert snapshot.requires_attention is False
    assert agent.current() == snapshot
    assert fake.agents.get(agent.id)["requiresAttention"] is False
    fake.settings.unloaded.add(agent.id)
    assert agent.clear_attention() is None  # not loaded: not among the agents of the reply


@pytest.mark.parametrize("kind", KINDS)
def test_delete(connected: Connected, kind: str) -> None:
    fake, client = connected(kind)
    agent = _agent(fake, client)
    agent.delete()
    assert agent.removed
    assert fake.agents.get(agent.id) is None
    with pytest.raises(dc.RpcError, match="Agent not found"):  # gone from storage too
        client.agents.fetch(agent.id)
    client.agents.ref("00000000-0000-4000-8000-000000000000").delete()  # best effort: no error


# ------------------------------------------------------------------------------ newest-only calls


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", ["capable", "selective"])
def test_detach_on_hosts_that_have_it(connected: Connected, kind: str, transport: str) -> None:
    fake, client = connected(kind, transport)
    agent = _agent(fake, client)
    assert agent.detach().accepted
    assert fake.settings.detached == [agent.id]


@pytest.mark.parametrize(("kind", "features"), [("broadcast", None), ("capable", {"agentDetach": False})])
def test_detach_needs_its_flag(connected: Connected, kind: str, features: dict[str, bool] | None) -> None:
    fake, client = connected(kind, features=features)
    with pytest.raises(dc.UnsupportedByHost, match=r"features\.agentDetach") as caught:
        _agent(fake, client).detach()
    assert (caught.value.feature, caught.value.version) == ("agentDetach", "0.1.98")
    assert _sent(fake, "agent.detach.request") == []


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_fork_context(connected: Connected, transport: str) -> None:
    fake, client = connected("capable", transport)
    agent = _agent(fake, client, title="Source")
    fake.timeline.append(agent.id, {"type": "user_message", "text": "first", "messageId": "m1"})
    fake.timeline.append(agent.id, {"type": "assistant_message", "text": "answer one"})
    seq = fake.timeline.append(agent.id, {"type": "user_message", "text": "second", "messageId": "m2"})
    fake.timeline.append(agent.id, {"type": "assistant_message", "text": "answer two"})
    whole = agent.fork_context()
    assert whole.item_count == 4
    assert whole.attachment is not None
    assert whole.attachment.mime_type == "text/plain"
    assert "answer two" in whole.attachment.text
    upto = agent.fork_context(boundary_message_id="m2")
    assert upto.item_count == 3
    assert upto.boundary_message_id == "m2"
    at = agent.fork_context(boundary_cursor=dc.TimelineCursor(fake.timeline.epoch(agent.id), seq - 1))
    assert at.item_count == 2
    assert at.boundary_cursor == dc.TimelineCursor(fake.timeline.epoch(agent.id), seq - 1)
    with pytest.raises(dc.RpcError, match="Agent not found"):
        client.agents.ref("00000000-0000-4000-8000-000000000000").fork_context()


def test_fork_context_gates(connected: Connected) -> None:
    fake, client = connected("capable", features={"agentForkContextCursor": False})
    agent = _agent(fake, client)
    assert agent.fork_context().attachment is None  # nothing to fork yet
    with pytest.raises(dc.UnsupportedByHost) as caught:
        agent.fork_context(boundary_cursor=dc.TimelineCursor("e", 1))
    assert caught.value.feature == "agentForkContextCursor"
    old_fake, old = connected("broadcast")
    with pytest.raises(dc.UnsupportedByHost) as caught:
        _agent(old_fake, old).fork_context()
    assert caught.value.feature == "agentForkContext"
    assert _sent(old_fake, "agent.fork_context.request") == []


# ------------------------------------------------------------------------------ turn outcome


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_run_says_how_the_turn_ended(connected: Connected, kind: str, transport: str) -> None:
    _fake, client = connected(kind, transport)
    agent = client.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"), cwd=CWD)
    done = agent.run("emit 3 agent stream updates", timeout=10)
    assert (done.status, done.outcome) == ("idle", "completed")
    failed = agent.run("please fail", timeout=10)
    assert (failed.status, failed.outcome) == ("error", "failed")
    assert agent.run("emit 1 agent stream updates", timeout=10, observe=False).outcome is None


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_turn_canceled_from_another_thread_does_not_look_finished(
    connected: Connected, kind: str, transport: str
) -> None:
    _fake, client = connected(kind, transport)
    agent = client.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"), cwd=CWD)
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    agent.timeline.subscribe(seen).ready.result(5)
    results: list[dc.RunResult] = []
    runner = threading.Thread(target=lambda: results.append(agent.run("please hold", timeout=10)))
    runner.start()
    try:
        seen.wait_for(predicate=lambda u: u.type == "turn_started")
        agent.cancel()
    finally:
        runner.join(15)
    (result,) = results
    assert result.status == "idle"  # what the daemon says, as for a finished turn ...
    assert result.outcome == "canceled"  # ... and what the timeline said


@pytest.mark.parametrize("kind", KINDS)
def test_wait_for_finish_outcomes(connected: Connected, kind: str) -> None:
    fake, client = connected(kind)
    agent = client.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"), cwd=CWD)
    assert agent.wait_for_finish(timeout=5).outcome is None  # nothing ran: no turn end to see
    agent.send("please hold")
    timed_out = agent.wait_for_finish(timeout=0.2)
    assert (timed_out.status, timed_out.outcome) == ("timeout", None)
    waits: list[dc.RunResult] = []
    since = len(fake.received)
    waiter = threading.Thread(target=lambda: waits.append(agent.wait_for_finish(timeout=10)))
    waiter.start()
    try:
        fake.wait_for_frame(lambda f: f.message_type == "wait_for_finish_request", since=since)
        assert fake.runs.finish(agent.id)  # the turn started before the wait completes
    finally:
        waiter.join(15)
    assert (waits[0].status, waits[0].outcome) == ("idle", "completed")


@pytest.mark.parametrize("kind", ["capable", "broadcast"])
def test_the_end_of_another_agents_turn_is_not_this_waits_outcome(connected: Connected, kind: str) -> None:
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


def test_run_without_a_connection_observes_nothing(fakes, make_client) -> None:
    client = make_client(fakes("capable"))
    with pytest.raises(dc.NotConnected):
        client.agents.ref("00000000-0000-4000-8000-000000000000").run("hello", timeout=1)


# ------------------------------------------------------------------------------ transcript 15

MODELS = {
    "list_commands_response": None,
    "set_agent_mode_response": dc.SettingResult,
    "set_agent_model_response": dc.SettingResult,
    "set_agent_thinking_response": dc.SettingResult,
    "set_agent_feature_response": dc.SettingResult,
    "update_agent_response": dc.SettingResult,
    "clear_agent_attention_response": AttentionCleared,
}


def test_transcript_15_decodes_without_loss() -> None:
    seen: set[str] = set()
    for number, line in enumerate(transcript("15-agent-settings.jsonl"), start=1):
        frame = line.get("frame")
        if line["dir"] != "in" or frame is None:
            continue
        decoded = decode_frame(json.dumps(frame))
        assert isinstance(decoded, dc.SessionMessage), number
        kind, payload, where = decoded.type, decoded.payload, f"L{number}"
        seen.add(kind)
        if kind == "list_commands_response":
            for index, command in enumerate(payload["commands"]):
                assert_lossless(structure(command, dc.AgentCommand), command, f"{where}[{index}]")
        elif kind in MODELS:
            model = MODELS[kind]
            assert model is not None
            body = {k: v for k, v in payload.items() if k not in ("requestId", "error", "agentId")}
            assert_lossless(structure(payload, model), body, where)
        elif kind == "agent_update":
            update = parse_agent_update(payload).payload
            if update.agent is not None:
                assert_lossless(update.agent, payload["agent"], where)
        elif kind == "fetch_agents_response":
            assert parse_agent_list(payload).entries == ()
        elif kind == "fetch_agent_response" and payload["agent"] is not None:
            assert_lossless(structure(payload["agent"], AgentSnapshot), payload["agent"], where)
            assert_lossless(structure(payload["project"], ProjectPlacement), payload["project"], where)
        elif kind == "status" and "agent" in payload:
            assert_lossless(structure(payload["agent"], AgentSnapshot), payload["agent"], where)
        else:
            assert kind in {"status", "activity_log", "agent_archived", "agent_deleted", "fetch_agent_response"}, where
    assert set(MODELS) <= seen


def test_transcript_15_requests_are_what_the_handle_sends(connected: Connected) -> None:
    fake, client = connected("broadcast")
    replay(
        fake,
        "15-agent-settings.jsonl",
        "list_commands_request",
        "set_agent_mode_request",
        "set_agent_model_request",
        "set_agent_thinking_request",
        "set_agent_feature_request",
        "update_agent_request",
        "clear_agent_attention",
        "delete_agent_request",
    )
    agent = client.agents.ref(RECORDED_ID)
    with pytest.raises(dc.RpcError, match="Agent does not support listing commands"):
        agent.commands()
    fake.on_request("list_commands_request", lambda ctx: ctx.reply({"agentId": "x", "commands": [], "error": None}))
    assert agent.set_mode("load-test").accepted
    assert agent.set_model("one-minute-stream").accepted
    assert agent.set_thinking("high").accepted
    assert agent.set_thinking(None).accepted
    with pytest.raises(dc.RpcError, match="Agent session does not support setting features"):
        agent.set_feature("web_search", True)
    with pytest.raises(dc.RpcError, match="requireAgent: agentId must be a UUID"):
        client.agents.ref("no-such-agent").set_mode("load-test")
    assert agent.update(title="Renamed settings agent", labels={"fixture": "agent-settings", "stage": "renamed"})
    cleared = agent.clear_attention()
    assert cleared is not None
    assert cleared.title == "Renamed settings agent"
    agent.delete()
    recorded = dict(session_frames("15-agent-settings.jsonl", "out"))
    wanted = [recorded[n] for n in (12, 16, 19, 22, 25, 28, 31, 34, 40, 55)]
    sent = [
        f["message"]
        for f in fake.received
        if f.message_type in {m["type"] for m in wanted} and f["message"].get("agentId") != "draft-only"
    ]
    strip = [{k: v for k, v in m.items() if k != "requestId"} for m in sent]
    assert strip == [{k: v for k, v in m.items() if k != "requestId"} for m in wanted]


def test_transcript_15_replies_cover_every_request() -> None:
    replies = recorded_replies("15-agent-settings.jsonl")
    assert [kind for kind, _ in replies["set_agent_mode_request"]] == ["set_agent_mode_response"] * 2
    assert replies["delete_agent_request"][0][0] == "agent_deleted"


def test_a_run_whose_observation_fails_still_runs(connected: Connected) -> None:
    fake, client = connected("capable")
    agent = client.agents.create(dc.AgentConfig(provider="mock/ten-second-stream"), cwd=CWD)
    fake.fail_next("agent.timeline.set_subscription.request", "no timelines today")
    result = agent.run("emit 2 agent stream updates", timeout=10)
    assert (result.status, result.outcome) == ("idle", None)  # the turn ran; its end was not observed
