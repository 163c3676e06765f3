"""``client.agents`` and ``client.workspaces``, the less travelled paths: create arguments
refused before sending, optional request fields, idempotency on hosts with receipts only,
subscribe options, handles made before their first snapshot, ``find`` over several pages and
replies that carry no usable workspace."""

from __future__ import annotations

import pytest

import daemon_client as dc

from ..conftest import KINDS
from ..helpers import session_frames as _frames

CWD = "/home/dev/projects/demo"
MOCK = "mock/ten-second-stream"


# ------------------------------------------------------------------------------ agent creation


@pytest.mark.parametrize(
    ("config", "options", "message"),
    [
        (dc.AgentConfig(provider="mock/a", model="b"), {}, "names model 'a', but model='b'"),
        (dc.AgentConfig(provider=MOCK), {"title": "   "}, "title must be 1 to 200 characters"),
        (dc.AgentConfig(provider=MOCK), {"title": "x" * 201}, "title must be 1 to 200 characters"),
        (dc.AgentConfig(provider=MOCK), {"idempotency_key": ""}, "idempotency_key must be 1 to 512"),
    ],
)
def test_create_arguments_are_refused_before_sending(connected, config, options, message: str) -> None:
    fake, client = connected()
    before = len(fake.received)
    with pytest.raises(ValueError, match=message):
        client.agents.create(config, cwd=CWD, **options)
    assert len(fake.received) == before


def test_create_sends_images_and_background(connected) -> None:
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


def test_an_idempotency_key_goes_to_a_host_with_receipts_only(connected) -> None:
    fake, client = connected("capable", features={"creationLifecycle": False})
    agent = client.agents.create(dc.AgentConfig(provider=MOCK), cwd=CWD, idempotency_key="k-1")
    (sent,) = _frames(fake, "create_agent_request")
    assert sent["idempotencyKey"] == "k-1"
    assert agent.current() is not None


# ------------------------------------------------------------------------------ agent lists and handles


def test_a_scoped_list_and_background_entries(connected) -> None:
    fake, client = connected()
    agent_id = fake.agents.upsert(title="listed", cwd=CWD)["id"]
    fake.agents.upsert(title="no workspace", cwd="/home/dev/elsewhere")
    fake.workspaces.upsert(workspace_directory=CWD)  # "active": agents of an open workspace only
    result = client.agents.list(scope="active", include_background=True)
    assert [a.agent.id for a in result.entries] == [agent_id]
    sent = _frames(fake, "fetch_agents_request")[-1]
    assert (sent["scope"], sent["includeBackground"]) == ("active", True)


def test_subscribe_options_as_a_mapping(connected) -> None:
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
def test_a_handle_made_before_its_snapshot_takes_it_later(connected, kind: str) -> None:
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


# ------------------------------------------------------------------------------ workspaces


@pytest.mark.parametrize("kind", KINDS)
def test_a_workspace_handle_describes_itself(connected, kind: str) -> None:
    fake, client = connected(kind)
    unknown = client.workspaces.ref("ws-unknown")
    assert repr(unknown) == "<WorkspaceHandle ws-unknown unknown>"
    assert unknown.project_id is None
    fake.workspaces.upsert(workspace_directory="/home/dev/projects/b", name="b", project_id="proj-b")
    fake.workspaces.upsert(workspace_directory="/home/dev/projects/a", name="a", project_id="proj-a")
    listed = client.workspaces.list(sort=[("name", "asc")])
    assert [w.name for w in listed.entries] == ["a", "b"]
    assert _frames(fake, "fetch_workspaces_request")[-1]["sort"] == [{"key": "name", "direction": "asc"}]
    handle = client.workspaces.ref(listed.entries[0])
    assert handle.project_id == "proj-a"
    assert repr(handle) == f"<WorkspaceHandle {handle.id} {handle.status}>"


def test_find_pages_through_every_match(connected) -> None:
    fake, client = connected()
    for n in range(201):
        fake.workspaces.upsert(workspace_directory=f"/home/dev/w{n:03}", project_id="shared")
    target = fake.workspaces.upsert(workspace_directory="/home/dev/target", project_id="shared")
    assert client.workspaces.find("shared") is None  # matches the project of every one, the ID of none
    assert len(_frames(fake, "fetch_workspaces_request")) == 2
    found = client.workspaces.find(target["id"])
    assert found is not None
    assert found.directory == "/home/dev/target"


def test_an_open_answered_without_a_readable_workspace(connected) -> None:
    fake, client = connected()
    fake.on_request("open_project_request", lambda ctx: ctx.reply({"workspace": "not an object", "error": None}))
    with pytest.raises(dc.ProtocolError, match="open_project_request answered with an unreadable workspace"):
        client.workspaces.open(CWD)


# ------------------------------------------------------------------------------ terminals


def test_terminal_arguments_refused_before_sending(connected) -> None:
    fake, client = connected()
    before = len(fake.received)
    with pytest.raises(ValueError, match=r"size is \(rows, cols\)"):
        client.terminals.create(cwd=CWD, size=(24, 80, 1))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cwd must be a non-empty string"):
        client.terminals.subscribe(lambda changed: None, cwd="")
    assert len(fake.received) == before


def test_a_create_answered_without_a_readable_terminal(connected) -> None:
    fake, client = connected()
    fake.on_request("create_terminal_request", lambda ctx: ctx.reply({"terminal": ["not", "an", "object"]}))
    with pytest.raises(dc.ProtocolError, match="create_terminal_response carries an unreadable terminal"):
        client.terminals.create(cwd=CWD)


def test_a_list_names_terminals_this_client_never_saw(connected) -> None:
    fake, client = connected("broadcast")
    made_here = client.terminals.create(cwd=CWD, name="here")
    fake.terminals.create(CWD, name="elsewhere")
    listed = client.terminals.list(cwd=CWD)
    assert sorted(t.name for t in listed.terminals) == ["elsewhere", "here"]
    assert made_here.current() is not None


def test_a_workspace_subscription_finds_the_workspace_directory(connected) -> None:
    _fake, client = connected("capable")
    workspace = client.workspaces.open(CWD)
    subscription = client.terminals.subscribe(lambda changed: None, workspace_id=workspace.id)
    assert subscription.cwd == CWD
    assert subscription.ready.result(5).terminals == ()
    subscription.release()
    with pytest.raises(dc.DaemonClientError, match="no workspace 'ws-missing' with a directory"):
        client.terminals.subscribe(lambda changed: None, workspace_id="ws-missing")


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


def test_a_workspaces_namespace_built_without_agents_or_terminals_says_so(connected) -> None:
    from daemon_client.api.workspaces.namespace import WorkspacesNamespace

    fake, client = connected()
    descriptor = client.workspaces.open(CWD).current()
    assert descriptor is not None
    bare = WorkspacesNamespace(client.workspaces._context, client.workspaces._manager)
    handle = bare.ref(descriptor)
    before = len(fake.received)
    with pytest.raises(RuntimeError, match="built without terminals"):
        handle.terminals  # noqa: B018 - the property is the call under test
    with pytest.raises(RuntimeError, match=r"built without client\.agents"):
        handle.agents.create(dc.AgentConfig(provider=MOCK))
    assert len(fake.received) == before
