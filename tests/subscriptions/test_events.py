"""Event subscriptions (projects and providers observe through them): unreadable pushes, a
restore without ``on_restored`` and the errors reported to ``on_error``."""

from __future__ import annotations

from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler

from ..conftest import KINDS


def _connected(fakes, make_client, kind: str) -> tuple[FakeDaemon, dc.Client]:
    fake = fakes(kind)
    client = make_client(fake)
    client.connect()
    return fake, client


def _settle(client: dc.Client) -> None:
    client.ping()
    assert client.flush_callbacks()


def test_an_unreadable_project_update_is_skipped(fakes, make_client, caplog) -> None:
    fake, client = _connected(fakes, make_client, "capable")
    seen = RecordingHandler[Any]("seen")
    subscription = client.projects.subscribe(seen)
    subscription.ready.result(5)
    assert subscription.event == "project.update"
    payload: dict[str, Any] = {"kind": "upsert", "project": {"projectDisplayName": "no id"}}
    if subscription.subscription_id is not None:
        payload["subscriptionId"] = subscription.subscription_id
    fake.push("project.update", payload)
    fake.projects.upsert("p1", projectDisplayName="one", projectRootPath="/p/one", projectKind="git")
    (update,) = seen.wait_for(1)
    _settle(client)
    assert [u.project_id for u in seen.items] == ["p1"]
    assert update.kind == "upsert"
    assert "unreadable project.update skipped" in caplog.text


@pytest.mark.parametrize("kind", KINDS)
def test_a_provider_subscription_without_on_restored_keeps_working_after_a_reconnect(
    fakes, make_client, kind: str
) -> None:
    fake, client = _connected(fakes, make_client, kind)
    seen = RecordingHandler[Any]("seen")
    subscription = client.providers.subscribe(seen)
    subscription.ready.result(5)
    assert subscription.event == "providers_snapshot_update"
    states = RecordingHandler[Any]("states")
    client.on_state_change(states)
    mark = len(fake.received)
    fake.drop_connections()
    states.wait_for(predicate=lambda change: change[2] == "reconnected")
    if kind != "broadcast":  # 0.1.65 broadcasts every event: nothing to subscribe to again
        fake.wait_for_frame("session.events.set_subscription.request", since=mark)
    _settle(client)
    client.providers.refresh(["mock"])
    seen.wait_for(1)
    assert not subscription.released


def test_close_reports_client_closed_to_on_error(fakes, make_client) -> None:
    _, client = _connected(fakes, make_client, "capable")
    errors = RecordingHandler[BaseException]("errors")
    subscription = client.projects.subscribe(lambda update: None, on_error=errors)
    subscription.ready.result(5)
    client.close()
    (error,) = errors.wait_for(1)
    assert isinstance(error, dc.ClientClosed)
    assert subscription.released
