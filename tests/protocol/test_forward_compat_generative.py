"""Every recorded daemon frame, changed the way a newer daemon might change it, still gets through.

Each session frame of the recorded transcripts (``tests/fixtures/paseo-0.1.65``) is mutated —
a field set to ``null`` or deleted, a string replaced by an unknown value, a scalar wrapped in
an object, unknown keys added at any depth — and fed to a live client on a broadcast-only fake
(the host kind of the recordings): replies through the call that reads them (typed where the
client types them), pushes to the observations, subscriptions and listeners that hear them.
The client must deliver every entry whose identity survived, fail no unrelated request (a
request is kept pending across each frame and answered after it), and keep reading (a round
trip after each frame). A sweep runs every frame once with a fixed heavy mutation; hypothesis
then explores random combinations.
"""

from __future__ import annotations

import copy
import json
import logging
import queue
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import daemon_client as dc
from daemon_client.protocol.replies import is_reply
from daemon_client.testing import FakeDaemon, RecordingHandler

from ..conftest import TRANSCRIPTS

ENVELOPE = frozenset({"requestId", "subscriptionId", "agentId"})
"""Payload keys that route a frame (they are never mutated: the frame would go elsewhere)."""
IDENTITY = frozenset({"id", "provider", "projectId", "serverId", *ENVELOPE})
"""Keys the fixed sweep leaves alone, so that its entries keep their identity."""


@attrs.frozen
class Recorded:
    where: str
    type: str
    payload: dict[str, Any]
    request: dict[str, Any] | None
    """The recorded request this frame answers (fields flat, without ``requestId``)."""

    @property
    def request_type(self) -> str | None:
        return None if self.request is None else str(self.request["type"])


def _recorded() -> list[Recorded]:
    frames: list[Recorded] = []
    for path in sorted(TRANSCRIPTS.glob("*.jsonl")):
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        requests: dict[tuple[str, str], dict[str, Any]] = {}
        for line in lines:
            message = line.get("frame", {}).get("message") if line.get("dir") == "out" else None
            if isinstance(message, dict) and isinstance(message.get("requestId"), str):
                requests[(line["conn"], message["requestId"])] = message
        for number, line in enumerate(lines, start=1):
            frame = line.get("frame", {})
            if line.get("dir") != "in" or frame.get("type") != "session":
                continue
            message = frame["message"]
            payload = message["payload"]
            request = None
            if isinstance(payload.get("requestId"), str) and is_reply(message["type"], payload):
                sent = requests.get((line["conn"], payload["requestId"]))
                request = {k: v for k, v in sent.items() if k != "requestId"} if sent is not None else None
            frames.append(Recorded(f"{path.name}:{number}", message["type"], payload, request))
    return frames


RECORDED = _recorded()
STREAM_AGENTS = sorted({f.payload["agentId"] for f in RECORDED if f.type == "agent_stream"})


def test_every_transcript_is_in_the_corpus() -> None:
    files = {f.where.split(":")[0] for f in RECORDED}
    assert files == {p.name for p in TRANSCRIPTS.glob("*.jsonl")}
    assert len(RECORDED) > 600


# ------------------------------------------------------------------------------ mutations

Slot = tuple[Any, Any]
"""A place in a payload: (container, key or index)."""


def _slots(payload: dict[str, Any], protected: frozenset[str]) -> list[Slot]:
    slots: list[Slot] = []

    def walk(node: Any, top: bool) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if not (top and key in protected):
                    slots.append((node, key))
                walk(value, False)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                slots.append((node, index))
                walk(value, False)

    walk(payload, True)
    return slots


def _containers(payload: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(payload)
    return found


def _protected(frame: Recorded) -> frozenset[str]:
    return ENVELOPE | {"status"} if frame.type == "status" else ENVELOPE


OPS = ("null", "delete", "unknown_enum", "wrap", "add_keys")
json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8)
json_values = st.recursive(
    json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
)


def _mutate(frame: Recorded, draw: Callable[[st.SearchStrategy[Any]], Any]) -> dict[str, Any]:
    payload = copy.deepcopy(frame.payload)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(OPS))
        if op == "add_keys":
            containers = _containers(payload)
            target = containers[draw(st.integers(0, len(containers) - 1))]
            target["newer" + draw(st.text("abcXYZ_", min_size=1, max_size=6))] = draw(json_values)
            continue
        slots = _slots(payload, _protected(frame))
        if not slots:
            continue
        container, key = slots[draw(st.integers(0, len(slots) - 1))]
        value = container[key]
        if op == "null":
            container[key] = None
        elif op == "delete" and isinstance(container, dict):
            del container[key]
        elif op == "unknown_enum" and isinstance(value, str):
            container[key] = "newer_" + draw(st.text("abcdef_", max_size=6))
        elif op == "wrap" and isinstance(value, str | int | float | bool):
            container[key] = {"value": value, "newerKind": draw(st.text("xyz", max_size=3))}
    return payload


def _sweep_mutation(frame: Recorded) -> dict[str, Any]:
    """Every scalar outside the identity keys ``null``, then unknown keys in every object."""
    payload = copy.deepcopy(frame.payload)
    protected = _protected(frame)

    def null(node: Any, top: bool) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in list(items):
            if isinstance(value, dict | list):
                null(value, False)
            elif key not in IDENTITY and not (top and key in protected) and not isinstance(node, list):
                node[key] = None

    null(payload, True)
    for container in _containers(payload):
        container["newerField"] = {"newerNested": [1, {"newerDeep": None}]}
    return payload


# ------------------------------------------------------------------------------ expectations


def _identities(items: Any, *path: str) -> list[str]:
    """Identity values of the entries of ``items`` whose identity (at ``path``) survived."""
    found = []
    for item in items if isinstance(items, list) else []:
        value = item
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, str):
            found.append(value)
    return found


def _usable_object(payload: dict[str, Any], key: str, identity: str) -> bool:
    """An update's object: absent, or present with its identity (else the update is skipped)."""
    value = payload.get(key)
    return not isinstance(value, dict) or isinstance(value.get(identity), str)


TypedCall = Callable[[dc.Client, dict[str, Any]], None]


def _check_agents(client: dc.Client, payload: dict[str, Any]) -> None:
    result = client.agents.list()
    assert [e.agent.id for e in result.entries] == _identities(payload.get("entries"), "agent", "id")


def _check_workspaces(client: dc.Client, payload: dict[str, Any]) -> None:
    result = client.workspaces.list()
    assert [w.id for w in result.entries] == _identities(payload.get("entries"), "id")
    assert [p.project_id for p in result.empty_projects] == _identities(payload.get("emptyProjects"), "projectId")


def _check_snapshot(client: dc.Client, payload: dict[str, Any]) -> None:
    result = client.providers.snapshot()
    assert [e.provider for e in result.entries] == _identities(payload.get("entries"), "provider")


def _check_models(client: dc.Client, payload: dict[str, Any]) -> None:
    assert [m.id for m in client.providers.list_models("mock")] == _identities(payload.get("models"), "id")


def _check_modes(client: dc.Client, payload: dict[str, Any]) -> None:
    assert [m.id for m in client.providers.list_modes("mock")] == _identities(payload.get("modes"), "id")


def _check_available(client: dc.Client, payload: dict[str, Any]) -> None:
    read = [p.provider for p in client.providers.list_available()]
    assert read == _identities(payload.get("providers"), "provider")


def _check_fetch_agent(client: dc.Client, payload: dict[str, Any]) -> None:
    agent = payload.get("agent")
    if isinstance(agent, dict) and not isinstance(agent.get("id"), str):
        with pytest.raises(dc.ProtocolError, match="'id'"):  # the one object of the reply is unusable
            client.agents.fetch("any")
        return
    snapshot = client.agents.fetch("any")
    assert (snapshot.id if snapshot is not None else None) == (agent["id"] if isinstance(agent, dict) else None)


def _check_timeline(client: dc.Client, payload: dict[str, Any]) -> None:
    page = client.agents.ref("timeline-agent").timeline.refetch()
    entries = payload.get("entries")
    assert len(page.entries) == len([e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else [])


def _check_ping(client: dc.Client, payload: dict[str, Any]) -> None:
    assert client.ping().request_id


TYPED: dict[str, TypedCall] = {
    "fetch_agents_request": _check_agents,
    "fetch_workspaces_request": _check_workspaces,
    "get_providers_snapshot_request": _check_snapshot,
    "list_provider_models_request": _check_models,
    "list_provider_modes_request": _check_modes,
    "list_available_providers_request": _check_available,
    "fetch_agent_request": _check_fetch_agent,
    "fetch_agent_timeline_request": _check_timeline,
    "ping": _check_ping,
}
ERRORS_RAISED = frozenset(
    {
        "fetch_agent_request",
        "fetch_agent_timeline_request",
        "list_provider_models_request",
        "list_provider_modes_request",
        "list_available_providers_request",
    }
)
"""Typed calls that raise ``RpcError`` for a reply carrying an ``error``."""


# ------------------------------------------------------------------------------ the live client


class Harness:
    """One connected client on a broadcast-only fake, listening the ways a user does."""

    def __init__(self, fake: FakeDaemon, client: dc.Client, errors: list[BaseException]) -> None:
        self.fake = fake
        self.client = client
        self.errors = errors
        self.pushes = RecordingHandler[dc.SessionMessage]("pushes")
        self.agent_updates = RecordingHandler[Any]("agent updates")
        self.workspace_updates = RecordingHandler[Any]("workspace updates")
        self.provider_updates = RecordingHandler[Any]("provider updates")
        self.stream = RecordingHandler[Any]("timeline")
        self._held: queue.Queue[Any] = queue.Queue()
        self._bystanders = 0
        fake.on_request("bystander_request", self._held.put)
        client.add_push_listener(self.pushes)
        agents = client.agents.list(subscribe=True).subscription
        workspaces = client.workspaces.list(subscribe=True).subscription
        assert agents is not None
        assert workspaces is not None
        agents.subscribe(update=self.agent_updates)
        workspaces.subscribe(update=self.workspace_updates)
        client.providers.subscribe(self.provider_updates)
        for agent_id in STREAM_AGENTS:
            client.agents.ref(agent_id).timeline.subscribe(self.stream)

    def _clear(self) -> None:
        for recorder in (self.pushes, self.agent_updates, self.workspace_updates, self.provider_updates, self.stream):
            recorder.clear()

    def feed(self, frame: Recorded, payload: dict[str, Any]) -> None:
        """Deliver one (mutated) frame and check what the client made of it."""
        self._clear()
        self._bystanders += 1
        n = self._bystanders
        bystander = self.client.request_async({"type": "bystander_request", "n": n}, timeout=30)
        held = self._held.get(timeout=5)  # the unrelated request is pending at the daemon
        if frame.request is not None:
            self._reply(frame, payload)
        else:
            self._push(frame, payload)
        held.reply({"n": n})
        assert bystander.result(timeout=5)["n"] == n  # no unrelated request failed
        assert self.client.ping().request_id  # later frames keep flowing
        assert self.client.flush_callbacks()
        assert self.errors == [], f"{frame.where}: a callback failed: {self.errors!r}"
        assert self.client.state is dc.ConnectionState.CONNECTED
        assert self.fake.accepted_count == 1, f"{frame.where} cost a reconnect"

    def _reply(self, frame: Recorded, payload: dict[str, Any]) -> None:
        assert frame.request is not None
        request_type = str(frame.request["type"])
        body = {key: value for key, value in payload.items() if key != "requestId"}
        original = self.fake.registry.handler_for(request_type)
        self.fake.on_request(request_type, lambda ctx: ctx.reply(body, type=frame.type))
        try:
            self._read_reply(frame, payload, body)
        finally:
            if original is not None:
                self.fake.on_request(request_type, original)
            else:
                self.fake.registry.unregister(request_type)

    def _read_reply(self, frame: Recorded, payload: dict[str, Any], body: dict[str, Any]) -> None:
        assert frame.request is not None
        request_type = str(frame.request["type"])
        if frame.type == "rpc_error":
            with pytest.raises(dc.RpcError):
                self.client.request(frame.request)
            return
        check = TYPED.get(request_type)
        if check is not None and payload.get("error") and request_type in ERRORS_RAISED:
            with pytest.raises(dc.RpcError):  # the daemon's error answer, as recorded (or changed)
                check(self.client, payload)
        elif check is not None:
            check(self.client, payload)
        if check is not None:
            return
        reply = self.client.request(frame.request)
        assert {key: value for key, value in reply.items() if key != "requestId"} == body, frame.where

    def _push(self, frame: Recorded, payload: dict[str, Any]) -> None:
        self.fake.push(frame.type, payload)
        self.client.ping()
        assert self.client.flush_callbacks()
        server_info = frame.type == "status" and payload.get("status") == "server_info"
        reply_to_nobody = isinstance(payload.get("requestId"), str) and is_reply(frame.type, payload)
        if server_info:
            if isinstance(payload.get("serverId"), str):
                info = self.client.server_info
                assert info is not None
                assert info.server_id == payload["serverId"]
        elif reply_to_nobody:
            assert self.pushes.items == []  # a late reply is dropped
        else:
            assert [(m.type, m.payload) for m in self.pushes.items] == [(frame.type, payload)], frame.where
        if frame.type == "agent_update":
            expected = 1 if _usable_object(payload, "agent", "id") else 0
            assert len(self.agent_updates.items) == expected, frame.where
        elif frame.type == "workspace_update":
            expected = 1 if _usable_object(payload, "workspace", "id") else 0
            assert len(self.workspace_updates.items) == expected, frame.where
        elif frame.type == "providers_snapshot_update":
            (update,) = self.provider_updates.items
            assert [e.provider for e in update.entries] == _identities(payload.get("entries"), "provider")
        elif frame.type == "agent_stream":
            (update,) = self.stream.items
            assert update.agent_id == payload["agentId"]


@pytest.fixture
def harness(fakes, make_client, caplog) -> Harness:
    caplog.set_level(logging.WARNING, logger="daemon_client")  # thousands of frames: no DEBUG lines
    fake = fakes("broadcast")
    errors: list[BaseException] = []
    client = make_client(fake, strict=False, on_callback_error=errors.append)
    client.connect()
    return Harness(fake, client, errors)


def test_every_recorded_frame_survives_the_heavy_mutation(harness: Harness) -> None:
    for frame in RECORDED:
        harness.feed(frame, _sweep_mutation(frame))


def test_every_recorded_frame_unchanged_is_delivered(harness: Harness) -> None:
    for frame in RECORDED:
        harness.feed(frame, copy.deepcopy(frame.payload))


def test_mutated_recorded_frames_deliver_every_entry_whose_identity_survived(harness: Harness) -> None:
    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from(RECORDED), st.data())
    def run(frame: Recorded, data: st.DataObject) -> None:
        harness.feed(frame, _mutate(frame, data.draw))

    run()
