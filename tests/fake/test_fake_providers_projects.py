"""Tests of the fake daemon's event subscriptions, provider catalog and project store, driven
with raw frames (:class:`~tests.raw_client.RawClient`s in memory; one test on loopback).

"Nothing else arrived" is checked with the client's barrier
(:meth:`~tests.raw_client.RawClient.quiet`). No test sleeps to synchronise; every wait is bounded.
"""

from __future__ import annotations

import json
import threading
from typing import Any
from unittest.mock import ANY

import pytest

from daemon_client.protocol.hosts import HostKind

from ..conftest import TRANSCRIPTS
from ..raw_client import Connect, Fake, connect_fixture

SET = "session.events.set_subscription.request"
SET_REPLY = "session.events.set_subscription.response"
UPDATE = "providers_snapshot_update"

connect = connect_fixture()
"""``connect(fake, client_id="cid-1", *, loopback=False)``: a new socket past its hello."""


def statuses(payload: dict[str, Any]) -> list[tuple[str, str]]:
    return [(entry["provider"], entry["status"]) for entry in payload["entries"]]


# -- event subscriptions ---------------------------------------------------------------------------


def test_capable_event_subscriptions_are_owned_tagged_and_released(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    first, second = connect(fake, "cid-1"), connect(fake, "cid-2")
    kind, ack = first.request(SET, events=[UPDATE])
    assert kind == SET_REPLY
    assert list(ack) == ["requestId", "subscriptionId"]
    sub_a = ack["subscriptionId"]
    sub_b = first.request(SET, events=[UPDATE, "project.update"])[1]["subscriptionId"]
    sub_c = second.request(SET, events=["project.update"])[1]["subscriptionId"]
    assert len({sub_a, sub_b, sub_c}) == 3
    assert first.request(SET, events="providers_snapshot_update")[1]["code"] == "invalid_message"
    records = fake.events.subscriptions()
    assert [(r.id, r.events, r.owner) for r in records] == [
        (sub_a, (UPDATE,), first.connection),
        (sub_b, ("project.update", UPDATE), first.connection),
        (sub_c, ("project.update",), second.connection),
    ]
    assert fake.events.publish(UPDATE, {"cwd": "/x", "entries": [], "generatedAt": "t"}) == 2
    copies = [first.message(), first.message()]  # one tagged copy per subscription, in creation order
    assert copies == [(UPDATE, {"subscriptionId": sub, "cwd": "/x", "entries": [], "generatedAt": "t"})
                      for sub in (sub_a, sub_b)]  # fmt: skip
    second.quiet()  # not subscribed to this event
    assert fake.events.publish("project.update", {"kind": "remove", "projectId": "p"}) == 2
    assert first.message() == ("project.update", {"subscriptionId": sub_b, "kind": "remove", "projectId": "p"})
    assert second.message() == ("project.update", {"subscriptionId": sub_c, "kind": "remove", "projectId": "p"})
    # release one subscription: no more copies for it
    assert first.request("subscription.release.request", subscriptionId=sub_a) == (
        "subscription.release.response",
        {"requestId": ANY, "subscriptionId": sub_a},
    )
    assert [r.id for r in fake.events.subscriptions()] == [sub_b, sub_c]
    fake.events.publish(UPDATE, {"entries": []})
    assert first.message() == (UPDATE, {"subscriptionId": sub_b, "entries": []})
    first.quiet()
    # the end of the socket releases what it owned
    first.close()
    assert [r.id for r in fake.events.subscriptions()] == [sub_c]


def test_capable_release_comes_after_the_last_frame_of_the_subscription(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    client = connect(fake)
    sub = client.request(SET, events=[UPDATE])[1]["subscriptionId"]
    fake.providers.publish()
    request_id = client.call("subscription.release.request", subscriptionId=sub)
    (kind, _), before = client.reply(request_id)
    assert kind == "subscription.release.response"
    assert [k for k, _ in before] == [UPDATE]
    assert fake.events.subscriptions() == []


def test_selective_event_set_is_replaced_and_fans_out_untagged(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.SELECTIVE)
    one, same, other = connect(fake, "cid-1"), connect(fake, "cid-1"), connect(fake, "cid-2")
    request_id = one.call(SET, events=[UPDATE])
    ack = (SET_REPLY, {"requestId": request_id})  # no subscriptionId; legacy replies go to the session
    assert one.message() == ack
    assert same.message() == ack
    (record,) = fake.events.subscriptions()
    assert (record.id, record.events, record.owner) == (None, (UPDATE,), fake.sessions["cid-1"])
    assert fake.events.publish(UPDATE, {"entries": []}) == 2
    assert one.message() == (UPDATE, {"entries": []})
    assert same.message() == (UPDATE, {"entries": []})
    other.quiet()
    # set-replace: another socket of the session replaces the set
    same.request(SET, events=["project.update"])
    one.message()  # the acknowledgement reaches every socket of the session
    assert fake.events.publish(UPDATE, {"entries": []}) == 0
    assert [r.events for r in fake.events.subscriptions()] == [("project.update",)]
    other.request(SET, events=[UPDATE])
    fake.events.publish(UPDATE, {"entries": [1]})
    assert other.message() == (UPDATE, {"entries": [1]})
    # ending with [] stops the pushes
    one.request(SET, events=[])
    same.message()
    assert [r.owner for r in fake.events.subscriptions()] == [fake.sessions["cid-2"]]
    one.quiet()
    same.quiet()


def test_selective_without_explicit_event_subscriptions_broadcasts(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.SELECTIVE, features={"explicitEventSubscriptions": False})
    client = connect(fake)
    assert client.request(SET, events=[UPDATE])[1]["code"] == "unknown_schema"
    assert fake.events.publish(UPDATE, {"entries": []}) == 1
    assert client.message() == (UPDATE, {"entries": []})


def test_broadcast_has_no_event_request_and_broadcasts_providers_only(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.BROADCAST)
    one, same, other = connect(fake, "cid-1"), connect(fake, "cid-1"), connect(fake, "cid-2")
    kind, payload = one.request(SET, events=[UPDATE])
    assert (kind, payload["code"], payload["requestType"]) == ("rpc_error", "unknown_schema", SET)
    assert fake.events.subscriptions() == []
    assert fake.providers.publish() == 3  # every handshaken socket of every session, untagged
    for client in (one, same, other):
        kind, payload = client.message()
        assert (kind, list(payload)) == (UPDATE, ["cwd", "entries", "generatedAt"])
    assert fake.events.publish("project.update", {"kind": "remove", "projectId": "p"}) == 0  # does not exist
    for client in (one, same, other):
        client.quiet()


# -- providers ---------------------------------------------------------------------------------------


def _transcript_07() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (TRANSCRIPTS / "07-providers.jsonl").read_text().splitlines()]


def _shape(kind: str, payload: dict[str, Any]) -> tuple[Any, ...]:
    """A frame without values that vary: type, payload keys, cwd, per entry (provider, status, keys)."""
    entries = [(e["provider"], e["status"], tuple(sorted(e))) for e in payload.get("entries", [])]
    return kind, tuple(sorted(payload)), payload.get("cwd"), entries


def test_broadcast_providers_follow_transcript_07(fakes: Fake, connect: Connect) -> None:
    records = _transcript_07()
    final = records[27]["frame"]["message"]["payload"]["entries"]  # L28: the settled snapshot
    fake = fakes(HostKind.BROADCAST)
    for entry in final:
        fake.providers.remove_entry(entry["provider"])
    for entry in final:
        fake.providers.set_entry(entry["provider"], status=entry["status"], models=entry.get("models"),
                                 modes=entry.get("modes"), label=entry["label"], description=entry["description"],
                                 default_mode_id=entry["defaultModeId"])  # fmt: skip
    fake.providers.start_loading(keep_models=False)  # the daemon just started: nothing probed yet
    fake.providers.auto_resolve = False
    client = connect(fake)
    expected = [_shape(r["frame"]["message"]["type"], r["frame"]["message"]["payload"])
                for r in records[4:28] if r["dir"] == "in"]  # fmt: skip
    got: list[tuple[Any, ...]] = []
    requests = [r["frame"]["message"] for r in records[3:28] if r["dir"] == "out"]

    def ask(index: int) -> str:
        fields = {k: v for k, v in requests[index].items() if k not in ("type", "requestId")}
        return client.call(requests[index]["type"], **fields)

    def read(n: int) -> None:
        got.extend(_shape(*client.message()) for _ in range(n))

    ask(0)  # L4-L11: all loading, then one update per resolved provider, in the recorded order
    read(1)
    for provider in ("claude", "mock", "codex", "copilot", "pi", "opencode"):
        fake.providers.resolve(provider, "ready" if provider in ("claude", "mock") else "unavailable")
        read(1)
    ask(1)  # L12-L13: settled
    read(1)
    fake.providers.auto_resolve = True
    ask(2)  # L14-L17: refresh mock: loading (models kept), ready, then the reply
    read(3)
    fake.providers.auto_resolve = False
    ask(3)  # L18-L26: refresh all: every entry loading without models, one update per provider, reply
    read(1)
    for provider in ("claude", "mock", "codex", "copilot", "opencode", "pi"):
        fake.providers.resolve(provider, "unavailable" if provider not in ("claude", "mock") else "ready")
        read(2 if provider == "pi" else 1)  # the last resolution is followed by the reply
    ask(4)  # L27-L28
    read(1)
    assert got == expected
    client.quiet()


def test_refresh_replies_after_its_updates_when_resolved_synchronously(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.BROADCAST)
    fake.providers.set_entry("codex", status="unavailable", error="codex binary not found")
    client = connect(fake)
    request_id = client.call("refresh_providers_snapshot_request", cwd="/home/dev/projects/demo")
    (kind, payload), updates = client.reply(request_id)
    assert (kind, payload) == ("refresh_providers_snapshot_response", {"requestId": request_id, "acknowledged": True})
    assert [k for k, _ in updates] == [UPDATE] * 4
    assert {p["cwd"] for _, p in updates} == {"/home/dev"}  # the daemon's home, not the requested cwd
    assert [statuses(p) for _, p in updates] == [
        [("claude", "loading"), ("codex", "loading"), ("mock", "loading")],
        [("claude", "ready"), ("codex", "loading"), ("mock", "loading")],
        [("claude", "ready"), ("codex", "unavailable"), ("mock", "loading")],
        [("claude", "ready"), ("codex", "unavailable"), ("mock", "ready")],
    ]
    assert "models" not in updates[0][1]["entries"][0]  # a full refresh drops models (07 L19)
    claude = updates[1][1]["entries"][0]
    assert claude["fetchedAt"]
    assert claude["models"][0]["thinkingOptions"]
    assert updates[2][1]["entries"][1]["error"] == "codex binary not found"  # resolves as it was
    client.quiet()


def test_refresh_waits_for_the_test_to_resolve(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.SELECTIVE)
    client, bystander = connect(fake, "cid-1"), connect(fake, "cid-2")
    client.request(SET, events=[UPDATE])
    fake.providers.auto_resolve = False
    request_id = client.call("refresh_providers_snapshot_request", providers=["claude", "mock", "nope"])
    kind, update = client.message()
    assert kind == UPDATE
    assert "subscriptionId" not in update
    assert statuses(update) == [("claude", "loading"), ("codex", "ready"), ("mock", "loading")]
    assert update["entries"][0]["models"]  # a refresh of named providers keeps their models (07 L15)
    client.quiet()  # no reply yet
    fake.providers.resolve("claude", "error", error="probe timed out")
    kind, update = client.message()
    assert update["entries"][0] == {**update["entries"][0], "status": "error", "error": "probe timed out"}
    assert "models" not in update["entries"][0]
    client.quiet()
    fake.providers.resolve("mock")
    assert client.message()[0] == UPDATE
    assert client.message() == ("refresh_providers_snapshot_response", {"requestId": request_id, "acknowledged": True})
    bystander.quiet()  # not in the event set: neither updates nor the other session's reply


def test_capable_snapshot_and_updates_report_the_requested_cwd(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    client, bystander = connect(fake, "cid-1"), connect(fake, "cid-2")
    sub = client.request(SET, events=[UPDATE])[1]["subscriptionId"]
    kind, snapshot = client.request("get_providers_snapshot_request", cwd="/srv/app")
    assert kind == "get_providers_snapshot_response"
    assert list(snapshot) == ["requestId", "cwd", "entries", "generatedAt"]
    assert snapshot["cwd"] == "/srv/app"
    assert statuses(snapshot) == [("claude", "ready"), ("codex", "ready"), ("mock", "ready")]
    fake.providers.start_loading(["codex"])
    kind, update = client.message()
    assert (kind, update["subscriptionId"], update["cwd"]) == (UPDATE, sub, "/srv/app")
    assert statuses(update)[1] == ("codex", "loading")
    fake.providers.resolve("codex", cwd="/elsewhere")
    assert client.message()[1]["cwd"] == "/elsewhere"
    assert client.request("get_providers_snapshot_request")[1]["cwd"] == "/home/dev"  # no cwd: the home
    bystander.quiet()  # a plain read creates no observation
    client.quiet()


def test_set_entry_models_modes_and_list_calls(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.BROADCAST)
    model = {"id": "big", "label": "Big", "description": "d", "isDefault": True,
             "thinkingOptions": [{"id": "hi", "label": "High", "isDefault": True}]}  # fmt: skip
    entry = fake.providers.set_entry("opencode", status="ready", models=[model], modes=[{"id": "m", "label": "M"}],
                                     label="OpenCode")  # fmt: skip
    assert entry["models"] == [{"provider": "opencode", **model}]
    assert entry["label"] == "OpenCode"
    fake.providers.set_entry("pi", status="unavailable", error="pi binary not found", enabled=False)
    client = connect(fake)
    client.quiet()  # set_entry publishes nothing
    kind, payload = client.request("list_available_providers_request")
    assert kind == "list_available_providers_response"
    assert list(payload) == ["requestId", "providers", "error", "fetchedAt"]
    assert payload["providers"] == [
        {"provider": "claude", "available": True, "error": None},
        {"provider": "codex", "available": True, "error": None},
        {"provider": "mock", "available": True, "error": None},
        {"provider": "opencode", "available": True, "error": None},
        {"provider": "pi", "available": False, "error": "pi binary not found"},
    ]
    kind, payload = client.request("list_provider_models_request", provider="opencode", cwd="/srv")
    assert kind == "list_provider_models_response"
    assert list(payload) == ["requestId", "provider", "models", "error", "fetchedAt"]
    assert (payload["models"], payload["error"]) == ([{"provider": "opencode", **model}], None)
    kind, payload = client.request("list_provider_modes_request", provider="opencode")
    assert (kind, payload["modes"], payload["error"]) == ("list_provider_modes_response", [{"id": "m", "label": "M"}],
                                                          None)  # fmt: skip
    for request in ("list_provider_models_request", "list_provider_modes_request"):
        _, payload = client.request(request, provider="nope")
        assert list(payload) == ["requestId", "provider", "error", "fetchedAt"]
        assert payload["error"] == "Unknown provider: nope"
    assert client.request("provider_diagnostic_request", provider="pi")[1]["diagnostic"].startswith("Pi (pi)")
    assert client.request("refresh_providers_snapshot_request", providers="claude")[1]["code"] == "invalid_message"
    with pytest.raises(KeyError):
        fake.providers.resolve("nope")
    with pytest.raises(ValueError, match="status"):
        fake.providers.resolve("claude", "loading")
    client.quiet()


# -- projects ----------------------------------------------------------------------------------------


def test_project_updates_carry_generation_and_seq(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    client = connect(fake)
    sub = client.request(SET, events=["project.update"])[1]["subscriptionId"]
    generation = fake.projects.generation
    row = fake.projects.upsert("remote:github.com/acme/app", project_display_name="acme/app",
                               project_root_path="/home/dev/acme-app", project_kind="git")  # fmt: skip
    assert row == {"projectId": "remote:github.com/acme/app", "projectKey": "remote:github.com/acme/app",
                   "projectDisplayName": "acme/app", "projectCustomName": None,
                   "projectRootPath": "/home/dev/acme-app", "projectKind": "git", "syncSeq": 1}  # fmt: skip
    assert client.message() == ("project.update", {"subscriptionId": sub, "kind": "upsert", "project": row,
                                                   "generation": generation, "seq": 1})  # fmt: skip
    renamed = fake.projects.upsert("remote:github.com/acme/app", projectCustomName="Acme App")
    assert (renamed["syncSeq"], renamed["projectCustomName"]) == (2, "Acme App")
    assert client.message()[1]["seq"] == 2
    scratch = fake.projects.upsert("/home/dev/scratch")
    assert (scratch["projectRootPath"], scratch["projectDisplayName"]) == ("/home/dev/scratch", "scratch")
    client.message()
    assert fake.projects.remove("/home/dev/scratch")
    assert client.message() == ("project.update", {"subscriptionId": sub, "kind": "remove",
                                                   "projectId": "/home/dev/scratch", "generation": generation,
                                                   "seq": 4})  # fmt: skip
    assert not fake.projects.remove("/home/dev/scratch")
    assert fake.projects.seq == 4
    client.quiet()


def test_project_list_snapshot_and_changes(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    client = connect(fake)
    fake.projects.upsert("p1")
    fake.projects.upsert("p2")
    fake.projects.upsert("p3")
    generation = fake.projects.generation
    kind, payload = client.request("project.list.request")
    assert kind == "project.list.response"
    assert list(payload) == ["requestId", "projects", "sync"]
    assert [p["projectId"] for p in payload["projects"]] == ["p1", "p2", "p3"]
    assert payload["sync"] == {"generation": generation, "headSeq": 3, "mode": "snapshot", "reason": "no_cursor",
                               "removals": []}  # fmt: skip
    fake.projects.upsert("p1", projectDisplayName="One")
    fake.projects.remove("p2")
    _, payload = client.request("project.list.request", sync={"generation": generation, "afterSeq": 3})
    assert [(p["projectId"], p["syncSeq"]) for p in payload["projects"]] == [("p1", 4)]
    assert payload["sync"] == {"generation": generation, "headSeq": 5, "mode": "changes",
                               "removals": [{"id": "p2", "seq": 5}]}  # fmt: skip
    _, payload = client.request("project.list.request", sync={"generation": generation, "afterSeq": 5})
    assert (payload["projects"], payload["sync"]["removals"]) == ([], [])
    new = fake.projects.new_generation()
    _, payload = client.request("project.list.request", sync={"generation": generation, "afterSeq": 5})
    assert [p["projectId"] for p in payload["projects"]] == ["p1", "p3"]
    assert payload["sync"] == {"generation": new, "headSeq": 5, "mode": "snapshot", "reason": "generation_changed",
                               "removals": []}  # fmt: skip
    assert client.request("project.list.request", sync="x")[1]["code"] == "invalid_message"
    client.quiet()  # no subscription: no project.update arrived


def test_update_during_list_is_sent_before_the_older_list_reply(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    client = connect(fake)
    sub = client.request(SET, events=["project.update"])[1]["subscriptionId"]
    fake.projects.upsert("p1")
    fake.projects.upsert("gone")
    client.message()
    client.message()
    calls: list[str] = []

    def race() -> None:
        calls.append(threading.current_thread().name)
        fake.projects.upsert("p2")
        fake.projects.remove("gone")

    fake.projects.before_list_reply = race
    request_id = client.call("project.list.request")
    (kind, payload), before = client.reply(request_id)
    assert len(calls) == 1
    assert calls[0].startswith("fake-daemon-mem-")  # on the handler thread
    assert [(k, p["kind"], p["seq"], p["subscriptionId"]) for k, p in before] == [
        ("project.update", "upsert", 3, sub),
        ("project.update", "remove", 4, sub),
    ]
    # the reply's rows were taken before the hook ran: it is older than the updates sent before it
    assert kind == "project.list.response"
    assert [(p["projectId"], p["syncSeq"]) for p in payload["projects"]] == [("p1", 1), ("gone", 2)]
    assert payload["sync"]["headSeq"] == 2
    fake.projects.before_list_reply = None
    assert [p["projectId"] for p in client.request("project.list.request")[1]["projects"]] == ["p1", "p2"]
    client.quiet()


@pytest.mark.parametrize("kind", [HostKind.SELECTIVE, HostKind.BROADCAST])
def test_hosts_without_project_list(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    client = connect(fake)
    if kind is HostKind.SELECTIVE:
        client.request(SET, events=["project.update"])
    reply_kind, payload = client.request("project.list.request")
    assert (reply_kind, payload["code"]) == ("rpc_error", "unknown_schema")
    fake.projects.upsert("p1")  # kept in the store, but no project.update exists on these hosts
    assert fake.projects.get("p1") is not None
    client.quiet()


def test_selective_host_with_project_list_sends_untagged_updates(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.SELECTIVE, version="0.2.4", features={"projectList": True})
    client = connect(fake)
    client.request(SET, events=["project.update", UPDATE])
    row = fake.projects.upsert("p1")
    assert client.message() == ("project.update", {"kind": "upsert", "project": row,
                                                   "generation": fake.projects.generation, "seq": 1})  # fmt: skip
    assert client.request("project.list.request")[1]["sync"]["headSeq"] == 1
    client.quiet()


def test_capable_events_on_loopback(fakes: Fake, connect: Connect) -> None:
    fake = fakes(HostKind.CAPABLE)
    client = connect(fake, loopback=True)
    sub = client.request(SET, events=[UPDATE, "project.update"])[1]["subscriptionId"]
    fake.providers.resolve("codex", "unavailable")
    kind, update = client.message()
    assert (kind, update["subscriptionId"], statuses(update)[1]) == (UPDATE, sub, ("codex", "unavailable"))
    fake.projects.upsert("p1")
    assert client.message()[1]["subscriptionId"] == sub
    client.close()
    assert fake.events.subscriptions() == []


@pytest.mark.parametrize("kind", list(HostKind))
def test_snapshot_read_of_loading_entries_starts_the_probe(fakes: Fake, connect: Connect, kind: HostKind) -> None:
    fake = fakes(kind)
    fake.providers.start_loading(["claude", "mock"], keep_models=False)  # nobody connected: nothing sent
    client = connect(fake)
    if kind is not HostKind.BROADCAST:
        client.request(SET, events=[UPDATE])
    kind_, snapshot = client.request("get_providers_snapshot_request", cwd="/srv/app")
    assert kind_ == "get_providers_snapshot_response"
    assert statuses(snapshot) == [("claude", "loading"), ("codex", "ready"), ("mock", "loading")]
    assert "models" not in snapshot["entries"][0]
    first, second = client.message(), client.message()
    assert statuses(first[1]) == [("claude", "ready"), ("codex", "ready"), ("mock", "loading")]
    assert statuses(second[1]) == [("claude", "ready"), ("codex", "ready"), ("mock", "ready")]
    assert second[1]["cwd"] == ("/srv/app" if kind is HostKind.CAPABLE else "/home/dev")
    assert ("subscriptionId" in second[1]) is (kind is HostKind.CAPABLE)
    client.request("get_providers_snapshot_request")  # settled: no probe, no update
    client.quiet()
