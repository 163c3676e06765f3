"""Timeline reads and pulls, the less travelled paths: argument checks, a forward walk whose
history is replaced again while it restarts, and a pulled stream that ends by failure, by
``close()`` or by silence."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import daemon_client as dc
from daemon_client.api.agents import timeline as timeline_module
from daemon_client.testing import FakeDaemon
from daemon_client.testing.fake.engine.handlers import RequestContext

from ...conftest import KINDS

SET = "agent.timeline.set_subscription.request"


@pytest.fixture
def setup(fakes, make_client):
    def make(kind: str = "capable") -> tuple[FakeDaemon, dc.Client, str]:
        fake = fakes(kind)
        client = make_client(fake)
        client.connect()
        agent_id = fake.agents.upsert(title="streamer")["id"]
        for n in range(3):
            fake.timeline.append(agent_id, {"type": "assistant_message", "text": f"row {n}"})
        return fake, client, agent_id

    return make


def _replaced_before_forward_reads(fake: FakeDaemon, agent_id: str, times: int) -> Callable[[], int]:
    """Replace the history before each of the next ``times`` forward reads; returns a counter."""
    read = fake.registry.handler_for("fetch_agent_timeline_request")
    assert read is not None
    replaced = [0]

    def replacing(ctx: RequestContext) -> None:
        if ctx.message.get("direction") == "after" and replaced[0] < times:
            replaced[0] += 1
            fake.timeline.replace_history(agent_id, [{"type": "assistant_message", "text": f"v{replaced[0]}"}])
        read(ctx)

    fake.on_request("fetch_agent_timeline_request", replacing)
    return lambda: replaced[0]


def test_bad_walks_and_projections_are_refused(setup) -> None:
    fake, client, agent_id = setup()
    timeline = client.agents.ref(agent_id).timeline
    before = len(fake.received)
    with pytest.raises(ValueError, match="projection must be one of"):
        timeline.refetch(projection="sideways")
    with pytest.raises(ValueError, match="pages\\(\\) walks 'before'"):
        next(timeline.pages("tail"))
    assert len(fake.received) == before


@pytest.mark.parametrize("kind", KINDS)
def test_a_page_describes_its_agent_where_the_host_sends_it(setup, kind: str) -> None:
    _, client, agent_id = setup(kind)
    agent = client.agents.ref(agent_id)
    page = agent.timeline.refetch(limit=0)
    assert dc.join_messages(page.entries) == ["row 0row 1row 2"]
    assert page.agent is not None
    assert agent.current() == page.agent


def test_a_page_without_its_agent_leaves_the_handle_as_it_was(setup) -> None:
    fake, client, agent_id = setup()
    raw = client.request({"type": "fetch_agent_timeline_request", "agentId": agent_id})
    assert raw.get("agent") is not None
    reply = {key: value for key, value in raw.items() if key != "requestId"}
    fake.on_request("fetch_agent_timeline_request", lambda ctx: ctx.reply({**reply, "agent": None}))
    agent = client.agents.ref(agent_id)
    page = agent.timeline.refetch(timeout=5)
    assert page.agent is None
    assert dc.join_messages(page.entries) == ["row 0row 1row 2"]
    assert agent.current() is None  # nothing read about the agent itself


def test_a_forward_walk_restarts_until_the_history_holds_still(setup) -> None:
    fake, client, agent_id = setup()
    replaced = _replaced_before_forward_reads(fake, agent_id, times=2)
    pages = list(client.agents.ref(agent_id).timeline.pages("after"))
    assert replaced() == 2
    assert pages[0].reset
    assert pages[0].stale_cursor
    assert dc.join_messages([e for page in pages for e in page.entries]) == ["v2"]


def test_a_forward_walk_gives_up_when_the_history_never_holds_still(setup) -> None:
    fake, client, agent_id = setup()
    replaced = _replaced_before_forward_reads(fake, agent_id, times=1000)
    walk = client.agents.ref(agent_id).timeline.pages("after")
    times = timeline_module.MAX_RESTARTS + 1
    with pytest.raises(dc.ProtocolError, match=f"the timeline of {agent_id} was reset {times} times in a row"):
        next(walk)
    assert replaced() == times


def test_a_silent_stream_ends_its_iteration(setup) -> None:
    _, client, agent_id = setup("selective")
    with client.agents.ref(agent_id).timeline.stream(timeout=0.05) as stream:
        stream.subscription.ready.result(5)
        assert list(stream) == []
        assert stream.next(timeout=0.6) is None  # one full poll interval, then the deadline


def test_a_stream_whose_subscription_fails_ends_after_the_error(setup) -> None:
    fake, client, agent_id = setup("capable")
    fake.fail_next(SET, "no timeline for you")
    with client.agents.ref(agent_id).timeline.stream(timeout=5) as stream:
        update = stream.next(timeout=5)
        assert update is not None
        assert update.type == "error"
        assert "no timeline for you" in update.event.error
        assert stream.next(timeout=5) is None  # ended: no wait


def test_close_ends_a_pulled_stream_with_client_closed(setup) -> None:
    _, client, agent_id = setup("broadcast")
    stream = client.agents.ref(agent_id).timeline.stream(timeout=5)
    stream.subscription.ready.result(5)
    client.close()

    def drain() -> None:  # the updates queued before the close come first
        while stream.next(timeout=5) is not None:
            pass

    with pytest.raises(dc.ClientClosed):
        drain()
    assert stream.next(timeout=5) is None
