"""Providers and projects: event subscriptions per host kind, wait_for_ready, the project cache."""

from __future__ import annotations

import time
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler

from ...conftest import KINDS
from ...helpers import session_frames as _frames

EVENTS_REQUEST = "session.events.set_subscription.request"


@pytest.fixture
def connected(fakes, make_client):
    def make(kind: str, **options: Any) -> tuple[FakeDaemon, dc.Client]:
        fake = fakes(kind)
        client = make_client(fake, **options)
        client.connect()
        return fake, client

    return make


def _settle(client: dc.Client) -> None:
    client.ping()
    assert client.flush_callbacks()


# ------------------------------------------------------------------------------ providers


@pytest.mark.parametrize("kind", KINDS)
def test_snapshot_is_a_plain_read_with_typed_entries(connected, kind: str) -> None:
    fake, client = connected(kind)
    snapshot = client.providers.snapshot()
    assert {e.provider for e in snapshot.entries} >= {"claude", "mock"}
    mock = snapshot.entry("mock")
    assert mock is not None
    assert mock.status in {"ready", "loading", "error", "unavailable"}
    assert _frames(fake, EVENTS_REQUEST) == []
    assert fake.events.subscriptions() == []


@pytest.mark.parametrize("kind", KINDS)
def test_two_provider_subscribers_and_release_of_one(connected, kind: str) -> None:
    fake, client = connected(kind)
    first_seen, second_seen = RecordingHandler("first"), RecordingHandler("second")
    first, second = client.providers.subscribe(first_seen), client.providers.subscribe(second_seen)
    first.ready.result(5)
    second.ready.result(5)
    assert first.subscription_id != second.subscription_id
    if kind == "capable":
        assert [m["events"] for m in _frames(fake, EVENTS_REQUEST)] == [["providers_snapshot_update"]] * 2
    elif kind == "selective":
        assert [m["events"] for m in _frames(fake, EVENTS_REQUEST)] == [["providers_snapshot_update"]]
    else:
        assert _frames(fake, EVENTS_REQUEST) == []
    fake.providers.start_loading(["mock"])
    update = first_seen.wait_for(1)[0]
    assert isinstance(update, dc.ProviderSnapshotUpdate)
    assert update.loading == ("mock",)
    second_seen.wait_for(1)
    first.release()
    fake.providers.resolve("mock", status="ready")
    assert second_seen.wait_for(2)[1].loading == ()
    _settle(client)
    assert len(first_seen.items) == 1
    if kind == "capable":
        assert _frames(fake, "subscription.release.request")[-1]["subscriptionId"] == first.subscription_id
        assert len(fake.events.subscriptions()) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_wait_for_ready_returns_when_loading_ends_and_leaves_nothing_behind(connected, kind: str) -> None:
    fake, client = connected(kind)
    fake.providers.auto_resolve = False
    fake.providers.start_loading()
    resolver = _later(0.2, lambda: [fake.providers.resolve(p, status="ready") for p in ("claude", "codex", "mock")])
    snapshot = client.providers.wait_for_ready(timeout=10)
    resolver.join(5)
    assert snapshot.loading == ()
    assert {e.status for e in snapshot.entries} == {"ready"}
    _settle(client)
    assert fake.events.subscriptions() == []


def test_wait_for_ready_buffers_an_update_that_races_the_snapshot(connected) -> None:
    fake, client = connected("capable")
    fake.providers.auto_resolve = False
    fake.providers.start_loading()

    def resolve_during_snapshot(ctx: Any) -> None:
        snapshot = {
            "requestId": ctx.request_id,
            "entries": fake.providers.entries(),
            "generatedAt": "2026-01-01T00:00:00Z",
        }
        for provider in ("claude", "codex", "mock"):
            fake.providers.resolve(provider, status="ready")  # updates sent before the (older) snapshot reply
        ctx.reply(snapshot)

    fake.on_request("get_providers_snapshot_request", resolve_during_snapshot)
    snapshot = client.providers.wait_for_ready(timeout=5)
    assert snapshot.loading == ()


@pytest.mark.parametrize("kind", KINDS)
def test_wait_for_ready_times_out_naming_the_loading_providers(connected, kind: str) -> None:
    fake, client = connected(kind)
    fake.providers.auto_resolve = False
    fake.providers.start_loading(["codex", "mock"])
    with pytest.raises(dc.ProvidersNotReady, match="codex, mock") as info:
        client.providers.wait_for_ready(timeout=0.3)
    assert isinstance(info.value, dc.RequestTimeout)
    _settle(client)
    assert fake.events.subscriptions() == []


@pytest.mark.parametrize("kind", KINDS)
def test_refresh_and_catalog_reads(connected, kind: str) -> None:
    _, client = connected(kind)
    assert client.providers.refresh(["mock"]) is True
    available = {p.provider: p.available for p in client.providers.list_available()}
    assert available["mock"] is True
    models = client.providers.list_models("mock")
    assert models
    assert all(isinstance(m, dc.ProviderModel) for m in models)
    assert isinstance(client.providers.list_modes("mock"), list)
    with pytest.raises(dc.RpcError, match="Unknown provider"):
        client.providers.list_models("no-such-provider")


def test_unknown_provider_status_and_fields_do_not_break_decoding(connected) -> None:
    fake, client = connected("broadcast")
    seen = RecordingHandler("seen")
    client.providers.subscribe(seen).ready.result(5)
    fake.push(
        "providers_snapshot_update",
        {
            "entries": [{"provider": "future", "status": "warming_up", "brandNew": {"x": 1}, "models": []}],
            "generatedAt": "2026-01-01T00:00:00Z",
            "cwd": "/home/dev",
        },
    )
    update = seen.wait_for(1)[0]
    assert update.entries[0].status == "warming_up"
    assert update.entries[0].extra_fields == {"brandNew": {"x": 1}}


# ------------------------------------------------------------------------------ projects


def test_project_list_updates_and_cache_converge_when_updates_race_the_list(connected) -> None:
    fake, client = connected("capable")
    fake.projects.upsert("p-keep", projectDisplayName="keep", projectRootPath="/p/keep", projectKind="git")
    fake.projects.upsert("p-gone", projectDisplayName="gone", projectRootPath="/p/gone", projectKind="git")
    listed = client.projects.list()
    assert {p.project_id for p in listed.projects} == {"p-keep", "p-gone"}
    assert listed.sync is not None
    assert not listed.derived

    def race() -> None:  # runs after the list snapshot was taken, before its reply is sent
        fake.projects.upsert("p-new", projectDisplayName="new", projectRootPath="/p/new", projectKind="git")
        fake.projects.remove("p-gone")
        fake.projects.upsert("p-keep", projectDisplayName="renamed", projectRootPath="/p/keep", projectKind="git")

    fake.projects.before_list_reply = race
    with client.projects.cache() as cache:
        fake.projects.before_list_reply = None
        _settle(client)
        assert {p.project_id for p in cache} == {"p-keep", "p-new"}
        assert cache.get("p-keep").project_display_name == "renamed"
        changes = RecordingHandler("changes")
        cache.on_change(changes)
        fake.projects.remove("p-new")
        assert changes.wait_for(1)[0] == dc.ProjectChange("remove", "p-new", None)
        assert len(cache) == 1


def test_project_cache_resyncs_after_reconnect(connected) -> None:
    fake, client = connected("capable")
    fake.projects.upsert("a", projectDisplayName="A", projectRootPath="/a", projectKind="git")
    cache = client.projects.cache()
    changes = RecordingHandler("changes")
    cache.on_change(changes)
    fake.drop_connections()
    fake.projects.upsert("b", projectDisplayName="B", projectRootPath="/b", projectKind="git")  # while away
    changes.wait_for(predicate=lambda c: c.project_id == "b", timeout=10)
    assert {p.project_id for p in cache} == {"a", "b"}
    fake.projects.upsert("c", projectDisplayName="C", projectRootPath="/c", projectKind="git")
    changes.wait_for(predicate=lambda c: c.project_id == "c")
    assert {p.project_id for p in cache} == {"a", "b", "c"}
    cache.close()


@pytest.mark.parametrize("kind", ["selective", "broadcast"])
def test_hosts_without_a_project_list_derive_it_and_refuse_the_stream(connected, kind: str) -> None:
    fake, client = connected(kind)
    fake.workspaces.upsert(workspace_directory="/home/dev/one", project_id="proj-one", project_display_name="one")
    fake.workspaces.upsert(workspace_directory="/home/dev/two", project_id="proj-two", project_display_name="two")
    before = len(fake.received)
    listed = client.projects.list()
    assert listed.derived
    assert {p.project_id for p in listed.projects} >= {"proj-one", "proj-two"}
    assert "project.list.request" not in {f.get("message", {}).get("type") for f in fake.received[before:]}
    before = len(fake.received)
    with pytest.raises(dc.UnsupportedByHost, match="projectList"):
        client.projects.subscribe(lambda update: None)
    with pytest.raises(dc.UnsupportedByHost):
        client.projects.cache()
    assert len(fake.received) == before


def test_unknown_project_fields_do_not_break_decoding(connected) -> None:
    fake, client = connected("capable")
    seen = RecordingHandler("seen")
    client.projects.subscribe(seen).ready.result(5)
    fake.projects.upsert("x", projectDisplayName="X", projectRootPath="/x", projectKind="monorepo", brandNew=True)
    update = seen.wait_for(1)[0]
    assert update.project.project_kind == "monorepo"
    assert update.project.extra_fields.get("brandNew") is True


def _later(delay: float, fn: Any) -> Any:
    import threading

    def run() -> None:
        time.sleep(delay)
        fn()

    thread = threading.Thread(target=run, name="test-later")
    thread.start()
    return thread
