"""``workspace.set_label()`` / ``remove_label()`` and the namespace calls by ID: the frame the
fake receives, the catalog, the workspace's labels in replies and in directory observations, and
the refusal before sending on hosts without ``features.workspaceLabels``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.protocol.codec import structure
from daemon_client.protocol.workspace_labels import parse_label_assignment
from daemon_client.protocol.workspaces import WorkspaceDescriptor
from daemon_client.testing import FakeDaemon
from daemon_client.testing.recording import RecordingHandler

from ...conftest import KINDS

Connected = Callable[..., tuple[FakeDaemon, dc.Client]]
SET = "workspace.label.assignment.set.request"


def _sent(fake: FakeDaemon) -> list[dict[str, Any]]:
    return [dict(frame["message"]) for frame in fake.received if frame.message_type == SET]


@pytest.mark.parametrize("kind", KINDS)
def test_assigning_a_label_on_every_host_kind(connected: Connected, kind: str) -> None:
    fake, client = connected(kind)
    workspace = client.workspaces.open("/home/dev/projects/demo")
    if kind != "capable":  # features.workspaceLabels came in 0.5.0: the default selective fake (0.1.108) lacks it
        with pytest.raises(dc.UnsupportedByHost, match="assign workspace labels") as caught:
            workspace.set_label("Review")
        assert (caught.value.feature, caught.value.version) == ("workspaceLabels", "0.5.0")
        with pytest.raises(dc.UnsupportedByHost):
            workspace.remove_label("Review")
        with pytest.raises(dc.UnsupportedByHost):
            client.workspaces.set_label(workspace.id, "Review")
        assert _sent(fake) == []
        with pytest.raises(dc.RpcError) as unknown:  # sent anyway: the host does not know the type
            client.request({"type": SET, "workspaceId": workspace.id, "label": {"name": "x", "color": "red"},
                            "assigned": True})  # fmt: skip
        assert unknown.value.code == "unknown_schema"
        return
    result = workspace.set_label("  Ship   it ", color="emerald")
    assert isinstance(result, dc.WorkspaceLabelAssignment)
    assert result.label == dc.WorkspaceLabel(name="Ship it", color="emerald")
    assert result.labels == ("Ship it",)
    (frame,) = _sent(fake)
    assert {k: v for k, v in frame.items() if k != "requestId"} == {
        "type": SET, "workspaceId": workspace.id, "label": {"name": "Ship it", "color": "emerald"}, "assigned": True,
    }  # fmt: skip
    assert isinstance(frame["requestId"], str)
    assert client.workspaces.labels().names() == ("Review", "Blocked", "Ship it")  # a new name joins the catalog
    assert workspace.current() is not None
    assert workspace.current().labels == ("Ship it",)
    assert fake.workspaces.get(workspace.id)["labels"] == ["Ship it"]


def test_an_existing_label_keeps_its_catalog_name_and_colour(connected: Connected) -> None:
    fake, client = connected("capable")
    workspace = client.workspaces.open("/home/dev/projects/demo")
    result = workspace.set_label("review")  # no colour given: the palette's first is sent
    assert _sent(fake)[0]["label"] == {"name": "review", "color": "violet"}
    assert result.label == dc.WorkspaceLabel(name="Review", color="violet")
    blocked = next(label for label in client.workspaces.labels() if label.name == "Blocked")
    assert workspace.set_label(blocked).labels == ("Review", "Blocked")  # a catalog entry sends its colour
    assert _sent(fake)[1]["label"] == {"name": "Blocked", "color": "red"}
    assert workspace.set_label("Review").labels == ("Review", "Blocked")  # assigning twice changes nothing


def test_removing_a_label(connected: Connected) -> None:
    fake, client = connected("capable")
    workspace = client.workspaces.open("/home/dev/projects/demo")
    workspace.set_label("Review")
    workspace.set_label("Blocked")
    removed = workspace.remove_label("review")
    assert removed.labels == ("Blocked",)
    assert _sent(fake)[-1]["assigned"] is False
    assert workspace.current().labels == ("Blocked",)
    assert client.workspaces.remove_label(workspace.id, "Blocked").labels == ()
    assert client.workspaces.remove_label(workspace.id, "Never had it").labels == ()
    assert client.workspaces.labels().names() == ("Review", "Blocked")  # removal leaves the catalog alone


def test_an_observation_receives_the_workspace_with_its_new_labels(connected: Connected) -> None:
    fake, client = connected("capable")
    workspace_id = fake.workspaces.open("/home/dev/projects/demo")["id"]
    other = fake.workspaces.open("/home/dev/projects/other")["id"]
    result = client.workspaces.list(subscribe=True)
    observation = result.subscription
    assert observation is not None
    updates = RecordingHandler[Any]("updates")
    observation.subscribe(update=updates)
    handle = client.workspaces.ref(workspace_id)
    handle_updates = RecordingHandler[Any]("handle updates")
    handle.subscribe(handle_updates)

    client.workspaces.set_label(workspace_id, "Review")

    (message,) = updates.wait_for(predicate=lambda m: m.payload.workspace_id == workspace_id)
    assert message.payload.kind == "upsert"
    assert message.payload.workspace.labels == ("Review",)
    handle_updates.wait_for()
    assert handle.current().labels == ("Review",)
    view = observation.current()
    assert view is not None
    assert next(entry for entry in view.entries if entry.id == workspace_id).labels == ("Review",)
    assert not [m for m in updates.items if m.payload.workspace_id == other]


def test_a_selective_host_with_the_flag_assigns_labels(connected: Connected) -> None:
    fake, client = connected("selective", version="0.6.0", features={"workspaceLabels": True})
    workspace = client.workspaces.open("/home/dev/projects/demo")
    assert workspace.set_label("Review").labels == ("Review",)
    assert len(_sent(fake)) == 1


def test_hosts_without_the_feature_send_nothing(connected: Connected) -> None:
    fake, client = connected("capable", features={"workspaceLabels": False})
    with pytest.raises(dc.UnsupportedByHost, match=r"features\.workspaceLabels \(Paseo 0\.5\.0 or newer\)"):
        client.workspaces.set_label("ws-1", "Review")
    fake2, client2 = connected("broadcast", features={"workspaceLabels": True})
    with pytest.raises(dc.UnsupportedByHost, match=r"capable, selective hosts only"):
        client2.workspaces.ref("/home/dev/projects/demo").remove_label("Review")
    assert _sent(fake) == []
    assert _sent(fake2) == []


def test_refusals_are_rpc_errors(connected: Connected) -> None:
    fake, client = connected("capable")
    workspace = client.workspaces.open("/home/dev/projects/demo")
    with pytest.raises(dc.RpcError, match="unavailable or access denied"):
        client.workspaces.set_label("ws-unknown", "Review")
    with pytest.raises(dc.RpcError) as caught:
        workspace.set_label("Brand new", color="mauve")  # outside the palette: the daemon's schema refuses it
    assert caught.value.code == "invalid_message"
    assert len(_sent(fake)) == 2


@pytest.mark.parametrize("label", ["", "   ", 7])
def test_an_empty_label_is_refused_before_sending(connected: Connected, label: Any) -> None:
    fake, client = connected("capable")
    with pytest.raises(ValueError):
        client.workspaces.set_label("ws-1", label)
    with pytest.raises(ValueError, match="colour name"):
        client.workspaces.set_label("ws-1", "Review", color=" ")
    assert _sent(fake) == []


def test_replies_and_workspace_labels_are_read_leniently() -> None:
    odd = parse_label_assignment({"label": "gone", "workspaceLabels": ["A", 3, None, "B"], "newer": True})
    assert odd.label == dc.WorkspaceLabel(name="")
    assert odd.labels == ("A", "B")
    assert odd.raw["newer"] is True
    assert parse_label_assignment({}).labels == ()
    plain = structure({"id": "ws-1", "labels": ["x", "y"]}, WorkspaceDescriptor)
    assert plain.labels == ("x", "y")
    unreadable = structure({"id": "ws-1", "labels": "x"}, WorkspaceDescriptor)
    assert unreadable.labels is None
    assert unreadable.extra_fields["labels"] == "x"
