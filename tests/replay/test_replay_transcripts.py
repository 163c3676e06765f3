"""The real 0.1.65 transcripts replayed against the client: each test drives the calls that
produced its transcript (tests/fixtures/paseo-0.1.65/README.md says what each file did) and
reaches the recorded results, offline. Every recorded frame is played unless a test says
which ones the client cannot produce."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import RecordingHandler, ReplayDaemon

from ..conftest import TRANSCRIPTS

DEMO = "/home/dev/projects/demo"
AGENT_04 = "709fadbd-512d-4e6b-828c-b022015f8cca"
AGENT_03 = "f360496a-edae-47b6-bfa4-4cfe45d641ab"
AGENT_08 = "e537d502-b5a9-4f67-87b9-fad40858a8e9"
MOCK = dc.AgentConfig(provider="mock", model="ten-second-stream", mode_id="load-test")


@contextlib.contextmanager
def replayed(name: str, transport: str = "memory", **options: Any) -> Iterator[tuple[dc.Client, ReplayDaemon]]:
    """A strict client connected to a replay of the transcript ``name``; after the block,
    every recorded frame must have been played (unless the test checked ``unplayed`` itself)."""
    replay = ReplayDaemon(TRANSCRIPTS / name, **options)
    if transport == "loopback":
        client = dc.Client(replay.serve(), strict=True, connect_timeout=5.0)
    else:
        client = dc.Client("ws://localhost/ws", transport_factory=replay.transport_factory, strict=True)
    try:
        client.connect(timeout=10)
        yield client, replay
        replay.check()
    finally:
        client.close()
        replay.close()


def streams_of(client: dc.Client) -> RecordingHandler:
    """Every ``agent_stream`` push the client receives (0.1.65 broadcasts them to every socket)."""
    handler = RecordingHandler("agent_stream")
    client.add_push_listener(handler, ["agent_stream"])
    return handler


def is_row(message: Any) -> bool:
    return bool(message.payload["event"]["type"] == "timeline")


def timeline_seqs(streams: RecordingHandler, count: int) -> list[int]:
    """The ``seq`` of the first ``count`` timeline rows received (waits for them)."""
    return [m.payload["seq"] for m in streams.wait_for(count, predicate=is_row)]


def unanswered(future: Future[dict[str, Any]]) -> None:
    """A frame the daemon never answers: its future is left to fail when the client closes."""
    assert not future.done()


@pytest.mark.parametrize("transport", ["memory", "loopback"])
def test_01_handshake(transport: str) -> None:
    """``connect()``, ``ping()`` and a session ping without ``clientSentAt`` (the top-level
    heartbeat ping is answered live by the replay, as every heartbeat)."""
    with replayed("01-handshake.jsonl", transport) as (client, replay):
        info = client.server_info
        assert info is not None
        assert (info.server_id, info.hostname, info.version) == ("srv_demo0000000", "devbox", "0.1.65-beta.5")
        assert client.host_kind is dc.HostKind.BROADCAST
        pong = client.ping()
        assert (pong.client_sent_at, pong.server_received_at) == (1795986659141, 1795986659142)
        bare = client.request({"type": "ping"})
        assert "clientSentAt" not in bare
        assert bare["serverSentAt"] == 1795986659145
        replay.assert_all_played()


def test_02_fetch_agents_plain() -> None:
    """``agents.list()`` plain, paged by creation date with the returned cursor, filtered."""
    with replayed("02-fetch-agents-plain.jsonl") as (client, replay):
        everything = client.agents.list()
        assert next(e.agent.id for e in everything.entries) == AGENT_03  # most recently updated first
        assert everything.subscription_id is None
        first = client.agents.list(sort=[("created_at", "asc")], page=dc.Page(limit=1))
        assert [e.agent.id for e in first.entries] == [AGENT_04]
        assert first.page_info.has_more
        assert first.page_info.next_cursor
        after_first = dc.Page(limit=1, cursor=first.page_info.next_cursor)
        second = client.agents.list(sort=[("created_at", "asc")], page=after_first)
        assert [e.agent.id for e in second.entries] == [AGENT_03]
        assert (second.page_info.has_more, second.page_info.next_cursor) == (False, None)
        assert second.page_info.prev_cursor is not None
        labelled = client.agents.list(filter=dc.AgentFilter(labels={"fixture": "subscribe"}))
        assert [e.agent.title for e in labelled.entries] == ["Demo subscribe agent"]
        assert client.agents.list(filter=dc.AgentFilter(statuses=["running"])).entries == ()
        replay.assert_all_played()


def test_03_fetch_agents_subscribe() -> None:
    """A subscribing ``list()``, ``create()`` with a title, two turns with ``send()``, and a
    second subscribing ``list()`` that replaces the first filter (one slot per client)."""
    with replayed("03-fetch-agents-subscribe.jsonl") as (client, replay):
        streams = streams_of(client)
        raw_updates = RecordingHandler("agent_update")
        client.add_push_listener(raw_updates, ["agent_update"])
        directory = client.agents.list(subscribe=True)
        updates = RecordingHandler("updates")
        directory.subscription.subscribe(update=updates)
        agent = client.agents.create(MOCK, cwd=DEMO, title="Demo subscribe agent", labels={"fixture": "subscribe"})
        assert (agent.id, agent.title, agent.status) == (AGENT_03, "Demo subscribe agent", "idle")
        agent.send("emit 2 agent stream updates")
        errors_only = client.agents.list(filter=dc.AgentFilter(statuses=["error"]), subscribe=True)
        assert errors_only.entries == ()
        agent.send("emit 2 agent stream updates")
        replay.assert_all_played()
        assert timeline_seqs(streams, 6) == [1, 2, 3, 4, 5, 6]
        statuses = [m.payload.agent.status for m in updates.wait_for(4)[:4]]
        assert statuses == ["initializing", "initializing", "idle", "idle"]  # before the reply to create
        kinds = [m.payload.get("kind") for m in raw_updates.wait_for(8)]
        assert kinds == ["upsert"] * 6 + ["remove"] * 2  # the replaced filter: the agent leaves the view


def test_04_create_and_run() -> None:
    """``create()`` with an initial prompt, then ``wait_for_finish()``: the 174-row turn."""
    with replayed("04-create-and-run.jsonl") as (client, replay):
        streams = streams_of(client)
        client.agents.list(subscribe=True)
        agent = client.agents.create(
            MOCK, cwd=DEMO, prompt="Walk me through the scroll anchoring code.", labels={"fixture": "create-and-run"}
        )
        assert agent.id == AGENT_04
        result = agent.wait_for_finish(60)
        assert result.status == "idle"
        assert result.final is not None
        assert result.final.status == "idle"
        assert result.last_message is not None
        assert "## Cycle 4" in result.last_message
        assert result.last_message.endswith("_(end of synthetic stream)_\n")
        replay.assert_all_played()
        assert timeline_seqs(streams, 174) == list(range(1, 175))
        events = [m.payload["event"]["type"] for m in streams.wait_for(177)]
        assert events[-2:] == ["turn_completed", "attention_required"]


def test_05_send_message() -> None:
    """Two ``send()`` on the agent of file 04: a five-todo turn and a scripted turn."""
    with replayed("05-send-message.jsonl") as (client, replay):
        streams = streams_of(client)
        directory = client.agents.list(subscribe=True)
        assert AGENT_04 in [e.agent.id for e in directory.entries]
        agent = client.agents.ref(AGENT_04)
        agent.send("emit 5 agent stream updates")
        agent.send("Now add a regression test for the anchor jump.")
        replay.assert_all_played()
        finished = streams.wait_for(2, predicate=lambda m: m.payload["event"]["type"] == "turn_completed")
        assert finished[0].payload["event"]["usage"]["outputTokens"] == 5
        seqs = [m.payload["seq"] for m in streams.items if is_row(m)]
        assert seqs[:6] == list(range(175, 181))
        assert seqs == list(range(175, 175 + len(seqs)))


def test_06_timeline_fetch() -> None:
    """``timeline.refetch()`` in every direction and projection, with a stale epoch, and
    with a cursor alone."""
    with replayed("06-timeline-fetch.jsonl") as (client, replay):
        timeline = client.agents.ref(AGENT_04).timeline
        tail = timeline.refetch("tail", limit=5, projection="projected")
        assert [(e.seq_start, e.seq_end) for e in tail.entries] == [(348, 352)]
        assert tail.has_older
        assert tail.start_cursor is not None
        assert tail.start_cursor.seq == 348
        before = timeline.refetch("before", tail.start_cursor, 5, "projected")
        assert [(e.seq_start, e.seq_end) for e in before.entries] == [(343, 347)]
        assert before.has_newer
        after = timeline.refetch("after", dc.TimelineCursor(tail.epoch, 347), 5, "projected")
        assert [(e.seq_start, e.seq_end) for e in after.entries] == [(348, 352)]
        assert tail.end_cursor is not None
        newest = timeline.refetch("after", tail.end_cursor, 5, "projected")
        assert (newest.entries, newest.start_cursor, newest.has_newer) == ((), None, False)
        canonical = timeline.refetch("tail", None, 5, "canonical")
        assert [e.seq_start for e in canonical.entries] == list(range(313, 353))
        assert len(timeline.refetch("before", tail.start_cursor, 5, "canonical").entries) == 5
        everything = timeline.refetch("tail", None, 0, "projected")
        assert (len(everything.entries), everything.has_older) == (52, False)
        assert everything.entries[-1].seq_end == 352
        stale = timeline.refetch("after", dc.TimelineCursor("00000000-0000-4000-8000-000000000000", 3), 5, "projected")
        assert (stale.reset, stale.stale_cursor, stale.epoch) == (True, True, tail.epoch)
        defaults = timeline.refetch(cursor=dc.TimelineCursor(tail.epoch, 350))
        assert [(e.seq_start, e.seq_end) for e in defaults.entries][-1][1] == 352
        assert (defaults.direction, defaults.projection) == ("after", "projected")
        replay.assert_all_played()


def test_07_providers() -> None:
    """``providers.subscribe()``, ``wait_for_ready()`` right after the daemon started, a
    settled ``snapshot()``, ``refresh()`` of one and of all providers, a final ``snapshot()``."""
    with replayed("07-providers.jsonl") as (client, replay):
        updates = RecordingHandler("providers")
        client.providers.subscribe(updates)
        ready = client.providers.wait_for_ready(DEMO, timeout=30)
        statuses = {e.provider: e.status for e in ready.entries}
        assert statuses == {
            "claude": "ready",
            "codex": "unavailable",
            "copilot": "unavailable",
            "opencode": "unavailable",
            "pi": "unavailable",
            "mock": "ready",
        }
        settled = client.providers.snapshot(DEMO)
        mock = settled.entry("mock")
        assert mock is not None
        assert mock.status == "ready"
        assert len(mock.models) == 4
        assert client.providers.refresh(["mock"], DEMO) is True
        assert client.providers.refresh(cwd=DEMO) is True
        assert not client.providers.snapshot(DEMO).loading
        replay.assert_all_played()
        received = updates.wait_for(6 + 2 + 7)  # after the start, the refresh of mock, the refresh of all
        assert all(update.cwd == "/home/dev" for update in received)


def test_08_workspaces() -> None:
    """``workspaces.open()``, a subscribing ``workspaces.list()``, an agent created in a
    workspace, ``open()`` while subscribed, ``archive()`` of a workspace and of an unknown one."""
    with replayed("08-workspaces.jsonl") as (client, replay):
        webapp = client.workspaces.open(f"{DEMO}/webapp")
        assert (webapp.id, webapp.status) == (f"{DEMO}/webapp", "done")
        observed = client.workspaces.list(subscribe=True)
        assert [(w.id, w.status) for w in observed.entries] == [(DEMO, "attention"), (f"{DEMO}/webapp", "done")]
        updates = RecordingHandler("workspaces")
        observed.subscription.subscribe(update=updates)
        agent = client.agents.create(
            MOCK,
            cwd=f"{DEMO}/webapp",
            title="Demo workspace agent",
            prompt="emit 3 agent stream updates",
            labels={"fixture": "workspaces"},
        )
        assert agent.id == AGENT_08
        docs = client.workspaces.open(f"{DEMO}/docs-site")
        assert docs.id == f"{DEMO}/docs-site"
        assert client.workspaces.archive(f"{DEMO}/webapp") is not None
        with pytest.raises(dc.RpcError, match="Workspace not found"):
            client.workspaces.archive(f"{DEMO}/no-such-workspace")
        remaining = client.workspaces.list()
        assert f"{DEMO}/webapp" not in [w.id for w in remaining.entries]
        assert remaining.subscription_id is None
        replay.assert_all_played()
        received = updates.wait_for(5)
        seen = [(m.payload.kind, m.payload.workspace.status if m.payload.workspace else None) for m in received]
        assert seen[:3] == [("upsert", "done"), ("upsert", "running"), ("upsert", "attention")]
        assert seen[-1] == ("remove", None)


def test_09_errors() -> None:
    """Connection c1 only (c2-c6 show the daemon's answers to hellos this client never sends):
    raw ``client.request()`` calls for an unknown type and a request without ``agentId``;
    ``agents.fetch()``, ``wait_for_finish()``, ``send()`` on an unknown agent; ``cancel()``.
    A bare ``{"type":"session"}``, an unknown top-level type, non-JSON text and a second
    ``hello`` cannot be sent by this client: those lines stay unplayed."""
    dead = "00000000-0000-4000-8000-00000000dead"
    with replayed("09-errors.jsonl", connections=["c1"]) as (client, replay):
        with pytest.raises(dc.RpcError) as unknown:
            client.request({"type": "no_such_request"})
        assert (unknown.value.code, unknown.value.request_type) == ("unknown_schema", "no_such_request")
        with pytest.raises(dc.RpcError, match="Unknown request schema"):
            client.request({"type": "fetch_agent_request"})
        invalid = RecordingHandler("status errors")
        client.add_push_listener(invalid, ["status"])
        unanswered(client.request_async({"type": "fetch_agent_request"}))  # recorded without a requestId
        with pytest.raises(dc.RpcError, match="Agent not found"):
            client.agents.fetch(dead)
        ghost = client.agents.ref(dead)
        result = ghost.wait_for_finish(timeout=0)
        assert (result.status, result.error) == ("error", f"Agent not found: {dead}")
        with pytest.raises(dc.RpcError, match="Agent not found"):
            ghost.send("hello")
        snapshot = client.agents.ref(AGENT_04).cancel()
        assert snapshot is not None
        assert snapshot.status == "idle"
        activity = RecordingHandler("activity_log")
        client.add_push_listener(activity, ["activity_log"])
        unanswered(client.request_async({"type": "cancel_agent_request", "agentId": AGENT_04}))
        unanswered(client.request_async({"type": "cancel_agent_request", "agentId": dead}))
        assert "Failed to cancel" in activity.wait_for(1)[0].payload["content"]
        assert [m.payload["message"][:16] for m in invalid.wait_for(3)] == ["Invalid message:"] * 3
        assert [line.split(" (")[0] for line in replay.unplayed()] == [
            "#1 line 10",
            "#1 line 12",
            "#1 line 13",
            "#1 line 14",
            "#1 line 27",
            "#1 line 28",
        ]


def refused(replay: ReplayDaemon, password: str | None) -> BaseException:
    """What ``connect()`` raised for a client with ``password``."""
    client = dc.Client("ws://localhost/ws", transport_factory=replay.transport_factory, password=password)
    try:
        with pytest.raises(dc.AuthenticationError) as raised:
            client.connect()
    finally:
        client.close()
    return raised.value


def test_10_auth() -> None:
    """Four clients, one per recorded connection: no password, a wrong one, the right one
    (then ``agents.list()``), and a password that cannot travel in the subprotocol, so that
    it goes in the ``hello`` only, which the daemon does not read."""
    replay = ReplayDaemon(TRANSCRIPTS / "10-auth.jsonl")
    try:
        assert "Password required" in str(refused(replay, None))
        assert "Incorrect password" in str(refused(replay, "wrong"))
        with dc.Client(
            "ws://localhost/ws", transport_factory=replay.transport_factory, password="s3cret-Token", strict=True
        ) as client:
            agents = client.agents.list()
            assert len(agents.entries) == 3
            assert {e.agent.status for e in agents.entries} == {"closed"}
        assert "cannot travel in the WebSocket subprotocol" in str(refused(replay, "s3cret Token"))
        replay.assert_all_played()
    finally:
        replay.close()


def test_13_terminals() -> None:
    """Terminals have no API in this client yet: raw requests with the recorded payloads
    (``client.request()``; ``request_async()`` for the frames the daemon never answers). The
    two binary input frames (C-c, resize) cannot be sent by this client and stay unplayed;
    the daemon's binary frames reach the client, which skips them."""
    with replayed("13-terminals.jsonl") as (client, replay):
        changes = RecordingHandler("terminals_changed")
        client.add_push_listener(changes, ["terminals_changed", "terminal_stream_exit"])
        unanswered(client.request_async({"type": "subscribe_terminals_request", "cwd": DEMO}))
        created = client.request(
            {
                "type": "create_terminal_request",
                "cwd": DEMO,
                "name": "fixture-shell",
                "command": "/bin/bash",
                "args": ["--noprofile", "--norc"],
            }
        )
        terminal = created["terminal"]
        assert (terminal["name"], terminal["title"]) == ("fixture-shell", "bash --noprofile --norc")
        first = terminal["id"]
        assert client.request({"type": "subscribe_terminal_request", "terminalId": first})["slot"] == 0
        unanswered(
            client.request_async(
                {"type": "terminal_input", "terminalId": first, "message": {"type": "input", "data": "echo hello\r"}}
            )
        )
        captured = client.request({"type": "capture_terminal_request", "terminalId": first})
        assert captured["lines"][:3] == ["bash-5.2# echo hello", "hello", "bash-5.2#"]
        assert captured["totalLines"] == 24
        last = client.request(
            {"type": "capture_terminal_request", "terminalId": first, "start": -3, "end": -1, "stripAnsi": False}
        )
        assert last["lines"] == ["", "", ""]
        unanswered(
            client.request_async(
                {"type": "terminal_input", "terminalId": first, "message": {"type": "input", "data": "sleep 30\r"}}
            )
        )
        listed = client.request({"type": "list_terminals_request", "cwd": DEMO})
        assert listed["cwd"] == DEMO
        assert "cwd" not in client.request({"type": "list_terminals_request"})
        missing = client.request({"type": "subscribe_terminal_request", "terminalId": "no-such-terminal"})
        assert missing["error"] == "Terminal not found"
        assert "slot" not in missing
        assert client.request({"type": "capture_terminal_request", "terminalId": "no-such-terminal"})["lines"] == []
        assert client.request({"type": "kill_terminal_request", "terminalId": first})["success"] is True
        assert client.request({"type": "kill_terminal_request", "terminalId": first})["success"] is True
        second = client.request(
            {"type": "create_terminal_request", "cwd": DEMO, "command": "/bin/bash", "args": ["--noprofile", "--norc"]}
        )["terminal"]
        assert second["name"] == "Terminal 1"
        assert client.request({"type": "subscribe_terminal_request", "terminalId": second["id"]})["slot"] == 1
        unanswered(
            client.request_async(
                {"type": "terminal_input", "terminalId": second["id"], "message": {"type": "input", "data": "\u0004"}}
            )
        )
        assert client.request({"type": "list_terminals_request", "cwd": DEMO})["terminals"] == []
        unanswered(client.request_async({"type": "unsubscribe_terminals_request", "cwd": DEMO}))
        replay.wait_for_frame("unsubscribe_terminals_request")
        assert [line.split(" (")[0] for line in replay.unplayed()] == ["#1 line 22", "#1 line 24"]
        exited = changes.wait_for(2, predicate=lambda m: m.type == "terminal_stream_exit")
        exits = [m.payload["terminalId"] for m in exited]
        assert exits == [first, second["id"]]


def test_14_config() -> None:
    """The daemon config has no API in this client yet: raw ``get``/``set`` requests with the
    recorded payloads."""
    with replayed("14-config.jsonl") as (client, replay):
        changed = RecordingHandler("daemon_config_changed")
        client.add_push_listener(changed, ["status"])

        def inject() -> object:
            return client.request({"type": "get_daemon_config_request"})["config"]["mcp"]["injectIntoAgents"]

        assert inject() is False
        merged = client.request({"type": "set_daemon_config_request", "config": {"mcp": {"injectIntoAgents": True}}})
        assert merged["config"]["mcp"]["injectIntoAgents"] is True
        assert inject() is True
        client.request({"type": "set_daemon_config_request", "config": {"mcp": {"injectIntoAgents": False}}})
        assert client.request({"type": "set_daemon_config_request", "config": {}})["config"]["providers"] == {}
        with pytest.raises(dc.RpcError) as wrong:
            client.request({"type": "set_daemon_config_request", "config": {"mcp": {"injectIntoAgents": "yes"}}})
        assert wrong.value.code == "unknown_schema"
        assert inject() is False
        replay.assert_all_played()
        statuses = changed.wait_for(2, predicate=lambda m: m.payload["status"] == "daemon_config_changed")
        assert [m.payload["config"]["mcp"]["injectIntoAgents"] for m in statuses] == [True, False]


def test_15_agent_settings() -> None:
    """``agents.list(subscribe=True)`` with a label filter, ``create()``, ``fetch()``,
    ``archive()``; the agent settings requests have no API in this client yet and are sent raw
    with the recorded payloads (``list_commands``, ``set_agent_*``, ``update_agent``,
    ``clear_agent_attention``, ``refresh_agent``, ``delete_agent``)."""
    with replayed("15-agent-settings.jsonl") as (client, replay):
        observed = client.agents.list(filter=dc.AgentFilter(labels={"fixture": "agent-settings"}), subscribe=True)
        assert observed.entries == ()
        agent = client.agents.create(MOCK, cwd=DEMO, title="Demo settings agent", labels={"fixture": "agent-settings"})
        aid = agent.id
        commands = client.request({"type": "list_commands_request", "agentId": aid})
        assert commands["error"] == "Agent does not support listing commands"
        draft = {"provider": "mock", "cwd": DEMO, "model": "ten-second-stream", "modeId": "load-test"}
        drafted = client.request({"type": "list_commands_request", "agentId": "draft-only", "draftConfig": draft})
        assert drafted["error"] == "Provider 'mock' does not support listing commands"
        assert client.request({"type": "set_agent_mode_request", "agentId": aid, "modeId": "load-test"})["accepted"]
        model = {"type": "set_agent_model_request", "agentId": aid, "modelId": "one-minute-stream"}
        assert client.request(model)["accepted"]
        for option in ("high", None):
            thinking = {"type": "set_agent_thinking_request", "agentId": aid, "thinkingOptionId": option}
            assert client.request(thinking)["accepted"]
        feature = {"type": "set_agent_feature_request", "agentId": aid, "featureId": "web_search", "value": True}
        assert client.request(feature)["accepted"] is False
        unknown = client.request({"type": "set_agent_mode_request", "agentId": "no-such-agent", "modeId": "load-test"})
        assert unknown["error"] == "requireAgent: agentId must be a UUID"
        labels = {"fixture": "agent-settings", "stage": "renamed"}
        update = {"type": "update_agent_request", "agentId": aid, "name": "Renamed settings agent", "labels": labels}
        assert client.request(update)["accepted"]
        nothing = client.request({"type": "update_agent_request", "agentId": aid})
        assert nothing["error"] == "Nothing to update (provide name and/or labels)"
        cleared = client.request({"type": "clear_agent_attention", "agentId": aid})
        assert [a["id"] for a in cleared["agents"]] == [aid]
        fetched = client.agents.fetch(aid)
        assert fetched is not None
        assert (fetched.title, fetched.labels) == ("Renamed settings agent", labels)
        assert client.request({"type": "refresh_agent_request", "agentId": aid})["timelineSize"] == 0
        assert agent.archive() is not None
        assert client.request({"type": "delete_agent_request", "agentId": aid})["agentId"] == aid
        with pytest.raises(dc.RpcError, match="Agent not found"):
            client.agents.fetch(aid)
        replay.assert_all_played()


def test_16_provider_extras() -> None:
    """``providers.list_available()``, ``list_models()``, ``list_modes()``; provider features
    and diagnostics have no API in this client yet and are sent raw with the recorded payloads."""
    with replayed("16-provider-extras.jsonl") as (client, replay):
        available = {p.provider: p.available for p in client.providers.list_available()}
        assert available == {
            "claude": True,
            "codex": False,
            "copilot": False,
            "opencode": False,
            "pi": False,
            "mock": True,
        }
        draft = {"provider": "mock", "cwd": DEMO, "model": "ten-second-stream", "modeId": "load-test"}
        features = client.request({"type": "list_provider_features_request", "draftConfig": draft})
        assert (features["provider"], features["features"]) == ("mock", [])
        nobody = {"provider": "no-such-provider", "cwd": DEMO}
        unregistered = client.request({"type": "list_provider_features_request", "draftConfig": nobody})
        assert "features" not in unregistered
        assert unregistered["error"] == "No client registered for provider 'no-such-provider'"
        assert client.request({"type": "provider_diagnostic_request", "provider": "mock"})["provider"] == "mock"
        codex = client.request({"type": "provider_diagnostic_request", "provider": "codex"})["diagnostic"]
        assert "Binary: not found" in codex
        with pytest.raises(dc.RpcError) as unknown:
            client.request({"type": "provider_diagnostic_request", "provider": "no-such-provider"})
        assert unknown.value.code == "provider_diagnostic_failed"
        assert len(client.providers.list_models("mock", DEMO)) == 4
        assert [m.id for m in client.providers.list_modes("mock", DEMO)] == ["load-test"]
        replay.assert_all_played()


def test_17_worktree() -> None:
    """``workspaces.list()`` (subscribing, then plain) and ``workspaces.archive()``; Paseo
    worktrees have no API in this client yet: create, list and archive are sent raw with the
    recorded payloads."""
    repo = "/home/dev/projects/demo-repo"
    with replayed("17-worktree.jsonl") as (client, replay):
        observed = client.workspaces.list(filter=dc.WorkspaceFilter(query="demo-repo"), subscribe=True)
        assert observed.entries == ()
        updates = RecordingHandler("workspaces")
        observed.subscription.subscribe(update=updates)
        created = client.request(
            {
                "type": "create_paseo_worktree_request",
                "cwd": repo,
                "worktreeSlug": "fixture-wt",
                "action": "branch-off",
                "refName": "main",
            }
        )
        workspace = created["workspace"]
        assert (workspace["workspaceKind"], workspace["name"]) == ("worktree", "fixture-wt")
        path = workspace["id"]
        listed = client.request({"type": "paseo_worktree_list_request", "cwd": repo})
        assert [w["worktreePath"] for w in listed["worktrees"]] == [path]
        assert path in [w.id for w in client.workspaces.list(filter=dc.WorkspaceFilter(query="demo-repo")).entries]
        # 0.1.65 refuses to archive a worktree workspace ("Use worktree archive"); the client knows
        # it is a worktree and archives it as one at once, so the refused request is never sent
        assert client.workspaces.archive(path) is None
        stale = client.request({"type": "paseo_worktree_list_request", "cwd": repo})
        assert [w["worktreePath"] for w in stale["worktrees"]] == [path]  # still listed, as recorded
        skipped = replay.unplayed()
        assert len(skipped) == 2, skipped
        assert all("archive_workspace_" in line for line in skipped), skipped
        assert [m.payload.kind for m in updates.wait_for(5)][-1] == "remove"
