"""Timeline subscriptions, local events and history reads, on every host kind; a forward walk
whose history is replaced while it restarts, and a pulled stream that ends by failure, by
``close()`` or by silence."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.api.agents import timeline as api_timeline
from daemon_client.testing import FakeDaemon, RecordingHandler
from daemon_client.testing.fake.engine.handlers import RequestContext

from ...conftest import KINDS
from ...helpers import session_frames as _frames

SET = "agent.timeline.set_subscription.request"


@pytest.fixture
def setup(fakes, make_client):
    def make(kind: str, **options: Any) -> tuple[FakeDaemon, dc.Client, str]:
        fake = fakes(kind)
        client = make_client(fake, **options)
        client.connect()
        agent_id = fake.agents.upsert(title="streamer")["id"]
        return fake, client, agent_id

    return make


@pytest.fixture
def with_history(setup):
    """``with_history(kind="capable")``: ``setup`` with three assistant rows in the agent's history."""

    def make(kind: str = "capable") -> tuple[FakeDaemon, dc.Client, str]:
        fake, client, agent_id = setup(kind)
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


def _rows(updates: list[dc.TimelineUpdate]) -> list[int]:
    return [u.seq for u in updates if u.type == "timeline" and u.seq is not None]


@pytest.mark.parametrize("kind", KINDS)
def test_ready_and_live_events(setup, kind: str) -> None:
    fake, client, agent_id = setup(kind)
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    sub = client.agents.ref(agent_id).timeline.subscribe(seen)
    ack = sub.ready.result(5)
    assert ack.subscription_id == sub.subscription_id
    assert ack.agent_ids == (agent_id,)
    sent = _frames(fake, SET)
    if kind == "capable":
        assert sent == [{"type": SET, "agentIds": [agent_id], "requestId": sent[0]["requestId"]}]
        assert not sub.subscription_id.startswith("legacy:")
    elif kind == "selective":
        assert [m["agentIds"] for m in sent] == [[agent_id]]
        assert sub.subscription_id.startswith("legacy:")
    else:
        assert sent == []
        assert sub.subscription_id.startswith("legacy:")
    fake.timeline.append(agent_id, {"type": "assistant_message", "text": "Hel"})
    fake.timeline.emit(agent_id, {"type": "turn_completed", "provider": "mock"})
    first, second = seen.wait_for(2)
    assert first.type == "timeline"
    assert isinstance(first.event, dc.TimelineEvent)
    assert first.event.item == dc.AssistantMessage(text="Hel")
    assert first.seq == 1
    assert first.epoch == fake.timeline.epoch(agent_id)
    assert first.subscription_id == sub.subscription_id
    assert isinstance(second.event, dc.TurnCompleted)
    assert second.seq is None


@pytest.mark.parametrize("kind", KINDS)
def test_other_agents_frames_are_not_delivered(setup, kind: str) -> None:
    fake, client, agent_id = setup(kind)
    other = fake.agents.upsert(title="other")["id"]
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    client.agents.ref(agent_id).timeline.subscribe(seen).ready.result(5)
    fake.timeline.append(other, {"type": "assistant_message", "text": "not for you"})
    fake.timeline.append(agent_id, {"type": "assistant_message", "text": "for you"})
    assert seen.wait_for(1)[0].event.item.text == "for you"
    client.ping()
    assert client.flush_callbacks()
    assert len(seen) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_two_handles_on_one_agent_and_release_of_one(setup, kind: str) -> None:
    fake, client, agent_id = setup(kind)
    timeline = client.agents.ref(agent_id).timeline
    first_seen, second_seen = RecordingHandler("first"), RecordingHandler("second")
    first, second = timeline.subscribe(first_seen), timeline.subscribe(second_seen)
    first.ready.result(5)
    second.ready.result(5)
    assert first.subscription_id != second.subscription_id
    fake.timeline.append(agent_id, {"type": "reasoning", "text": "hmm"})
    assert first_seen.wait_for(1)[0].subscription_id == first.subscription_id
    assert second_seen.wait_for(1)[0].subscription_id == second.subscription_id
    first.release()
    assert first.released
    if kind == "capable":
        assert _frames(fake, "subscription.release.request")[-1]["subscriptionId"] == first.subscription_id
    elif kind == "selective":
        assert [m["agentIds"] for m in _frames(fake, SET)] == [[agent_id]]  # still needed by the second
    fake.timeline.append(agent_id, {"type": "reasoning", "text": "more"})
    assert second_seen.wait_for(2)[1].event.item.text == "more"
    client.ping()
    assert client.flush_callbacks()
    assert len(first_seen) == 1
    second()  # calling releases without waiting
    if kind == "selective":
        second.release()  # waits for the teardown; harmless after the call
        assert [m["agentIds"] for m in _frames(fake, SET)] == [[agent_id], []]


@pytest.mark.parametrize("kind", KINDS)
def test_subscription_restored_after_reconnect(setup, kind: str) -> None:
    fake, client, agent_id = setup(kind)
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    sub = client.agents.ref(agent_id).timeline.subscribe(seen)
    sub.ready.result(5)
    fake.timeline.append(agent_id, {"type": "assistant_message", "text": "before"})
    seen.wait_for(1)
    old_id = sub.subscription_id
    fake.drop_connections()
    restored = seen.wait_for(predicate=lambda u: u.type == "subscription_restored", timeout=10)[0]
    assert restored.subscription_id == sub.subscription_id != old_id
    assert restored.agent_id == agent_id
    fake.timeline.append(agent_id, {"type": "assistant_message", "text": "after"})
    seen.wait_for(3)
    assert [u.type for u in seen.items] == ["timeline", "subscription_restored", "timeline"]
    assert seen.items[2].subscription_id == sub.subscription_id
    assert _frames(fake, "fetch_agent_timeline_request") == []  # nothing fetched, nothing replayed
    assert sub.ready.result(0).subscription_id == old_id  # ready stays as first resolved


@pytest.mark.parametrize("kind", KINDS)
def test_no_restored_event_on_first_establishment_even_before_connect(fakes, make_client, kind: str) -> None:
    fake = fakes(kind)
    agent_id = fake.agents.upsert(title="early")["id"]
    client = make_client(fake)
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    sub = client.agents.ref(agent_id).timeline.subscribe(seen)
    assert not sub.ready.done()
    client.connect()
    sub.ready.result(5)
    fake.timeline.append(agent_id, {"type": "todo", "items": [{"text": "a", "completed": False}]})
    assert seen.wait_for(1)[0].event.item.items[0].text == "a"
    assert [u.type for u in seen.items] == ["timeline"]


def test_replacement_carries_the_new_epoch_and_refetch_returns_it(setup) -> None:
    fake, client, agent_id = setup("capable")
    agent = client.agents.ref(agent_id)
    for n in range(3):
        fake.timeline.append(agent_id, {"type": "assistant_message", "text": f"{n}"})
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    agent.timeline.subscribe(seen).ready.result(5)
    old_epoch = agent.timeline.refetch().epoch
    fake.timeline.replace_history(agent_id)
    replacement = seen.wait_for(predicate=lambda u: u.type == "replacement")[0]
    assert isinstance(replacement.event, dc.Replacement)
    assert replacement.event.epoch == fake.timeline.epoch(agent_id) != old_epoch
    page = agent.timeline.refetch(limit=0)
    assert page.epoch == replacement.event.epoch
    stale = agent.timeline.refetch("after", dc.TimelineCursor(old_epoch, 1))
    assert stale.reset
    assert stale.stale_cursor


@pytest.mark.parametrize("kind", ["capable", "selective"])
def test_establishment_failure_gives_an_error_event_and_releases(setup, kind: str) -> None:
    fake, client, agent_id = setup(kind)
    fake.fail_next(SET, error="no timeline for you", code="handler_error")
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    sub = client.agents.ref(agent_id).timeline.subscribe(seen)
    with pytest.raises(dc.RpcError, match="no timeline for you"):
        sub.ready.result(5)
    error = seen.wait_for(1)[0]
    assert error.type == "error"
    assert "no timeline for you" in error.event.error
    assert sub.released
    fake.timeline.append(agent_id, {"type": "reasoning", "text": "x"})
    client.ping()
    assert client.flush_callbacks()
    assert len(seen) == 1
    retry = client.agents.ref(agent_id).timeline.subscribe(seen)  # a new subscription is the retry
    retry.ready.result(5)


@pytest.mark.parametrize("kind", KINDS)
def test_failed_refetch_leaves_live_delivery_running(setup, kind: str) -> None:
    fake, client, agent_id = setup(kind)
    agent = client.agents.ref(agent_id)
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    agent.timeline.subscribe(seen).ready.result(5)
    fake.fail_next("fetch_agent_timeline_request", error="history unavailable")
    with pytest.raises(dc.RpcError, match="history unavailable"):
        agent.timeline.refetch()
    fake.timeline.append(agent_id, {"type": "assistant_message", "text": "still here"})
    assert seen.wait_for(1)[0].event.item.text == "still here"
    with pytest.raises(dc.RpcError, match="Agent not found"):
        client.agents.ref("no-such-agent").timeline.refetch()


@pytest.mark.parametrize("projection", ["canonical", "projected"])
def test_paging_reads_a_long_history_exactly_once_each_way(setup, projection: str) -> None:
    fake, client, agent_id = setup("capable")
    for n in range(1000):
        fake.timeline.append(agent_id, {"type": "todo", "items": [{"text": str(n), "completed": False}]})
    timeline = client.agents.ref(agent_id).timeline
    backwards = [
        e.seq_start for page in timeline.pages("before", limit=100, projection=projection) for e in page.entries
    ]
    forwards = [e.seq_start for page in timeline.pages("after", limit=100, projection=projection) for e in page.entries]
    assert sorted(backwards) == list(range(1, 1001))
    assert forwards == list(range(1, 1001))
    assert len(set(backwards)) == 1000


def test_refetch_defaults_cursor_limits_and_validation(setup) -> None:
    fake, client, agent_id = setup("broadcast")
    for text in ["The answ", "er is 42.", ""]:
        fake.timeline.append(agent_id, {"type": "assistant_message", "text": text})
    timeline = client.agents.ref(agent_id).timeline
    tail = timeline.refetch(limit=0)
    assert len(tail.entries) == 1
    assert tail.entries[0].collapsed == ("assistant_merge",)
    assert dc.join_messages(tail.entries) == ["The answer is 42."]
    canonical = timeline.refetch(projection="canonical", limit=0)
    assert [e.seq_start for e in canonical.entries] == [1, 2, 3]
    after = timeline.refetch(cursor=dc.TimelineCursor(tail.epoch, 1))
    assert after.direction == "after"
    sent = _frames(fake, "fetch_agent_timeline_request")[-1]
    assert sent == {
        "type": "fetch_agent_timeline_request",
        "agentId": agent_id,
        "cursor": {"epoch": tail.epoch, "seq": 1},
        "requestId": sent["requestId"],
    }
    with pytest.raises(ValueError, match="direction"):
        timeline.refetch("sideways")
    with pytest.raises(ValueError, match="limit"):
        timeline.refetch(limit=-1)


def test_stream_pulls_updates_on_the_callers_thread(setup) -> None:
    fake, client, agent_id = setup("selective")
    timeline = client.agents.ref(agent_id).timeline
    with timeline.stream(timeout=5) as stream:
        stream.subscription.ready.result(5)
        fake.timeline.append(agent_id, {"type": "assistant_message", "text": "a"})
        fake.timeline.emit(agent_id, {"type": "turn_completed", "provider": "mock"})
        got = []
        for update in stream:
            got.append(update.type)
            if update.type == "turn_completed":
                break
    assert got == ["timeline", "turn_completed"]
    assert stream.subscription.released
    assert stream.next(timeout=0.05) is None


def test_close_fails_pending_ready_and_tells_live_handlers(fakes, make_client) -> None:
    fake = fakes("capable")
    agent_id = fake.agents.upsert(title="a")["id"]
    client = make_client(fake)
    pending = client.agents.ref(agent_id).timeline.subscribe(lambda u: None)
    client.close()
    with pytest.raises(dc.ClientClosed):
        pending.ready.result(5)
    other = make_client(fake)
    other.connect()
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    live = other.agents.ref(agent_id).timeline.subscribe(seen)
    live.ready.result(5)
    other.close()
    event = seen.wait_for(1)[0]
    assert event.type == "error"
    assert event.event.error == "Daemon client closed"
    assert _frames(fake, "subscription.release.request")[-1]["subscriptionId"] == live.subscription_id


@pytest.mark.parametrize("kind", KINDS)
def test_handlers_that_block_or_release_do_not_stall_others(setup, kind: str) -> None:
    fake, client, agent_id = setup(kind)
    timeline = client.agents.ref(agent_id).timeline
    released = threading.Event()
    holder: dict[str, dc.TimelineSubscription] = {}

    def release_self(update: dc.TimelineUpdate) -> None:
        holder["sub"].release()
        released.set()

    holder["sub"] = timeline.subscribe(release_self)
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    timeline.subscribe(seen).ready.result(5)
    holder["sub"].ready.result(5)
    fake.timeline.append(agent_id, {"type": "reasoning", "text": "1"})
    fake.timeline.append(agent_id, {"type": "reasoning", "text": "2"})
    assert released.wait(5)
    assert len(seen.wait_for(2)) == 2


@pytest.mark.parametrize("kind", ["selective", "broadcast"])
def test_handles_sharing_a_frame_each_get_it_even_when_one_handler_raises(setup, kind: str) -> None:
    """On hosts that send one frame for every handle of an agent, the handles are served by one
    job per frame; a handler that raises does not keep the frame from the others."""
    fake, client, agent_id = setup(kind, strict=False)
    timeline = client.agents.ref(agent_id).timeline
    recorders = [RecordingHandler[dc.TimelineUpdate](f"handle-{n}") for n in range(3)]

    def failing(update: dc.TimelineUpdate) -> None:
        raise RuntimeError("handler failed")

    handles = [timeline.subscribe(recorders[0]), timeline.subscribe(failing)]
    handles += [timeline.subscribe(recorder) for recorder in recorders[1:]]
    for handle in handles:
        handle.ready.result(5)
    for n in range(5):
        fake.timeline.append(agent_id, {"type": "reasoning", "text": f"row {n}"})
    for recorder in recorders:
        texts = [update.event.item.text for update in recorder.wait_for(5)]
        assert texts == [f"row {n}" for n in range(5)]
    for recorder, handle in zip(recorders, [handles[0], handles[2], handles[3]], strict=True):
        assert {update.subscription_id for update in recorder.items} == {handle.subscription_id}


@pytest.mark.parametrize("kind", KINDS)
def test_a_frame_that_cannot_be_read_is_skipped_and_the_stream_goes_on(setup, kind: str, monkeypatch, caplog) -> None:
    # The field-by-field reader is replaced where the (compiled or pure) one-step parser looks it
    # up, so the replacement takes effect in both builds; a message with an id takes that path.
    from daemon_client.protocol import stream_payload

    fake, client, agent_id = setup(kind)
    seen = RecordingHandler[dc.TimelineUpdate]("seen")
    handle = client.agents.ref(agent_id).timeline.subscribe(seen)
    handle.ready.result(5)
    real = stream_payload.parse_stream_fields
    attempts: list[str] = []

    def parse_or_fail(payload: Any, subscription_id: str | None) -> dc.TimelineUpdate:
        text = payload.get("event", {}).get("item", {}).get("text")
        attempts.append(text)
        if text == "unreadable":
            raise ValueError("unreadable payload")
        return real(payload, subscription_id)

    monkeypatch.setattr(stream_payload, "parse_stream_fields", parse_or_fail)
    fake.timeline.append(agent_id, {"type": "assistant_message", "text": "unreadable", "messageId": "m-1"})
    fake.timeline.append(agent_id, {"type": "assistant_message", "text": "fine", "messageId": "m-2"})
    assert [update.event.item.text for update in seen.wait_for(1)] == ["fine"]
    client.ping()
    assert client.flush_callbacks()
    assert len(seen) == 1
    assert attempts == ["unreadable", "fine"]
    assert "unreadable agent_stream frame skipped: unreadable payload" in caplog.text


# ------------------------------------------------------------------------------ reads and walks


def test_an_unknown_projection_or_a_forward_tail_walk_is_refused_before_sending(with_history) -> None:
    fake, client, agent_id = with_history()
    timeline = client.agents.ref(agent_id).timeline
    before = len(fake.received)
    with pytest.raises(ValueError, match="projection must be one of"):
        timeline.refetch(projection="sideways")
    with pytest.raises(ValueError, match="pages\\(\\) walks 'before'"):
        next(timeline.pages("tail"))
    assert len(fake.received) == before


@pytest.mark.parametrize("kind", KINDS)
def test_a_page_that_carries_its_agent_updates_the_handle(with_history, kind: str) -> None:
    _, client, agent_id = with_history(kind)
    agent = client.agents.ref(agent_id)
    page = agent.timeline.refetch(limit=0)
    assert dc.join_messages(page.entries) == ["row 0row 1row 2"]
    assert page.agent is not None
    assert agent.current() == page.agent


def test_a_page_without_its_agent_leaves_the_handle_as_it_was(with_history) -> None:
    fake, client, agent_id = with_history()
    raw = client.request({"type": "fetch_agent_timeline_request", "agentId": agent_id})
    assert raw.get("agent") is not None
    reply = {key: value for key, value in raw.items() if key != "requestId"}
    fake.on_request("fetch_agent_timeline_request", lambda ctx: ctx.reply({**reply, "agent": None}))
    agent = client.agents.ref(agent_id)
    page = agent.timeline.refetch(timeout=5)
    assert page.agent is None
    assert dc.join_messages(page.entries) == ["row 0row 1row 2"]
    assert agent.current() is None  # nothing read about the agent itself


def test_a_forward_walk_restarts_until_the_history_holds_still(with_history) -> None:
    fake, client, agent_id = with_history()
    replaced = _replaced_before_forward_reads(fake, agent_id, times=2)
    pages = list(client.agents.ref(agent_id).timeline.pages("after"))
    assert replaced() == 2
    assert pages[0].reset
    assert pages[0].stale_cursor
    assert dc.join_messages([e for page in pages for e in page.entries]) == ["v2"]


def test_a_forward_walk_gives_up_after_max_restarts_when_the_history_never_holds_still(with_history) -> None:
    fake, client, agent_id = with_history()
    replaced = _replaced_before_forward_reads(fake, agent_id, times=1000)
    walk = client.agents.ref(agent_id).timeline.pages("after")
    times = api_timeline.MAX_RESTARTS + 1
    with pytest.raises(dc.ProtocolError, match=f"the timeline of {agent_id} was reset {times} times in a row"):
        next(walk)
    assert replaced() == times


# ------------------------------------------------------------------------------ how a pulled stream ends


def test_a_pulled_stream_with_nothing_to_deliver_ends_at_its_deadline(with_history) -> None:
    _, client, agent_id = with_history("selective")
    with client.agents.ref(agent_id).timeline.stream(timeout=0.05) as stream:
        stream.subscription.ready.result(5)
        assert list(stream) == []
        assert stream.next(timeout=0.6) is None  # one full poll interval, then the deadline


def test_a_pulled_stream_whose_subscription_fails_ends_after_delivering_the_error(with_history) -> None:
    fake, client, agent_id = with_history("capable")
    fake.fail_next(SET, "no timeline for you")
    with client.agents.ref(agent_id).timeline.stream(timeout=5) as stream:
        update = stream.next(timeout=5)
        assert update is not None
        assert update.type == "error"
        assert "no timeline for you" in update.event.error
        assert stream.next(timeout=5) is None  # ended: no wait


def test_closing_the_client_ends_a_pulled_stream_with_client_closed_after_its_queued_updates(with_history) -> None:
    _, client, agent_id = with_history("broadcast")
    stream = client.agents.ref(agent_id).timeline.stream(timeout=5)
    stream.subscription.ready.result(5)
    client.close()

    def drain() -> None:  # the updates queued before the close come first
        while stream.next(timeout=5) is not None:
            pass

    with pytest.raises(dc.ClientClosed):
        drain()
    assert stream.next(timeout=5) is None
