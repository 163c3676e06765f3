"""Providers: the snapshot, event subscriptions per host kind, refresh and catalog reads, and
``wait_for_ready`` (when loading ends, when it times out with or without an acknowledgement, and
when its observation cannot be restored)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import RecordingHandler
from daemon_client.testing.fake.engine.handlers import RequestContext

from ...conftest import KINDS
from ...helpers import session_frames as _frames

EVENTS_REQUEST = "session.events.set_subscription.request"


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


def test_wait_for_ready_without_an_acknowledgement_times_out_as_providers_not_ready(connected) -> None:
    fake, client = connected("capable")
    fake.ignore(EVENTS_REQUEST)
    with pytest.raises(dc.ProvidersNotReady, match=r"no acknowledgement within 0\.2 s") as caught:
        client.providers.wait_for_ready(timeout=0.2)
    assert isinstance(caught.value, dc.RequestTimeout)
    assert caught.value.request_type == "wait_for_ready"


def test_wait_for_ready_raises_when_its_observation_cannot_be_restored(connected) -> None:
    fake, client = connected("capable")
    fake.providers.auto_resolve = False
    fake.providers.start_loading(["mock"])
    dropper: list[threading.Thread] = []

    def drop_after_the_first_read(ctx: RequestContext) -> None:
        if not dropper:  # the observation is live and the catalog still loading: lose the connection
            fake.fail_next(EVENTS_REQUEST, "no events for you")
            dropper.append(threading.Thread(target=fake.drop_connections, name="test-drop"))
            dropper[0].start()

    fake.after_request("get_providers_snapshot_request", drop_after_the_first_read)
    try:
        with pytest.raises(dc.RpcError, match="no events for you"):
            client.providers.wait_for_ready(timeout=10)
    finally:
        for thread in dropper:
            thread.join(5)


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


def _later(delay: float, fn: Any) -> Any:
    def run() -> None:
        time.sleep(delay)
        fn()

    thread = threading.Thread(target=run, name="test-later")
    thread.start()
    return thread
