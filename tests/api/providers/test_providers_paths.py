"""Providers, the less travelled paths: ``wait_for_ready`` without an acknowledgement and when
its observation fails after a reconnect; provider extras refusing a bad draft or an answer
without a diagnostic."""

from __future__ import annotations

import threading

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon
from daemon_client.testing.fake.engine.handlers import RequestContext

EVENTS_REQUEST = "session.events.set_subscription.request"
CWD = "/home/dev/projects/demo"


@pytest.fixture
def connected(fakes, make_client):
    def make(kind: str = "capable") -> tuple[FakeDaemon, dc.Client]:
        fake = fakes(kind)
        client = make_client(fake)
        client.connect()
        return fake, client

    return make


def test_wait_for_ready_without_an_acknowledgement_times_out(connected) -> None:
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


def test_features_need_a_provider(connected) -> None:
    fake, client = connected("capable")
    before = len(fake.received)
    with pytest.raises(ValueError, match=r'Expected config\.provider as "provider" or "provider/model"'):
        client.providers.list_features(dc.AgentConfig(provider="/model-only"), cwd=CWD)
    assert len(fake.received) == before


def test_a_diagnostic_answer_without_text_is_a_protocol_error(connected) -> None:
    fake, client = connected("capable")
    fake.on_request("provider_diagnostic_request", lambda ctx: ctx.reply({"provider": "mock", "diagnostic": None}))
    with pytest.raises(dc.ProtocolError, match="provider_diagnostic_request answered without a diagnostic text"):
        client.providers.diagnostic("mock")
