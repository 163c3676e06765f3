"""Tests of the fake daemon's timelines and agent runs, driven with raw frames in memory.

Clients are :class:`~tests.raw_client.RawClient`s on a bare ``MemoryTransport``. "Nothing else
arrived" is checked with the client's barrier (:meth:`~tests.raw_client.RawClient.quiet`: the
agent's turn, if given, has ended and the fake has written every queued frame, then a ping whose
pong must come next). No test sleeps to synchronise; every wait is bounded.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

from daemon_client.protocol.hosts import HostKind
from daemon_client.testing.fake.daemon import FakeDaemon

from ..conftest import TRANSCRIPTS
from ..raw_client import Connect, Fake, Message, RawClient, connect_fixture

KINDS = list(HostKind)
SET = "agent.timeline.set_subscription.request"
SET_REPLY = "agent.timeline.set_subscription.response"
STALE_EPOCH = "00000000-0000-4000-8000-000000000000"

connect = connect_fixture()
"""``connect(fake, client_id="cid-1", **capabilities)``: a new socket past its hello."""


def stream_of(message: Message) -> dict[str, Any]:
    kind, payload = message
    assert kind == "agent_stream", message
    return payload


def is_stream(event_type: str) -> Callable[[str, dict[str, Any]], bool]:
    return lambda kind, payload: kind == "agent_stream" and payload["event"]["type"] == event_type


def observed_agent(raw: RawClient) -> tuple[str, str | None]:
    """A new agent whose stream ``raw`` receives on any host kind: (agent id, capable tag)."""
    agent_id: str = raw.fake.agents.upsert()["id"]
    if raw.fake.host_kind is HostKind.BROADCAST:
        return agent_id, None
    _, ack = raw.request(SET, agentIds=[agent_id])
    return agent_id, ack.get("subscriptionId")


def hold_a_turn(raw: RawClient, agent_id: str) -> None:
    """Send "please hold" (the default turn, paused after one chunk) and read up to that chunk."""
    raw.call("send_agent_message_request", agentId=agent_id, text="please hold", messageId="m-1")
    raw.until(lambda k, p: k == "agent_stream" and p["event"].get("item", {}).get("type") == "reasoning")


def events(messages: list[Message]) -> list[str]:
    """Compact trace: ``update:<status>``, ``<event type>[:<item type>]`` or the message type."""
    out = []
    for kind, payload in messages:
        if kind == "agent_update":
            out.append(f"update:{payload['agent']['status']}" if payload["kind"] == "upsert" else "update:remove")
        elif kind == "agent_stream":
            event = payload["event"]
            out.append(f"timeline:{event['item']['type']}" if event["type"] == "timeline" else event["type"])
        else:
            out.append(kind)
    return out


# -- live delivery per host kind ---------------------------------------------------------------


def test_frames_carry_seq_and_epoch_only_on_timeline_rows(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.BROADCAST)
    raw = connect(fake)
    agent = fake.agents.upsert()["id"]
    assert fake.timeline.append(agent, {"type": "user_message", "text": "hi"}) == 1
    fake.timeline.emit(agent, {"type": "turn_started"})
    assert fake.timeline.append(agent, {"type": "assistant_message", "text": "yo"}) == 2
    row, turn, second = (stream_of(raw.message()) for _ in range(3))
    epoch = fake.timeline.epoch(agent)
    assert list(row) == ["agentId", "event", "timestamp", "seq", "epoch"]  # the recorded key order
    assert row["event"] == {"type": "timeline", "provider": "mock", "item": {"type": "user_message", "text": "hi"}}
    assert (row["seq"], row["epoch"], second["seq"], second["epoch"]) == (1, epoch, 2, epoch)
    assert turn == {
        "agentId": agent,
        "event": {"type": "turn_started", "provider": "mock"},
        "timestamp": turn["timestamp"],
    }
    assert [r["seq"] for r in fake.timeline.rows(agent)] == [1, 2]
    assert fake.timeline.rows(agent)[0] == {
        "provider": "mock",
        "item": {"type": "user_message", "text": "hi"},
        "timestamp": row["timestamp"],
        "seq": 1,
        "epoch": epoch,
    }
    raw.quiet()


def test_capable_subscriptions_are_independent_and_tagged(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    a, b, bystander = connect(fake, "a"), connect(fake, "b"), connect(fake, "z")
    agent, other = fake.agents.upsert()["id"], fake.agents.upsert()["id"]
    _, first = a.request(SET, agentIds=[agent])
    _, second = a.request(SET, agentIds=[agent])
    _, third = b.request(SET, agentIds=[agent, other])
    assert first["agentIds"] == [agent]
    assert first["subscriptionId"] != second["subscriptionId"]
    assert [(s.id, s.agent_ids, s.owner) for s in fake.timeline.subscriptions()] == [
        (first["subscriptionId"], (agent,), a.connection),
        (second["subscriptionId"], (agent,), a.connection),
        (third["subscriptionId"], tuple(sorted([agent, other])), b.connection),
    ]
    fake.timeline.append(agent, {"type": "reasoning", "text": "x"})
    tags = {stream_of(a.message())["subscriptionId"], stream_of(a.message())["subscriptionId"]}
    assert tags == {first["subscriptionId"], second["subscriptionId"]}  # two subscriptions, two copies
    copy = stream_of(b.message())
    assert list(copy)[:2] == ["subscriptionId", "agentId"]
    assert copy["subscriptionId"] == third["subscriptionId"]
    fake.timeline.emit(other, {"type": "turn_started"})
    assert stream_of(b.message())["agentId"] == other
    for raw in (a, b, bystander):
        raw.quiet()
    # release one subscription: its copies stop; the other keeps flowing
    _, released = a.request("subscription.release.request", subscriptionId=first["subscriptionId"])
    assert released["subscriptionId"] == first["subscriptionId"]
    fake.timeline.append(agent, {"type": "reasoning", "text": "y"})
    assert stream_of(a.message())["subscriptionId"] == second["subscriptionId"]
    assert stream_of(b.message())["subscriptionId"] == third["subscriptionId"]
    a.quiet()
    # the end of the socket releases what it owned
    b.close()
    assert [s.id for s in fake.timeline.subscriptions()] == [second["subscriptionId"]]


def test_selective_union_is_per_session_and_outlives_a_socket(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.SELECTIVE)
    one, two, stranger = connect(fake, "same"), connect(fake, "same"), connect(fake, "other")
    agent, other = fake.agents.upsert()["id"], fake.agents.upsert()["id"]
    request_id = one.call(SET, agentIds=[agent, other])
    for raw in (one, two):  # legacy replies go to every socket of the session
        assert raw.message() == (
            SET_REPLY,
            {"requestId": request_id, "agentIds": [agent, other]},
        )
    (record,) = fake.timeline.subscriptions()
    assert (record.id, record.agent_ids, record.owner) == (None, tuple(sorted([agent, other])), fake.sessions["same"])
    fake.timeline.append(agent, {"type": "todo", "items": []})
    for raw in (one, two):
        frame = stream_of(raw.message())
        assert "subscriptionId" not in frame
        assert frame["agentId"] == agent
    stranger.quiet()
    # set-replace: only the new union is delivered
    one.call(SET, agentIds=[other])
    two.message()
    one.message()
    fake.timeline.append(agent, {"type": "todo", "items": []})
    fake.timeline.append(other, {"type": "todo", "items": []})
    assert stream_of(one.message())["agentId"] == other
    assert stream_of(two.message())["agentId"] == other
    # the union survives the loss of a socket, and of every socket while the session lives
    one.close()
    fake.timeline.append(other, {"type": "todo", "items": []})
    assert stream_of(two.message())["agentId"] == other
    two.close()
    again = connect(fake, "same")
    fake.timeline.append(other, {"type": "todo", "items": []})
    assert stream_of(again.message())["seq"] == 3
    # an empty union ends delivery and the record
    again.request(SET, agentIds=[])
    fake.timeline.append(other, {"type": "todo", "items": []})
    again.quiet()
    assert fake.timeline.subscriptions() == []


def test_broadcast_sends_every_stream_to_every_socket(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.BROADCAST)
    a, b = connect(fake, "a"), connect(fake, "b")
    agent = fake.agents.upsert()["id"]
    kind, error = a.request(SET, agentIds=[agent])
    assert (kind, error["code"], error["error"]) == ("rpc_error", "unknown_schema", "Unknown request schema")
    fake.timeline.append(agent, {"type": "reasoning", "text": "x"})
    fake.timeline.emit(agent, {"type": "attention_required", "reason": "finished", "shouldNotify": False})
    for raw in (a, b):
        assert stream_of(raw.message())["seq"] == 1
        frame = stream_of(raw.message())
        assert "subscriptionId" not in frame
        assert frame["event"]["type"] == "attention_required"
        raw.quiet()
    assert fake.timeline.subscriptions() == []


@pytest.mark.parametrize("kind", [HostKind.CAPABLE, HostKind.SELECTIVE])
def test_fault_injection_on_the_membership_request(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    raw = connect(fake)
    agent = fake.agents.upsert()["id"]
    fake.fail_next(SET, error="no timeline for you", code="handler_error")
    kind_, error = raw.request(SET, agentIds=[agent])
    assert (kind_, error["error"], error["code"]) == ("rpc_error", "no timeline for you", "handler_error")
    fake.ignore(SET)
    raw.call(SET, agentIds=[agent])
    raw.quiet()
    assert fake.timeline.subscriptions() == []
    fake.ignore(SET, False)
    kind_, _ = raw.request(SET, agentIds=["not-a-list-entry", 3])
    assert kind_ == "rpc_error"
    assert raw.request(SET, agentIds=[agent])[0] == SET_REPLY


@pytest.mark.parametrize("kind", KINDS)
def test_replacement(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    raw = connect(fake)
    agent, tag = observed_agent(raw)
    for text in ("a", "b", "c"):
        fake.timeline.append(agent, {"type": "assistant_message", "text": text})
    for _ in range(3):
        raw.message()
    old = fake.timeline.epoch(agent)
    new = fake.timeline.replace_history(agent, [{"type": "user_message", "text": "fresh"}])
    assert new != old
    assert fake.timeline.epoch(agent) == new
    if kind is HostKind.CAPABLE:
        assert raw.message() == ("agent.timeline.replacement", {"subscriptionId": tag, "agentId": agent, "epoch": new})
    raw.quiet()  # no replacement frame on older hosts
    assert [(r["seq"], r["epoch"], r["item"]["text"]) for r in fake.timeline.rows(agent)] == [(1, new, "fresh")]
    fake.timeline.append(agent, {"type": "assistant_message", "text": "d"})
    assert (stream_of(raw.message())["seq"], fake.timeline.rows(agent)[-1]["epoch"]) == (2, new)
    # a cursor of the old epoch is stale; the default replacement renumbers the same rows
    _, page = raw.request("fetch_agent_timeline_request", agentId=agent, cursor={"epoch": old, "seq": 3})
    assert (page["reset"], page["staleCursor"], page["epoch"], page["direction"]) == (True, True, new, "after")
    newest = fake.timeline.replace_history(agent)
    assert [(r["seq"], r["epoch"]) for r in fake.timeline.rows(agent)] == [(1, newest), (2, newest)]


# -- reads ---------------------------------------------------------------------------------------


def _recorded_rows() -> list[dict[str, Any]]:
    """The 352 rows of agent 709fadbd as streamed live in transcripts 04 and 05."""
    rows: dict[int, dict[str, Any]] = {}
    for name in ("04-create-and-run.jsonl", "05-send-message.jsonl"):
        for line in (TRANSCRIPTS / name).read_text().splitlines():
            record = json.loads(line)
            message = (record.get("frame") or {}).get("message") or {}
            if record["dir"] == "in" and message.get("type") == "agent_stream" and "seq" in message["payload"]:
                rows[message["payload"]["seq"]] = message["payload"]["event"]["item"]
    assert sorted(rows) == list(range(1, 353))
    return [rows[seq] for seq in sorted(rows)]


def _shape(payload: dict[str, Any], epochs: dict[str, str]) -> dict[str, Any]:
    """A response without volatile fields, with the fake's epoch mapped back to the recorded one."""

    def cursor(value: dict[str, Any] | None) -> Any:
        return None if value is None else {"epoch": epochs.get(value["epoch"], value["epoch"]), "seq": value["seq"]}

    shaped = {k: v for k, v in payload.items() if k not in ("requestId", "agent", "agentId")}
    shaped["epoch"] = epochs.get(payload["epoch"], payload["epoch"])
    shaped["startCursor"], shaped["endCursor"] = cursor(payload["startCursor"]), cursor(payload["endCursor"])
    shaped["entries"] = [{k: v for k, v in e.items() if k != "timestamp"} for e in payload["entries"]]
    return shaped


def test_reads_match_transcript_06(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.BROADCAST)
    agent = fake.agents.upsert()["id"]
    for item in _recorded_rows():
        fake.timeline.append(agent, item)
    raw = connect(fake)  # the hello does not advertise reasoning_merge_enum, as in the transcript
    raw.quiet()  # nothing was streamed before the socket existed
    recorded_epoch = "09d20d03-8401-4b34-a3b1-e9c9d79f9e06"
    epochs = {fake.timeline.epoch(agent): recorded_epoch}
    lines = (TRANSCRIPTS / "06-timeline-fetch.jsonl").read_text().splitlines()
    compared = 0
    for number, line in enumerate(lines[:-1]):
        record = json.loads(line)
        message = (record.get("frame") or {}).get("message") or {}
        if record["dir"] != "out" or message.get("type") != "fetch_agent_timeline_request":
            continue
        request = {k: v for k, v in message.items() if k not in ("type", "requestId", "agentId")}
        if "cursor" in request and request["cursor"]["epoch"] == recorded_epoch:
            request["cursor"] = {**request["cursor"], "epoch": fake.timeline.epoch(agent)}
        kind, payload = raw.request("fetch_agent_timeline_request", agentId=agent, **request)
        expected = json.loads(lines[number + 1])["frame"]["message"]["payload"]
        assert kind == "fetch_agent_timeline_response"
        assert list(payload) == list(expected)
        assert _shape(payload, epochs) == _shape(expected, {}), f"line {number + 1}"
        assert payload["agent"] == fake.agents.get(agent)
        compared += 1
    assert compared == 9


def _agent_with_rows(fake: FakeDaemon) -> str:
    agent = fake.agents.upsert()["id"]
    items = [
        {"type": "user_message", "text": "go", "messageId": "m1"},  # 1
        {"type": "reasoning", "text": "think "},  # 2
        {"type": "reasoning", "text": "hard"},  # 3
        {
            "type": "tool_call",
            "callId": "c1",
            "name": "read",
            "detail": {"type": "read", "filePath": "a"},
            "status": "running",
            "error": None,
        },
        {"type": "assistant_message", "text": "Rea"},  # 5
        {"type": "assistant_message", "text": "ding"},  # 6
        {
            "type": "tool_call",
            "callId": "c1",
            "name": "read",
            "detail": {"type": "read", "filePath": "a", "content": "x"},
            "status": "completed",
            "error": None,
        },
        {"type": "assistant_message", "text": "The answ"},  # 8
        {"type": "assistant_message", "text": "er is 42."},  # 9
    ]
    for item in items:
        fake.timeline.append(agent, item)
    return agent


@pytest.mark.parametrize("enum", [False, True])
def test_projection(fakes: Fake, connect: Connect, enum: bool) -> None:
    fake = fakes(HostKind.CAPABLE)
    agent = _agent_with_rows(fake)
    raw = connect(fake, reasoning_merge_enum=enum)
    _, page = raw.request("fetch_agent_timeline_request", agentId=agent)
    assert (page["direction"], page["projection"], page["error"]) == ("tail", "projected", None)
    spans = [(e["seqStart"], e["seqEnd"], e["sourceSeqRanges"], e["collapsed"]) for e in page["entries"]]
    assert spans == [
        (1, 1, [{"startSeq": 1, "endSeq": 1}], []),
        (2, 3, [{"startSeq": 2, "endSeq": 3}], ["reasoning_merge"] if enum else []),
        (4, 7, [{"startSeq": 4, "endSeq": 4}, {"startSeq": 7, "endSeq": 7}], ["tool_lifecycle"]),
        (5, 6, [{"startSeq": 5, "endSeq": 6}], ["assistant_merge"]),
        (8, 9, [{"startSeq": 8, "endSeq": 9}], ["assistant_merge"]),
    ]
    items = [e["item"] for e in page["entries"]]
    assert items[1] == {"type": "reasoning", "text": "think hard"}
    assert items[2]["status"] == "completed"
    assert items[2]["detail"]["content"] == "x"
    assert items[4] == {"type": "assistant_message", "text": "The answer is 42."}
    assert page["entries"][2]["timestamp"] == fake.timeline.rows(agent)[3]["timestamp"]  # the first row's
    _, canonical = raw.request("fetch_agent_timeline_request", agentId=agent, projection="canonical", limit=0)
    assert [(e["seqStart"], e["seqEnd"], e["collapsed"]) for e in canonical["entries"]] == [
        (n, n, []) for n in range(1, 10)
    ]
    assert [e["item"] for e in canonical["entries"]] == [r["item"] for r in fake.timeline.rows(agent)]


def test_directions_defaults_and_limits(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.SELECTIVE)
    agent = fake.agents.upsert()["id"]
    for n in range(250):
        fake.timeline.append(agent, {"type": "todo", "items": [{"text": str(n), "completed": False}]})
    raw = connect(fake)
    epoch = fake.timeline.epoch(agent)

    def read(**fields: Any) -> dict[str, Any]:
        kind, payload = raw.request("fetch_agent_timeline_request", agentId=agent, **fields)
        assert kind == "fetch_agent_timeline_response"
        assert payload["error"] is None
        return payload

    def seqs(page: dict[str, Any]) -> list[int]:
        return [e["seqStart"] for e in page["entries"]]

    tail = read()
    assert seqs(tail) == list(range(51, 251))  # tail, 200 rows by default
    assert (tail["hasOlder"], tail["hasNewer"], tail["window"]) == (
        True,
        False,
        {"minSeq": 1, "maxSeq": 250, "nextSeq": 251},
    )
    assert (tail["startCursor"], tail["endCursor"]) == ({"epoch": epoch, "seq": 51}, {"epoch": epoch, "seq": 250})
    assert seqs(read(direction="tail", limit=0)) == list(range(1, 251))
    before = read(direction="before", cursor={"epoch": epoch, "seq": 51})
    assert (seqs(before), before["hasOlder"], before["hasNewer"]) == (list(range(1, 51)), False, True)
    assert seqs(read(direction="before", limit=3)) == [248, 249, 250]  # no cursor: the newest rows
    after = read(cursor={"epoch": epoch, "seq": 10})  # direction defaults to after, limit to 0
    assert (after["direction"], seqs(after), after["hasOlder"]) == ("after", list(range(11, 251)), True)
    assert seqs(read(direction="after", cursor={"epoch": epoch, "seq": 10}, limit=2)) == [11, 12]
    empty = read(direction="after", cursor={"epoch": epoch, "seq": 250})
    assert (empty["entries"], empty["startCursor"], empty["hasOlder"], empty["hasNewer"]) == ([], None, True, False)
    nothing = read(direction="before", cursor={"epoch": epoch, "seq": 1})
    assert (nothing["entries"], nothing["hasOlder"], nothing["hasNewer"]) == ([], False, True)
    stale = read(direction="after", cursor={"epoch": STALE_EPOCH, "seq": 3}, limit=5)
    assert (stale["reset"], stale["staleCursor"], stale["gap"]) == (True, True, False)
    assert seqs(stale) == [246, 247, 248, 249, 250]
    # trimming makes an old after-cursor a gap; a cursor right before the window is not one
    fake.timeline.trim(agent, keep_last=100)
    assert read(limit=0)["window"] == {"minSeq": 151, "maxSeq": 250, "nextSeq": 251}
    gap = read(cursor={"epoch": epoch, "seq": 100})
    assert (gap["reset"], gap["gap"], gap["staleCursor"], seqs(gap)) == (True, True, False, list(range(151, 251)))
    edge = read(cursor={"epoch": epoch, "seq": 150}, limit=1)
    assert (edge["reset"], edge["gap"], seqs(edge)) == (False, False, [151])
    bad = raw.request("fetch_agent_timeline_request", agentId=agent, direction="sideways")
    assert bad[0] == "rpc_error"


def test_canonical_tail_counts_projected_entries(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    agent = _agent_with_rows(fake)
    raw = connect(fake)
    _, page = raw.request("fetch_agent_timeline_request", agentId=agent, projection="canonical", limit=2)
    # the last two projected entries are 5-6 (assistant) and 8-9 (assistant); the window starts at 5
    assert [e["seqStart"] for e in page["entries"]] == [5, 6, 7, 8, 9]
    assert (page["hasOlder"], page["hasNewer"]) == (True, False)
    _, page = raw.request("fetch_agent_timeline_request", agentId=agent, projection="canonical", limit=1)
    assert [e["seqStart"] for e in page["entries"]] == [8, 9]  # never starts inside a message
    _, page = raw.request(
        "fetch_agent_timeline_request",
        agentId=agent,
        direction="before",
        projection="canonical",
        cursor={"epoch": fake.timeline.epoch(agent), "seq": 9},
        limit=2,
    )
    assert [e["seqStart"] for e in page["entries"]] == [7, 8]  # other modes count rows


def test_unknown_agent_and_empty_timeline(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.BROADCAST)
    raw = connect(fake)
    _, page = raw.request("fetch_agent_timeline_request", agentId="zz9")
    assert page == {
        "requestId": page["requestId"],
        "agentId": "zz9",
        "agent": None,
        "direction": "tail",
        "projection": "projected",
        "epoch": "",
        "reset": False,
        "staleCursor": False,
        "gap": False,
        "window": {"minSeq": 0, "maxSeq": 0, "nextSeq": 0},
        "startCursor": None,
        "endCursor": None,
        "hasOlder": False,
        "hasNewer": False,
        "entries": [],
        "error": "Agent not found: zz9",
    }
    agent = fake.agents.upsert()["id"]
    _, page = raw.request("fetch_agent_timeline_request", agentId=agent, limit=0)
    assert (page["entries"], page["window"], page["epoch"]) == (
        [],
        {"minSeq": 0, "maxSeq": 0, "nextSeq": 1},
        fake.timeline.epoch(agent),
    )


@pytest.mark.parametrize("projection", ["canonical", "projected"])
def test_paging_both_ways_over_1000_rows(fakes: Fake, connect: Connect, projection: str) -> None:
    fake = fakes(HostKind.CAPABLE)
    agent = fake.agents.upsert()["id"]
    kinds = ["assistant_message", "assistant_message", "reasoning", "todo", "assistant_message", "tool_call"]
    for n in range(1037):
        kind = kinds[n % len(kinds)]
        item: dict[str, Any] = {"type": kind, "text": f"{n} "}
        if kind == "tool_call":
            item = {
                "type": kind,
                "callId": f"c{n // 12}",
                "name": "x",
                "detail": {"type": "unknown"},
                "status": "running",
                "error": None,
            }
        fake.timeline.append(agent, item)
    raw = connect(fake)

    def covered(page: dict[str, Any]) -> list[int]:
        return [s for e in page["entries"] for r in e["sourceSeqRanges"] for s in range(r["startSeq"], r["endSeq"] + 1)]

    def read(direction: str, limit: int, **cursor: Any) -> dict[str, Any]:
        fields = {"direction": direction, "limit": limit, "projection": projection, **cursor}
        return raw.request("fetch_agent_timeline_request", agentId=agent, **fields)[1]

    # newest to oldest with before + startCursor
    page = read("tail", 50)
    backwards = covered(page)
    while page["hasOlder"]:
        page = read("before", 50, cursor=page["startCursor"])
        backwards = covered(page) + backwards
    assert sorted(backwards) == list(range(1, 1038))
    # oldest to newest with after + endCursor
    page = read("after", 64, cursor={"epoch": fake.timeline.epoch(agent), "seq": 0})
    forwards = covered(page)
    while page["hasNewer"]:
        page = read("after", 64, cursor=page["endCursor"])
        forwards += covered(page)
    assert sorted(forwards) == list(range(1, 1038))
    assert len(forwards) == len(set(forwards)) == len(backwards)


# -- runs ----------------------------------------------------------------------------------------


def test_create_and_run_as_recorded_on_broadcast(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.BROADCAST)
    raw = connect(fake)
    raw.request("fetch_agents_request", subscribe={})
    request_id = raw.call(
        "create_agent_request",
        config={
            "provider": "mock",
            "cwd": "/home/dev/projects/demo",
            "model": "ten-second-stream",
            "modeId": "load-test",
        },
        labels={"fixture": "x"},
        initialPrompt="Walk me through it, please hold.",
        clientMessageId="msg-1",
    )
    (_, created), before = raw.reply(request_id)
    assert events(before) == ["update:initializing", "update:initializing", "update:idle", "timeline:user_message"]
    assert created["status"] == "agent_created"
    assert created["agent"]["status"] == "idle"
    agent_id = created["agentId"]
    assert created["agent"]["title"] == "Walk me through it, please hold."
    assert created["agent"]["labels"] == {"fixture": "x"}
    assert before[-1][1]["event"]["item"] == {
        "type": "user_message",
        "text": "Walk me through it, please hold.",
        "messageId": "msg-1",
    }
    wait_id = raw.call("wait_for_finish_request", agentId=agent_id, timeoutMs=60000)
    started = raw.reply(raw.call("ping"))[1]  # the wait is registered once its pong is back
    assert events(started) == ["update:running", "turn_started", "timeline:reasoning"]
    assert fake.runs.finish(agent_id)  # "please hold": the default turn, paused after one chunk
    (_, finished), rest = raw.reply(wait_id)
    turn = started + rest
    assert events(rest) == [
        "timeline:reasoning",
        "timeline:tool_call",
        "timeline:tool_call",
        "timeline:assistant_message",
        "timeline:assistant_message",
        "turn_completed",
        "attention_required",
    ]
    assert all(
        "seq" not in p and "turnId" not in p["event"]
        for k, p in turn
        if k == "agent_stream" and p["event"]["type"] != "timeline"
    )
    assert [p["seq"] for k, p in turn if k == "agent_stream" and "seq" in p] == list(range(2, 8))
    calls = [
        p["event"]["item"]
        for k, p in turn
        if k == "agent_stream" and p["event"]["type"] == "timeline" and p["event"]["item"]["type"] == "tool_call"
    ]
    assert [c["status"] for c in calls] == ["running", "completed"]
    assert calls[0]["callId"] == calls[1]["callId"]
    assert turn[-2][1]["event"]["usage"]["outputTokens"] > 0
    assert turn[-1][1]["event"]["reason"] == "finished"
    assert turn[-1][1]["event"]["shouldNotify"] is False
    assert (finished["status"], finished["error"], finished["lastMessage"]) == ("idle", None, "The answer is 42.")
    assert finished["final"]["status"] == "idle"
    assert finished["final"]["requiresAttention"] is True
    kind, update = raw.message()  # the final idle upsert comes after the wait reply
    assert (kind, update["agent"]["status"], update["agent"]) == ("agent_update", "idle", finished["final"])
    raw.quiet(agent_id)
    # a second turn does not raise attention again (the flag is already on)
    raw.call("send_agent_message_request", agentId=agent_id, text="emit 2 agent stream updates", messageId="m2")
    (_, idle), turn = raw.until(lambda k, p: k == "agent_update" and p["agent"]["status"] == "idle")
    assert events(turn) == [
        "timeline:user_message",
        "send_agent_message_response",
        "update:running",
        "turn_started",
        "timeline:todo",
        "timeline:todo",
        "turn_completed",
    ]
    assert turn[4][1]["event"]["item"] == {"type": "todo", "items": [{"text": "stress-update-0", "completed": True}]}
    assert idle["agent"]["lastUsage"]["outputTokens"] == 2
    raw.quiet(agent_id)


@pytest.mark.parametrize("kind", KINDS)
def test_create_without_prompt_and_failures(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    raw = connect(fake)
    _, created = raw.request("create_agent_request", config={"provider": "claude", "cwd": "/w", "title": " T "})
    assert (created["status"], created["agent"]["provider"], created["agent"]["title"]) == (
        "agent_created",
        "claude",
        "T",
    )
    assert fake.agents.get(created["agentId"])["status"] == "idle"
    assert not fake.runs.is_running(created["agentId"])
    assert fake.timeline.rows(created["agentId"]) == []
    _, failed = raw.request("create_agent_request", config={"provider": "codex", "cwd": "/w"})
    assert (failed["status"], failed["error"]) == ("agent_create_failed", "Provider 'codex' is not available")
    assert ("errorCode" in failed) is (kind is not HostKind.BROADCAST)
    fake.runs.unavailable_providers.add("claude")
    assert raw.request("create_agent_request", config={"provider": "claude", "cwd": "/w"})[1]["status"] == (
        "agent_create_failed"
    )
    assert raw.request("create_agent_request", config={"cwd": "/w"})[0] == "rpc_error"
    raw.quiet()


def test_lifecycle_create_is_idempotent(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    raw = connect(fake)
    body = {"idempotencyKey": "k-1", "subscribe": True, "config": {"provider": "mock", "cwd": "/w"}}
    _, first = raw.request("agent.create.request", **body)
    creation = first["creation"]
    assert (first["error"], creation["phase"], creation["idempotencyKey"], creation["error"]) == (
        None,
        "agent_ready",
        "k-1",
        None,
    )
    assert creation["agentId"] == first["agent"]["id"]
    assert creation["workspaceId"] == first["agent"]["workspaceId"]
    _, again = raw.request("agent.create.request", **body)
    assert again["agent"]["id"] == first["agent"]["id"]
    assert again["creation"] == creation
    assert len(fake.agents.all()) == 1
    kind, conflict = raw.request("agent.create.request", **{**body, "config": {"provider": "mock", "cwd": "/x"}})
    assert (kind, conflict["code"]) == ("rpc_error", "agent_request_key_conflict")
    _, recovered = raw.request("creation.subscribe.request", kind="agent", idempotencyKey="k-1")
    assert recovered["snapshot"] == creation
    request_id = raw.call(
        "agent.create.request",
        idempotencyKey="k-2",
        config={"provider": "mock", "cwd": "/w"},
        initialPrompt="emit 1 agent stream updates",
    )
    (_, prompted), _ = raw.reply(request_id)
    assert prompted["creation"]["phase"] == "prompt_started"
    raw.quiet(prompted["agent"]["id"])
    _, failed = raw.request("agent.create.request", idempotencyKey="k-3", config={"provider": "pi", "cwd": "/w"})
    assert (failed["agent"], failed["creation"]["phase"]) == (None, "failed")
    assert failed["error"]


@pytest.mark.parametrize("kind", KINDS)
def test_send_orders_the_row_before_the_reply(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    raw = connect(fake)
    agent, tag = observed_agent(raw)
    request_id = raw.call(
        "send_agent_message_request", agentId=agent, text="emit 1 agent stream updates", messageId="m-1"
    )
    row = stream_of(raw.message())
    assert row["event"]["item"] == {"type": "user_message", "text": "emit 1 agent stream updates", "messageId": "m-1"}
    assert row.get("subscriptionId") == tag
    assert raw.message() == (
        "send_agent_message_response",
        {"requestId": request_id, "agentId": agent, "accepted": True, "error": None},
    )
    (_, done), turn = raw.until(is_stream("turn_completed"))
    assert events(turn) == ["turn_started", "timeline:todo"]
    if kind is HostKind.CAPABLE:  # current daemons add turnId
        assert turn[0][1]["event"]["turnId"] == done["event"]["turnId"] == row["event"]["turnId"]
    assert stream_of(raw.message())["event"]["type"] == "attention_required"
    assert raw.settle(agent) == []
    _, unknown = raw.request("send_agent_message_request", agentId="nope", text="hi", messageId="m")
    assert unknown == {
        "requestId": unknown["requestId"],
        "agentId": "nope",
        "accepted": False,
        "error": "Agent not found: nope",
    }


@pytest.mark.parametrize("kind", KINDS)
def test_send_interrupts_a_running_turn(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    raw = connect(fake)
    agent, _ = observed_agent(raw)
    hold_a_turn(raw, agent)
    raw.call("send_agent_message_request", agentId=agent, text="emit 1 agent stream updates", messageId="m-2")
    (_, canceled), _ = raw.until(is_stream("turn_canceled"))
    assert canceled["event"]["reason"] == "Interrupted"
    (_, row), _ = raw.until(is_stream("timeline"))
    assert row["event"]["item"]["messageId"] == "m-2"
    raw.until(is_stream("turn_completed"))
    fake.runs.wait_until_idle(agent)


@pytest.mark.parametrize("kind", KINDS)
def test_wait_for_finish(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    raw = connect(fake)
    agent = fake.agents.upsert()["id"]
    _, unknown = raw.request("wait_for_finish_request", agentId="ghost")
    assert unknown == {
        "requestId": unknown["requestId"],
        "status": "error",
        "final": None,
        "error": "Agent not found: ghost",
        "lastMessage": None,
    }
    _, idle = raw.request("wait_for_finish_request", agentId=agent)  # idle, nothing pending: at once
    assert (idle["status"], idle["final"]["id"], idle["lastMessage"]) == ("idle", agent, None)
    # error
    raw.call("send_agent_message_request", agentId=agent, text="please fail", messageId="m-1")
    wait_id = raw.call("wait_for_finish_request", agentId=agent, timeoutMs=30000)
    (_, failed), _ = raw.reply(wait_id)
    assert (failed["status"], failed["error"], failed["final"]["status"]) == ("error", "Simulated failure", "error")
    raw.settle(agent)
    assert raw.ask("wait_for_finish_request", agentId=agent)["status"] == "error"
    # timeout: the agent keeps running until released
    raw.call("send_agent_message_request", agentId=agent, text="please hold", messageId="m-2")
    wait_id = raw.call("wait_for_finish_request", agentId=agent, timeoutMs=50)
    (_, timed_out), _ = raw.reply(wait_id)
    assert (timed_out["status"], timed_out["error"], timed_out["lastMessage"]) == ("timeout", None, None)
    assert fake.runs.is_running(agent)
    assert timed_out["final"]["id"] == agent
    wait_id = raw.call("wait_for_finish_request", agentId=agent)
    assert fake.runs.finish(agent)
    (_, released), _ = raw.reply(wait_id)
    assert (released["status"], released["lastMessage"]) == ("idle", "The answer is 42.")
    raw.settle(agent)
    assert raw.ask("wait_for_finish_request", agentId=agent)["lastMessage"] == "The answer is 42."
    # a pending permission answers at once
    raw.call("send_agent_message_request", agentId=agent, text="ask permission", messageId="m-3")
    wait_id = raw.call("wait_for_finish_request", agentId=agent)
    (_, asked), _ = raw.reply(wait_id)
    assert asked["status"] == "permission"
    request = fake.runs.pending_permission(agent)
    assert request is not None
    again = raw.ask("wait_for_finish_request", agentId=agent)
    assert again["status"] == "permission"
    assert again["final"]["pendingPermissions"] == [request]
    fake.runs.cancel(agent)
    raw.settle(agent)


@pytest.mark.parametrize("kind", KINDS)
def test_cancel(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    raw = connect(fake)
    agent, _ = observed_agent(raw)
    _, idle = raw.request("cancel_agent_request", agentId=agent)  # idle: answered with the idle agent
    assert (idle["agentId"], idle["agent"]["status"]) == (agent, "idle")
    hold_a_turn(raw, agent)
    request_id = raw.call("cancel_agent_request", agentId=agent)
    (_, canceled), before = raw.reply(request_id)
    assert "turn_canceled" in events(before)
    assert (canceled["agentId"], canceled["agent"]["status"]) == (agent, "idle")
    assert not fake.runs.is_running(agent)
    raw.call("cancel_agent_request", agentId="00000000-dead")  # unknown: no reply, only an activity log
    kind_, log = raw.message()
    assert (kind_, log["type"]) == ("activity_log", "error")
    assert log["content"] == "Failed to cancel running agent on request: Agent 00000000-dead not found"
    raw.settle(agent)


@pytest.mark.parametrize("kind", KINDS)
def test_archive(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    raw = connect(fake)
    agent, _ = observed_agent(raw)
    hold_a_turn(raw, agent)
    request_id = raw.call("archive_agent_request", agentId=agent)
    (kind_, archived), before = raw.reply(request_id)
    assert "turn_canceled" in events(before)
    assert kind_ == "agent_archived"
    assert list(archived) == ["agentId", "archivedAt", "requestId"]
    assert fake.agents.get(agent)["archivedAt"] == archived["archivedAt"]
    kind_, error = raw.request("archive_agent_request", agentId="ghost")
    assert (kind_, error["code"]) == ("rpc_error", "handler_error")
    assert "Agent not found: ghost" in error["error"]
    raw.until("activity_log")
    # a later message unarchives
    raw.call("send_agent_message_request", agentId=agent, text="emit 1 agent stream updates", messageId="m-2")
    raw.until(is_stream("turn_completed"))
    fake.runs.wait_until_idle(agent)
    assert fake.agents.get(agent)["archivedAt"] is None


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("behavior", ["allow", "deny"])
def test_permission(fakes: Fake, connect: Connect, kind: HostKind, behavior: str) -> None:
    fake = fakes(kind)
    raw, other = connect(fake, "a"), connect(fake, "b")
    agent, _ = observed_agent(raw)
    raw.call("send_agent_message_request", agentId=agent, text="ask permission", messageId="m-1")
    (_, asked), _ = raw.until(is_stream("permission_requested"))
    request = asked["event"]["request"]
    assert (request["provider"], request["kind"], request["id"].startswith("perm-")) == ("mock", "tool", True)
    assert fake.agents.get(agent)["pendingPermissions"] == [request]
    raw.send_session(
        "agent_permission_response",
        agentId=agent,
        requestId=request["id"],
        response={"behavior": behavior, "selectedActionId": "x"},
    )
    (_, resolved), _ = raw.until(is_stream("permission_resolved"))
    assert resolved["event"]["requestId"] == request["id"]
    assert resolved["event"]["resolution"] == {"behavior": behavior, "selectedActionId": "x"}
    if kind is not HostKind.SELECTIVE:  # capable: to the socket that answered; broadcast: to every socket
        (_, push), _ = raw.until("agent_permission_resolved")
        assert push == {"agentId": agent, "requestId": request["id"], "resolution": resolved["event"]["resolution"]}
    end = "turn_completed" if behavior == "allow" else "turn_canceled"
    (_, finished), rest = raw.until(lambda k, p: k == "agent_stream" and p["event"]["type"].startswith("turn_"))
    assert finished["event"]["type"] == end
    if behavior == "allow":
        assert "timeline:tool_call" in events(rest)
    raw.settle(agent)
    assert fake.agents.get(agent)["pendingPermissions"] == []
    if kind is HostKind.BROADCAST:
        assert other.until("agent_permission_resolved")[0][1]["requestId"] == request["id"]


def test_scripts_chunk_delay_and_close(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.BROADCAST)
    raw = connect(fake)
    agent = fake.agents.upsert()["id"]
    fake.runs.script(
        agent, [{"type": "assistant_message", "text": "sc"}, {"type": "assistant_message", "text": "ripted"}]
    )
    fake.runs.chunk_delay = 0.001
    seq = fake.runs.send(agent, "anything")
    assert seq == 1
    raw.until(is_stream("turn_completed"))
    fake.runs.wait_until_idle(agent)
    assert fake.timeline.last_message(agent) == "scripted"
    # a held turn and a pending timed wait end with the fake
    fake.runs.send(agent, "please hold")
    raw.call("wait_for_finish_request", agentId=agent, timeoutMs=60000)
    raw.until(is_stream("turn_started"))
    raw.reply(raw.call("ping"))  # requests of one socket are handled in order: the wait is registered
    names = {t.name for t in threading.enumerate()}
    assert any(n.startswith("fake-daemon-run-") for n in names)
    assert any(n.startswith("fake-daemon-wait-") for n in names)
    fake.close()
    assert not any(t.name.startswith(("fake-daemon-run-", "fake-daemon-wait-")) for t in threading.enumerate())
