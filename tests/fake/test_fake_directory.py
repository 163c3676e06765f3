"""Tests of the fake daemon's agent and workspace directories, driven with raw frames.

Clients are :class:`~tests.raw_client.RawClient`s in memory (one loopback test uses
websocket-client). "Nothing else arrived" is checked with the client's barrier
(:meth:`~tests.raw_client.RawClient.quiet`). No test sleeps to synchronise; every wait is bounded.
"""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest

from daemon_client.protocol.hosts import HostKind

from ..raw_client import Connect, Fake, connect_fixture

TRANSCRIPTS = Path("/work/shared/transcripts/paseo-0.1.65")
LEGACY = [HostKind.SELECTIVE, HostKind.BROADCAST]

connect = connect_fixture()
"""``connect(fake, client_id="cid-1", *, loopback=False)``: a new socket past its hello."""


def ids(payload: dict[str, Any]) -> list[str]:
    return [entry["agent"]["id"] if "agent" in entry else entry["id"] for entry in payload["entries"]]


def _transcript_payload(name: str, line: int) -> dict[str, Any]:
    frame = json.loads((TRANSCRIPTS / name).read_text().splitlines()[line - 1])["frame"]
    payload: dict[str, Any] = frame["message"]["payload"]
    return payload


# -- plain reads -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(HostKind))
def test_plain_fetch_creates_no_observation(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    first = fake.agents.upsert(title="first")
    second = fake.agents.upsert(title="second")
    fake.workspaces.upsert(name="demo")
    client = connect(fake)
    kind_, payload = client.request("fetch_agents_request")
    assert kind_ == "fetch_agents_response"
    assert list(payload) == ["requestId", "entries", "pageInfo"]  # no subscriptionId key at all
    assert ids(payload) == [second["id"], first["id"]]  # default: updated_at desc
    assert payload["pageInfo"] == {"nextCursor": None, "prevCursor": None, "hasMore": False}
    kind_, payload = client.request("fetch_workspaces_request")
    assert kind_ == "fetch_workspaces_response"
    expected = ["requestId", "entries", "emptyProjects", "pageInfo"] if kind is HostKind.CAPABLE else None
    assert list(payload) == (expected or ["requestId", "entries", "pageInfo"])
    assert fake.directory_observations(include_released=True) == []
    fake.agents.upsert(first["id"], status="running")
    fake.workspaces.upsert(name="other")
    client.quiet()


def test_broadcast_shapes_follow_the_0165_transcripts(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.BROADCAST)
    fake.agents.upsert(labels={"fixture": "subscribe"}, title="Demo subscribe agent")
    client = connect(fake)
    recorded = _transcript_payload("02-fetch-agents-plain.jsonl", 5)["entries"][0]
    entry = client.request("fetch_agents_request")[1]["entries"][0]
    assert entry["project"] == recorded["project"]  # same default cwd, non-git placement
    assert set(recorded["agent"]) - set(entry["agent"]) <= {"lastUsage"}
    assert set(entry["agent"]) <= set(recorded["agent"])
    workspace = client.request("open_project_request", cwd="/home/dev/projects/demo/webapp")[1]["workspace"]
    assert workspace == _transcript_payload("08-workspaces.jsonl", 5)["workspace"]


def test_capable_shapes(fakes: Fake) -> None:
    fake = fakes(HostKind.CAPABLE)
    agent = fake.agents.upsert("a-1", cwd="/srv/app", created_at="2026-05-03T10:00:00.000Z", labels={"x": "y"})
    assert agent["id"] == "a-1"
    assert agent["createdAt"] == "2026-05-03T10:00:00.000Z"
    assert agent["activeTurn"] is None
    assert fake.agents.placement("a-1")["projectKey"] == "/srv/app"  # type: ignore[index]
    updated = fake.agents.upsert("a-1", status="running", project={"projectName": "App"})
    assert updated["updatedAt"] > agent["updatedAt"]
    assert fake.agents.placement("a-1")["projectName"] == "App"  # type: ignore[index]
    workspace = fake.workspaces.upsert(workspace_directory="/srv/app")
    assert workspace["id"].startswith("ws-")
    assert workspace["projectId"] == "/srv/app"
    assert fake.workspaces.get(workspace["id"]) == workspace
    fake.agents.remove("a-1")
    assert fake.agents.get("a-1") is None
    assert fake.agents.all() == []


# -- filters, sort, paging -------------------------------------------------------------------------


def test_agent_filters(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    infra = fake.agents.upsert(labels={"team": "infra", "tier": "1"}, status="running", thinking_option_id="high")
    web = fake.agents.upsert(labels={"team": "web"}, cwd="/srv/web", requires_attention=True)
    archived = fake.agents.upsert(labels={"team": "infra"}, archived_at="2026-05-03T10:00:00.000Z")
    fake.agents.upsert(internal=True)
    client = connect(fake)

    def listed(**filter_: Any) -> set[str]:
        return set(ids(client.request("fetch_agents_request", filter=filter_)[1]))

    assert listed(labels={"team": "infra"}) == {infra["id"]}
    assert listed(labels={"team": "infra"}, includeArchived=True) == {infra["id"], archived["id"]}
    assert listed(labels={"team": "infra", "tier": "2"}) == set()
    assert listed(statuses=["running", "error"]) == {infra["id"]}
    assert listed(projectKeys=["/srv/web"]) == {web["id"]}
    assert listed(requiresAttention=True) == {web["id"]}
    assert listed(thinkingOptionId="high") == {infra["id"]}
    assert listed() == {infra["id"], web["id"]}  # internal agents are never listed
    fake.workspaces.upsert(workspace_directory="/srv/web")
    active = client.request("fetch_agents_request", scope="active")[1]
    assert ids(active) == [web["id"]]


def test_agent_sort_orders(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.BROADCAST)
    idle = fake.agents.upsert("c-idle", title="beta")
    err = fake.agents.upsert("b-error", status="error", title="alpha")
    perm = fake.agents.upsert("d-perm", attention_reason="permission", title=None)
    running = fake.agents.upsert("a-run", status="running", title="gamma")
    tied = fake.agents.upsert("e-idle", title="beta", created_at=idle["createdAt"])
    client = connect(fake)

    def order(*sort: tuple[str, str]) -> list[str]:
        specs = [{"key": key, "direction": direction} for key, direction in sort]
        return ids(client.request("fetch_agents_request", sort=specs)[1])

    assert order(("status_priority", "asc")) == ["d-perm", "b-error", "a-run", "c-idle", "e-idle"]
    assert order(("title", "asc")) == ["d-perm", "b-error", "c-idle", "e-idle", "a-run"]  # null title first
    assert order(("created_at", "asc")) == [idle["id"], tied["id"], err["id"], perm["id"], running["id"]]
    assert order(("created_at", "desc"))[:3] == ["a-run", "d-perm", "b-error"]
    assert order()[:1] == ["e-idle"]  # default updated_at desc
    kind, payload = client.request("fetch_agents_request", sort=[{"key": "bogus", "direction": "asc"}])
    assert (kind, payload["code"]) == ("rpc_error", "invalid_message")


@pytest.mark.parametrize("kind", list(HostKind))
def test_cursor_walk_yields_each_agent_once(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    created = {fake.agents.upsert(title=f"agent {n:02d}")["id"] for n in range(25)}
    client = connect(fake)
    seen: list[str] = []
    cursor: str | None = None
    pages = []
    for _ in range(5):
        page: dict[str, Any] = {"limit": 10} if cursor is None else {"limit": 10, "cursor": cursor}
        payload = client.request("fetch_agents_request", sort=[{"key": "created_at", "direction": "asc"}], page=page)[1]
        assert payload["pageInfo"]["prevCursor"] == cursor
        pages.append(len(payload["entries"]))
        seen += ids(payload)
        cursor = payload["pageInfo"]["nextCursor"]
        assert (cursor is not None) is payload["pageInfo"]["hasMore"]
        if cursor is None:
            break
    assert pages == [10, 10, 5]
    assert len(seen) == len(set(seen)) == 25
    assert set(seen) == created
    assert seen == sorted(seen, key=lambda i: fake.agents.get(i)["createdAt"])  # type: ignore[index]


def test_cursor_and_page_errors(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    for _ in range(3):
        fake.agents.upsert()
    client = connect(fake)
    first = client.request("fetch_agents_request", page={"limit": 1})[1]
    cursor = first["pageInfo"]["nextCursor"]
    decoded = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    assert set(decoded) == {"sort", "values", "id"}  # the 0.1.65 cursor shape
    other_sort = [{"key": "title", "direction": "asc"}]
    for bad in ("!!not-base64!!", "bm90IGpzb24", cursor[:-3]):
        kind, payload = client.request("fetch_agents_request", page={"limit": 1, "cursor": bad})
        assert (kind, payload["error"], payload["code"]) == ("rpc_error", "Invalid cursor", "invalid_cursor")
    kind, payload = client.request("fetch_agents_request", sort=other_sort, page={"limit": 1, "cursor": cursor})
    assert (kind, payload["code"]) == ("rpc_error", "invalid_cursor")
    for limit in (0, 201, "10", True):
        kind, payload = client.request("fetch_agents_request", page={"limit": limit})
        assert (kind, payload["code"], payload["requestType"]) == (
            "rpc_error",
            "invalid_message",
            "fetch_agents_request",
        )
    kind, payload = client.request("fetch_workspaces_request", page={"limit": 1, "cursor": "???"})
    assert (kind, payload["code"]) == ("rpc_error", "invalid_cursor")
    assert fake.directory_observations() == []


# -- capable observations --------------------------------------------------------------------------


def test_capable_observations_are_independent_and_tagged(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    infra = fake.agents.upsert(labels={"team": "infra"})
    web = fake.agents.upsert(labels={"team": "web"})
    client = connect(fake)
    first = client.request("fetch_agents_request", filter={"labels": {"team": "infra"}}, subscribe={})[1]
    second = client.request("fetch_agents_request", filter={"labels": {"team": "web"}}, subscribe={})[1]
    assert list(first) == ["requestId", "subscriptionId", "entries", "pageInfo"]
    assert (ids(first), ids(second)) == ([infra["id"]], [web["id"]])
    infra_sub, web_sub = first["subscriptionId"], second["subscriptionId"]
    assert infra_sub != web_sub
    records = fake.directory_observations()
    assert [(r.id, r.family, r.filter, r.owner, r.released, r.legacy) for r in records] == [
        (infra_sub, "agents", {"labels": {"team": "infra"}}, client.connection, False, False),
        (web_sub, "agents", {"labels": {"team": "web"}}, client.connection, False, False),
    ]

    fake.agents.upsert(infra["id"], status="running")
    kind, payload = client.message()
    assert kind == "agent_update"
    assert (payload["subscriptionId"], payload["kind"], payload["agent"]["status"]) == (infra_sub, "upsert", "running")
    assert payload["project"] == fake.agents.placement(infra["id"])
    fake.agents.upsert(web["id"], title="web agent")
    assert client.message()[1]["subscriptionId"] == web_sub
    client.quiet()

    other = fake.agents.upsert(labels={"team": "qa"})  # matches neither, never delivered: silence
    fake.agents.upsert(other["id"], status="running")
    client.quiet()
    fake.agents.upsert(web["id"], labels={"team": "qa"})  # leaves the web filter: one remove
    assert client.message() == ("agent_update", {"subscriptionId": web_sub, "kind": "remove", "agentId": web["id"]})
    fake.agents.upsert(web["id"], status="running")  # no longer delivered: nothing more
    client.quiet()
    fake.agents.upsert(other["id"], labels={"team": "infra"})  # starts matching: upsert
    assert client.message()[1]["kind"] == "upsert"
    fake.agents.remove(other["id"])
    assert client.message() == ("agent_update", {"subscriptionId": infra_sub, "kind": "remove", "agentId": other["id"]})
    fake.agents.remove(web["id"])
    client.quiet()


def test_capable_observation_goes_to_the_owning_socket_only(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    owner, sibling = connect(fake, "shared"), connect(fake, "shared")
    subscription = owner.request("fetch_agents_request", subscribe={})[1]["subscriptionId"]
    agent = fake.agents.upsert()
    assert owner.message()[1]["subscriptionId"] == subscription
    assert fake.agents.get(agent["id"]) is not None
    sibling.quiet()


def test_capable_release_stops_updates_and_keeps_the_other(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    client = connect(fake)
    released = client.request("fetch_agents_request", subscribe={})[1]["subscriptionId"]
    kept = client.request("fetch_agents_request", subscribe={})[1]["subscriptionId"]
    workspaces = client.request("fetch_workspaces_request", subscribe={})[1]["subscriptionId"]
    released_hooks: list[str] = []
    fake.directory.add_release_hook(lambda connection, sid: released_hooks.append(sid))
    assert client.request("subscription.release.request", subscriptionId=released) == (
        "subscription.release.response",
        {"requestId": ANY, "subscriptionId": released},
    )
    assert released_hooks == [released]
    assert [r.id for r in fake.directory_observations()] == [kept, workspaces]
    assert [r.released for r in fake.directory_observations(include_released=True)] == [True, False, False]
    fake.agents.upsert()
    assert client.message()[1]["subscriptionId"] == kept
    client.quiet()
    for again in (released, "never-issued"):  # releasing twice or an unknown id answers normally
        assert client.request("subscription.release.request", subscriptionId=again)[1]["subscriptionId"] == again
    assert [r.id for r in fake.directory_observations()] == [kept, workspaces]


def test_capable_rejects_client_subscription_ids(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    client = connect(fake)
    for request in ("fetch_agents_request", "fetch_workspaces_request"):
        kind, payload = client.request(request, subscribe={"subscriptionId": "mine"})
        assert kind == "rpc_error"
        assert (payload["error"], payload["code"]) == ("Subscription IDs are assigned by the host", "invalid_message")
    assert fake.directory_observations() == []


def test_capable_disconnect_releases_everything_the_socket_owned(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    leaving, staying = connect(fake, "a"), connect(fake, "b")
    leaving.request("fetch_agents_request", subscribe={})
    leaving.request("fetch_workspaces_request", subscribe={})
    kept = staying.request("fetch_agents_request", subscribe={})[1]["subscriptionId"]
    assert len(fake.directory_observations()) == 3
    connection = leaving.connection
    leaving.close()
    connection.wait_ended()
    assert [r.id for r in fake.directory_observations()] == [kept]
    fake.agents.upsert()
    assert staying.message()[1]["subscriptionId"] == kept


# -- legacy slots ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", LEGACY)
def test_legacy_slot_is_replaced_by_a_later_subscribing_fetch(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    agent = fake.agents.upsert(labels={"fixture": "subscribe"})
    client = connect(fake)
    first = client.request("fetch_agents_request", subscribe={})[1]
    assert ids(first) == [agent["id"]]
    fake.agents.upsert(agent["id"], status="running")
    assert client.message() == ("agent_update", {"kind": "upsert", "agent": fake.agents.get(agent["id"]),
                                                 "project": fake.agents.placement(agent["id"])})  # fmt: skip
    second = client.request("fetch_agents_request", filter={"statuses": ["error"]}, subscribe={})[1]
    assert second["entries"] == []
    assert second["subscriptionId"] != first["subscriptionId"]
    records = fake.directory_observations(include_released=True)
    assert [(r.id, r.released, r.legacy, r.owner) for r in records] == [
        (first["subscriptionId"], True, True, fake.sessions["cid-1"]),
        (second["subscriptionId"], False, True, fake.sessions["cid-1"]),
    ]
    assert records[1].filter == {"statuses": ["error"]}
    for status in ("idle", "running"):  # every change of a non-matching agent: an untagged remove
        fake.agents.upsert(agent["id"], status=status)
        assert client.message() == ("agent_update", {"kind": "remove", "agentId": agent["id"]})
    fake.agents.upsert(agent["id"], status="error")
    assert client.message()[1]["kind"] == "upsert"
    kind_, payload = client.request("subscription.release.request", subscriptionId=second["subscriptionId"])
    assert (kind_, payload["code"]) == ("rpc_error", "unknown_schema")
    assert len(fake.directory_observations()) == 1


@pytest.mark.parametrize("kind", LEGACY)
def test_legacy_updates_go_to_every_socket_of_the_session(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    first, second, stranger = connect(fake, "shared"), connect(fake, "shared"), connect(fake, "other")
    response = first.request("fetch_workspaces_request", subscribe={})
    assert second.message() == response  # legacy hosts route the reply to the whole session
    workspace = fake.workspaces.upsert(name="webapp")
    expected = ("workspace_update", {"kind": "upsert", "workspace": workspace})
    assert first.message() == expected
    assert second.message() == expected
    stranger.quiet()
    fake.agents.upsert()  # no agent slot in this session
    first.quiet()
    fake.workspaces.upsert(workspace["id"])  # identical descriptor: de-duplicated
    first.quiet()


@pytest.mark.parametrize("kind", LEGACY)
def test_legacy_slot_survives_a_reconnect_with_the_same_client_id(
    fakes: Fake, connect: Connect, kind: HostKind
) -> None:
    fake = fakes(kind)
    agent = fake.agents.upsert()
    original = connect(fake, "fixture-12-client-x")
    subscription = original.request("fetch_agents_request", subscribe={})[1]["subscriptionId"]
    connection = original.connection
    original.close()
    connection.wait_ended()
    fake.agents.upsert(agent["id"], status="running")  # nobody listening: dropped, not replayed
    assert [r.id for r in fake.directory_observations()] == [subscription]
    resumed = connect(fake, "fixture-12-client-x")
    fresh = connect(fake, "fixture-12-client-y")
    fake.agents.upsert(agent["id"], status="idle")
    kind_, payload = resumed.message()
    assert (kind_, payload["kind"], payload["agent"]["status"]) == ("agent_update", "upsert", "idle")
    assert "subscriptionId" not in payload
    fresh.quiet()
    fake.restart()  # forgets the sessions, and the slots with them
    assert fake.directory_observations() == []


def test_legacy_slot_ends_with_an_expired_session(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.BROADCAST, session_ttl=0.0)
    client = connect(fake)
    client.request("fetch_agents_request", subscribe={})
    connection = client.connection
    client.close()
    connection.wait_ended()
    assert fake.directory_observations() == []
    assert fake.directory_observations(include_released=True)[0].released


# -- workspaces ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(HostKind))
def test_open_and_archive_order_updates_before_replies(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    fake.workspaces.missing_directories.add("/home/dev/missing")
    client = connect(fake)
    subscribed = client.request("fetch_workspaces_request", subscribe={})[1]
    tag = {"subscriptionId": subscribed["subscriptionId"]} if kind is HostKind.CAPABLE else {}
    client.send_session("open_project_request", requestId="open", cwd="/home/dev/projects/demo/docs-site")
    kind_, update = client.message()
    assert (kind_, update["kind"]) == ("workspace_update", "upsert")
    assert update == {**tag, "kind": "upsert", "workspace": update["workspace"]}
    workspace = update["workspace"]
    assert client.message() == ("open_project_response", {"requestId": "open", "workspace": workspace, "error": None})
    assert (workspace["workspaceDirectory"], workspace["projectKind"], workspace["status"]) == (
        "/home/dev/projects/demo/docs-site",
        "non_git",
        "done",
    )
    assert (workspace["id"] == workspace["workspaceDirectory"]) is (kind is not HostKind.CAPABLE)
    assert client.request("open_project_request", cwd="/home/dev/projects/demo/docs-site")[1]["workspace"] == workspace
    assert client.request("open_project_request", cwd="/home/dev/missing")[1] == {
        "requestId": ANY,
        "workspace": None,
        "error": "Directory not found: /home/dev/missing",
        "errorCode": "directory_not_found",
    }
    client.send_session("archive_workspace_request", requestId="archive", workspaceId=workspace["id"])
    assert client.message() == ("workspace_update", {**tag, "kind": "remove", "id": workspace["id"]})
    kind_, archived = client.message()
    assert kind_ == "archive_workspace_response"
    assert archived["workspaceId"] == workspace["id"]
    assert archived["archivedAt"] is not None
    assert archived["error"] is None
    assert fake.workspaces.get(workspace["id"]) is None
    assert client.request("archive_workspace_request", workspaceId="nope")[1] == {
        "requestId": ANY,
        "workspaceId": "nope",
        "archivedAt": None,
        "error": "Workspace not found: nope",
    }
    client.quiet()


@pytest.mark.parametrize("kind", list(HostKind))
def test_workspace_filters_and_updates(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    app = fake.workspaces.upsert(
        name="App", project_id="remote:github.com/acme/app", activity_at="2026-05-03T10:00:00Z"
    )
    docs = fake.workspaces.upsert(name="docs", status="running")
    fake.workspaces.upsert(name="hidden", internal=True)
    fake.workspaces.upsert(name="bg", background=True)
    client = connect(fake)

    def listed(**fields: Any) -> list[str]:
        return ids(client.request("fetch_workspaces_request", **fields)[1])

    assert listed(filter={"query": "ACME"}) == [app["id"]]
    assert listed(filter={"projectId": "remote:github.com/acme/app"}) == [app["id"]]
    assert listed() == [app["id"], docs["id"]]  # activity_at desc, null last
    assert listed(sort=[{"key": "status_priority", "direction": "asc"}]) == [docs["id"], app["id"]]
    assert len(listed(filter={"includeInternal": True})) == 3
    assert len(listed(includeBackground=True)) == 3
    prefixed = listed(filter={"idPrefix": docs["id"][:-1]})
    assert prefixed == ([app["id"], docs["id"]] if kind is HostKind.CAPABLE else [docs["id"]])  # ignored by capable
    subscription = client.request("fetch_workspaces_request", filter={"query": "app"}, subscribe={})[1]
    assert ids(subscription) == [app["id"]]
    fake.workspaces.upsert(docs["id"], status="done")  # does not match the filter
    if kind is HostKind.CAPABLE:
        client.quiet()
    else:
        assert client.message() == ("workspace_update", {"kind": "remove", "id": docs["id"]})
    fake.workspaces.upsert(app["id"], status="attention")
    kind_, payload = client.message()
    assert (kind_, payload["kind"], payload["workspace"]["status"]) == ("workspace_update", "upsert", "attention")


def test_capable_empty_projects(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    fake.workspaces.empty_projects.append({"projectId": "/srv/empty", "projectDisplayName": "empty"})
    client = connect(fake)
    empty = client.request("fetch_workspaces_request")[1]["emptyProjects"]
    assert empty == [{"projectId": "/srv/empty", "projectDisplayName": "empty"}]


# -- fetch_agent_request ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(HostKind))
def test_fetch_agent_by_id_prefix_and_title(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    one = fake.agents.upsert("709fadbd-512d-4e6b-828c-b022015f8cca", title="Walk me through")
    fake.agents.upsert("709fa000-0000-4000-8000-000000000000", title="other")
    client = connect(fake)

    def fetch(identifier: str) -> dict[str, Any]:
        kind_, payload = client.request("fetch_agent_request", agentId=identifier)
        assert kind_ == "fetch_agent_response"
        return payload

    for identifier in (one["id"], "709fadbd", "Walk me through"):
        payload = fetch(identifier)
        assert payload["agent"] == fake.agents.get(one["id"])
        assert payload["project"] == fake.agents.placement(one["id"])
        assert payload["error"] is None
    assert fetch("709fa") == {"requestId": ANY, "agent": None, "project": None,
                              "error": "Ambiguous agent identifier: 709fa"}  # fmt: skip
    assert fetch("nope") == {"requestId": ANY, "agent": None, "project": None, "error": "Agent not found: nope"}


# -- ordering and loopback -------------------------------------------------------------------------


def test_updates_follow_mutation_order_across_threads(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    agent = fake.agents.upsert(title="0")
    client = connect(fake)
    client.request("fetch_agents_request", subscribe={})
    order: list[str] = []
    order_lock = threading.Lock()

    def mutate(prefix: str) -> None:
        for n in range(50):
            with order_lock:  # the order of mutations is this list's order
                order.append(f"{prefix}{n}")
                fake.agents.upsert(agent["id"], title=f"{prefix}{n}")

    threads = [threading.Thread(target=mutate, args=(p,)) for p in "ab"]
    for thread in threads:
        thread.start()
    for n in range(20):  # replies queued on the connection's reader thread meanwhile
        client.send_session("fetch_agent_request", requestId=f"fetch-{n}", agentId=agent["id"])
    for thread in threads:
        thread.join(10.0)
    titles, replies = [], []
    for _ in range(120):
        kind, payload = client.message()
        if kind == "agent_update":
            titles.append(payload["agent"]["title"])
        else:
            replies.append(payload["requestId"])
    assert titles == order
    assert replies == [f"fetch-{n}" for n in range(20)]
    client.quiet()


@pytest.mark.parametrize("kind", [HostKind.CAPABLE, HostKind.BROADCAST])
def test_directory_over_loopback(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    client = connect(fake, loopback=True)
    payload = client.request("fetch_agents_request", subscribe={})[1]
    agent = fake.agents.upsert()
    kind_, update = client.message()
    assert (kind_, update["agent"]["id"]) == ("agent_update", agent["id"])
    assert (update.get("subscriptionId") == payload["subscriptionId"]) is (kind is HostKind.CAPABLE)
