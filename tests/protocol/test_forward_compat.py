"""A daemon newer than the library: one odd entry never hides the rest.

Regression tests for shapes newer daemons send (grouped select options and thinking options
without ``id``, nullable fields, unknown ahead/behind counts, progress ``status`` frames that
echo a pending request's ``requestId``, history-search fields on directory entries, binary
frames), on every host kind where they apply, and unit tests of the lenient reading rule of
:mod:`daemon_client.protocol.lenient`.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.protocol.agents import AgentEntry, AgentSnapshot, FeatureOption
from daemon_client.protocol.lenient import MissingIdentity, identity_fields, skipped_entries, structure_each
from daemon_client.protocol.providers import ProviderModel
from daemon_client.protocol.workspaces import WorkspaceDescriptor
from daemon_client.testing import FakeDaemon, RecordingHandler

from ..conftest import KINDS

LENIENT_LOG = "daemon_client.protocol"


@pytest.fixture
def connected(fakes, make_client):
    def make(kind: str, **options: Any) -> tuple[FakeDaemon, dc.Client]:
        fake = fakes(kind)
        client = make_client(fake, **options)
        client.connect()
        return fake, client

    return make


def _settle(client: dc.Client) -> None:
    """Everything sent so far has been read and its callbacks have run."""
    client.ping()
    assert client.flush_callbacks()


def _skips(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == LENIENT_LOG and r.levelno == logging.WARNING and r.getMessage().startswith("skipped")
    ]


def _grouped_options() -> list[dict[str, Any]]:
    """A select feature's options as a newer daemon groups them: a group has no ``id``."""
    return [
        {"label": "Fast tiers", "options": [{"id": "flex", "label": "Flex"}, {"id": "turbo", "label": "Turbo"}]},
        {"id": "default", "label": "Default", "isDefault": True},
    ]


def _grouped_feature() -> dict[str, Any]:
    return {
        "type": "select",
        "id": "service_tier",
        "label": "Service tier",
        "value": "flex",
        "options": _grouped_options(),
    }


# ------------------------------------------------------------------------------ break 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_feature_with_grouped_options_hides_no_agent(connected, caplog, kind: str) -> None:
    fake, client = connected(kind)
    plain = fake.agents.upsert(title="plain")["id"]
    grouped = fake.agents.upsert(title="grouped", features=[_grouped_feature()])["id"]
    before = skipped_entries().get("FeatureOption", 0)
    caplog.clear()

    result = client.agents.list()

    assert {e.agent.id for e in result.entries} == {plain, grouped}
    agent = next(e.agent for e in result.entries if e.agent.id == grouped)
    assert agent.features is not None
    (feature,) = agent.features
    assert (feature.id, feature.value) == ("service_tier", "flex")
    assert [o.id for o in feature.options] == ["default"]  # the group, without an id, is skipped alone
    assert feature.extra_fields["options"] == _grouped_options()  # and kept raw
    (warning,) = _skips(caplog)
    assert "FeatureOption" in warning
    assert "'id'" in warning
    assert grouped in warning
    assert "options[0]" in warning
    assert skipped_entries()["FeatureOption"] == before + 1


@pytest.mark.parametrize("kind", KINDS)
def test_the_same_skipped_entry_is_warned_about_once_and_counted_each_time(connected, caplog, kind: str) -> None:
    fake, client = connected(kind)
    fake.agents.upsert(features=[_grouped_feature()])
    before = skipped_entries().get("FeatureOption", 0)
    caplog.clear()
    client.agents.list()
    client.agents.list()
    assert len(_skips(caplog)) == 1
    assert skipped_entries()["FeatureOption"] == before + 2


# ------------------------------------------------------------------------------ break 2


@pytest.mark.parametrize("kind", KINDS)
def test_an_update_with_null_available_modes_reaches_callbacks_handles_and_the_view(connected, kind: str) -> None:
    fake, client = connected(kind)
    agent_id = fake.agents.upsert(title="before")["id"]
    observation = client.agents.list(subscribe=True).subscription
    assert observation is not None
    updates = RecordingHandler[Any]("updates")
    observation.subscribe(update=updates)
    handle = client.agents.ref(agent_id)

    fake.agents.upsert(agent_id, title="after", available_modes=None, current_mode_id=None)

    (message,) = updates.wait_for(predicate=lambda m: m.payload.agent_id == agent_id)
    assert message.payload.agent.title == "after"
    assert message.payload.agent.available_modes == ()
    _settle(client)
    current = handle.current()
    assert current is not None
    assert current.title == "after"
    view = observation.current()
    assert view is not None
    assert [e.agent.title for e in view.entries] == ["after"]


# ------------------------------------------------------------------------------ break 3


@pytest.mark.parametrize("kind", KINDS)
def test_unknown_ahead_behind_counts_hide_no_workspace(connected, kind: str) -> None:
    fake, client = connected(kind)
    unknown = {"currentBranch": "main", "aheadBehind": {"ahead": None, "behind": None}}
    odd = fake.workspaces.upsert(name="odd", git_runtime=unknown)["id"]
    plain = fake.workspaces.upsert(name="plain")["id"]

    result = client.workspaces.list(subscribe=True)

    assert {w.id for w in result.entries} == {odd, plain}
    workspace = next(w for w in result.entries if w.id == odd)
    assert workspace.git_runtime is not None
    assert workspace.git_runtime.ahead_behind == dc.protocol.workspaces.AheadBehind(ahead=None, behind=None)
    observation = result.subscription
    assert observation is not None
    updates = RecordingHandler[Any]("updates")
    observation.subscribe(update=updates)
    fake.workspaces.upsert(odd, name="odd again", git_runtime={"aheadBehind": {"ahead": 2, "behind": None}})
    (message,) = updates.wait_for(predicate=lambda m: m.payload.workspace_id == odd)
    assert message.payload.workspace.name == "odd again"
    assert message.payload.workspace.git_runtime.ahead_behind.ahead == 2


# ------------------------------------------------------------------------------ break 4


def _grouped_thinking_model(provider: str) -> dict[str, Any]:
    return {
        "provider": provider,
        "id": "deep-model",
        "label": "Deep model",
        "thinkingOptions": [
            {"label": "Reasoning", "options": [{"id": "high", "label": "High"}]},
            {"id": "low", "label": "Low"},
        ],
    }


@pytest.mark.parametrize("kind", KINDS)
def test_a_model_with_grouped_thinking_options_keeps_provider_updates_readable(connected, kind: str) -> None:
    fake, client = connected(kind)
    fake.providers.auto_resolve = False
    fake.providers.start_loading()

    def resolve_during_snapshot(ctx: Any) -> None:
        loading = {
            "requestId": ctx.request_id,
            "entries": fake.providers.entries(),
            "generatedAt": "2026-01-01T00:00:00Z",
        }
        fake.providers.resolve("claude", status="ready", models=[_grouped_thinking_model("claude")])
        for provider in ("codex", "mock"):
            fake.providers.resolve(provider, status="ready")  # updates sent before the (older) snapshot reply
        ctx.reply(loading)

    fake.on_request("get_providers_snapshot_request", resolve_during_snapshot)
    snapshot = client.providers.wait_for_ready(timeout=10)

    assert snapshot.loading == ()
    claude = snapshot.entry("claude")
    assert claude is not None
    assert claude.models is not None
    (model,) = claude.models
    assert model.thinking_options is not None
    assert [o.id for o in model.thinking_options] == ["low"]
    assert model.extra_fields["thinkingOptions"] == _grouped_thinking_model("claude")["thinkingOptions"]


@pytest.mark.parametrize("kind", KINDS)
def test_list_models_skips_only_the_model_without_an_id(connected, caplog, kind: str) -> None:
    fake, client = connected(kind)
    models = [{"label": f"no id {uuid.uuid4()}"}, _grouped_thinking_model("mock"), {"id": "plain", "label": "Plain"}]
    fake.on_request("list_provider_models_request", lambda ctx: ctx.reply({"provider": "mock", "models": models}))
    caplog.clear()
    assert [m.id for m in client.providers.list_models("mock")] == ["deep-model", "plain"]
    assert any("ProviderModel" in w and "models[0]" in w for w in _skips(caplog))


# ------------------------------------------------------------------------------ break 5


def _with_progress(fake: FakeDaemon, request_type: str) -> None:
    """Before the real reply, a newer daemon's progress ``status`` echoing the request's id."""
    original = fake.registry.handler_for(request_type)
    assert original is not None

    def handler(ctx: Any) -> None:
        ctx.send("status", {"status": "agent_create_progress", "requestId": ctx.request_id, "phase": "worktree"})
        original(ctx)

    fake.on_request(request_type, handler)


@pytest.mark.parametrize("kind", KINDS)
def test_a_progress_status_echoing_the_request_id_is_a_push_and_the_create_succeeds(connected, kind: str) -> None:
    fake, client = connected(kind)
    request_type = "agent.create.request" if kind == "capable" else "create_agent_request"
    _with_progress(fake, request_type)
    pushes = RecordingHandler[dc.SessionMessage]("pushes")
    client.add_push_listener(pushes, ["status"])

    config = dc.AgentConfig(provider="mock/ten-second-stream")
    agent = client.agents.create(config, cwd="/home/dev/projects/demo", title="progress")

    assert agent.current() is not None
    (progress,) = pushes.wait_for(predicate=lambda m: m.payload.get("status") == "agent_create_progress")
    assert progress.payload["phase"] == "worktree"
    assert client.state is dc.ConnectionState.CONNECTED


@pytest.mark.parametrize("kind", ["selective", "broadcast"])
def test_a_status_the_request_does_not_await_leaves_it_pending(connected, kind: str) -> None:
    fake, client = connected(kind)
    fake.ignore("create_agent_request")
    future = client.request_async({"type": "create_agent_request", "config": {"provider": "mock", "cwd": "/x"}})
    request_id = fake.wait_for_frame("create_agent_request")["message"]["requestId"]
    fake.push("status", {"status": "something_new", "requestId": request_id})
    _settle(client)
    assert not future.done()
    fake.push("status", {"status": "agent_created", "requestId": request_id, "agent": {"id": "a-new"}})
    assert future.result(timeout=5)["agent"] == {"id": "a-new"}


# ------------------------------------------------------------------------------ unknown fields everywhere


@pytest.mark.parametrize("kind", KINDS)
def test_directory_entries_keep_history_search_fields(connected, kind: str) -> None:
    fake, client = connected(kind)
    agent = fake.agents.upsert(title="found")
    search = {"searchScore": 0.75, "searchMatches": [{"field": "title", "ranges": [[0, 5]]}], "searchTruncated": False}
    entry = {"agent": agent, "project": {"projectKey": "/p", "projectName": "p"}, **search}
    fake.on_request("fetch_agents_request", lambda ctx: ctx.reply({"entries": [entry], "pageInfo": {}}))
    (read,) = client.agents.list().entries
    assert read.agent.id == agent["id"]
    assert read.extra_fields == search


@pytest.mark.parametrize("kind", KINDS)
def test_a_workspace_list_keeps_every_readable_entry(connected, caplog, kind: str) -> None:
    fake, client = connected(kind)
    good = fake.workspaces.upsert(name=f"good-{uuid.uuid4()}")  # fresh content: its own WARNING
    odd = {**good, "id": "ws-odd", "status": {"phase": "new"}, "scripts": "none", "brandNew": [1]}
    broken = {key: value for key, value in good.items() if key != "id"}
    empty = [{"projectDisplayName": good["name"]}]
    reply = {"entries": [broken, odd, good], "pageInfo": {}, "emptyProjects": empty}
    fake.on_request("fetch_workspaces_request", lambda ctx: ctx.reply(reply))
    caplog.clear()
    result = client.workspaces.list()
    assert [w.id for w in result.entries] == ["ws-odd", good["id"]]
    assert result.empty_projects == ()
    lenient = result.entries[0]
    assert (lenient.status, lenient.scripts) == ("", ())
    assert lenient.extra_fields == {"status": {"phase": "new"}, "scripts": "none", "brandNew": [1]}
    skips = _skips(caplog)
    assert len(skips) == 2
    assert any("WorkspaceDescriptor" in w and "entries[0]" in w for w in skips)
    assert any("WorkspaceProjectDescriptor" in w and "'projectId'" in w for w in skips)


def test_a_project_list_keeps_every_readable_project(connected) -> None:
    fake, client = connected("capable")
    projects = [{"projectDisplayName": "no id"}, {"projectId": "p1", "projectDisplayName": 5, "newField": True}]
    fake.on_request("project.list.request", lambda ctx: ctx.reply({"projects": projects, "sync": {"headSeq": "x"}}))
    listed = client.projects.list()
    (project,) = listed.projects
    assert (project.project_id, project.project_display_name) == ("p1", "")
    assert project.extra_fields == {"projectDisplayName": 5, "newField": True}
    assert listed.sync is not None
    assert listed.sync.head_seq is None


@pytest.mark.parametrize("kind", KINDS)
def test_a_later_server_info_with_new_shapes_is_kept(connected, kind: str) -> None:
    fake, client = connected(kind)
    info = {**fake.server_info, "permissions": "all", "desktopManaged": None, "pluginCatalog": {"n": 1}}
    fake.push("status", info)
    _settle(client)
    current = client.server_info
    assert current is not None
    assert current.permissions == ()
    assert current.extra_fields == {"permissions": "all", "pluginCatalog": {"n": 1}}
    assert client.host_kind is dc.HostKind(kind)


# ------------------------------------------------------------------------------ binary frames


@pytest.mark.parametrize("transport", ["memory", "loopback"])
def test_unrequested_binary_frames_log_one_line_per_connection(fakes, make_client, caplog, transport: str) -> None:
    fake = fakes("capable")
    client = make_client(fake, transport)
    client.connect()

    def binary_lines() -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.name.startswith("daemon_client") and "binary frame" in r.getMessage()]

    caplog.clear()
    for n in range(5):
        fake.send_raw(bytes([1, 0, n]) * 10, binary=True)
    _settle(client)
    (line,) = binary_lines()
    assert line.levelno == logging.INFO
    states = RecordingHandler[Any]("states")
    client.on_state_change(states)
    fake.drop_connections()
    states.wait_for(predicate=lambda change: change[1] is dc.ConnectionState.CONNECTED and change[2] == "reconnected")
    for n in range(3):
        fake.send_raw(bytes([1, 0, n]), binary=True)
    _settle(client)
    assert len(binary_lines()) == 2  # one for the new connection
    assert all(r.levelno < logging.WARNING for r in binary_lines())


# ------------------------------------------------------------------------------ the rule itself


def test_null_or_missing_fields_get_their_defaults() -> None:
    (entry,) = structure_each(
        [{"agent": {"id": "a1", "availableModes": None, "labels": None, "pendingPermissions": None, "status": None}}],
        AgentEntry,
        "entries",
    )
    agent = entry.agent
    assert (agent.available_modes, agent.labels, agent.pending_permissions, agent.status) == ((), {}, (), "")
    assert agent.extra_fields == {}


def test_values_of_unexpected_shape_are_kept_raw_and_the_field_gets_its_default() -> None:
    raw = {
        "id": "a1",
        "title": {"text": "wrapped"},
        "createdAt": 5,
        "labels": {"ok": "yes", "bad": {"x": 1}},
        "capabilities": "all",
        "features": {"not": "a list"},
        "brandNew": {"deep": [1, {"x": None}]},
    }
    (entry,) = structure_each([{"agent": raw}], AgentEntry, "entries")
    agent = entry.agent
    assert (agent.title, agent.created_at, agent.capabilities, agent.features) == (None, None, None, None)
    assert agent.labels == {"ok": "yes"}  # the readable labels stay; the whole raw map is kept too
    assert agent.extra_fields == {key: value for key, value in raw.items() if key != "id"}


def test_a_nested_object_without_its_identity_becomes_none_and_is_kept_raw() -> None:
    placement = {"projectName": "no key"}
    (entry,) = structure_each([{"agent": {"id": "a1"}, "project": placement}], AgentEntry, "entries")
    assert entry.project is None
    assert entry.extra_fields == {"project": placement}


def test_an_entry_whose_identity_is_unusable_is_skipped_alone(caplog) -> None:
    entries = [{"agent": {"id": {"v": "a0"}}}, {"agent": {"id": "a1"}}, "text", None, {"agent": {"id": "a2"}}]
    read = structure_each(entries, AgentEntry, "entries")
    assert [e.agent.id for e in read] == ["a1", "a2"]
    skips = _skips(caplog)
    assert any("'agent.id'" in w and "entries[0]" in w for w in skips)
    assert any("not an object" in w and "entries[2]" in w for w in skips)


def test_a_top_level_object_without_its_identity_raises_naming_the_field() -> None:
    before = skipped_entries().get("AgentSnapshot", 0)
    with pytest.raises(MissingIdentity, match="'id'") as failure:
        dc.protocol.structure({"title": "anonymous"}, AgentSnapshot)
    assert isinstance(failure.value, dc.ProtocolError)
    assert "anonymous" in str(failure.value)
    assert skipped_entries()["AgentSnapshot"] == before + 1


def test_identity_fields_are_the_fields_without_a_default() -> None:
    assert identity_fields(AgentSnapshot) == ("id",)
    assert identity_fields(FeatureOption) == ("id",)
    assert identity_fields(ProviderModel) == ("id",)
    assert identity_fields(WorkspaceDescriptor) == ("id",)


def test_numbers_booleans_and_strings_are_not_converted_into_each_other() -> None:
    (entry,) = structure_each(
        [{"agent": {"id": "a1", "requiresAttention": "yes", "internal": 1, "lastUsage": {"inputTokens": 7.0}}}],
        AgentEntry,
        "entries",
    )
    agent = entry.agent
    assert (agent.requires_attention, agent.internal) == (None, None)
    assert agent.last_usage is not None
    assert agent.last_usage.input_tokens == 7
    assert agent.extra_fields == {"requiresAttention": "yes", "internal": 1}
