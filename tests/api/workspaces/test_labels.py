"""``client.workspaces.labels()``: the workspace label catalog on every host kind, refused
before sending where the host lacks it, and read leniently."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import daemon_client as dc
from daemon_client.protocol.workspace_labels import parse_label_catalog
from daemon_client.testing import FakeDaemon

from ...conftest import KINDS

Connected = Callable[..., tuple[FakeDaemon, dc.Client]]
LIST = "workspace.label.list.request"


def _sent(fake: FakeDaemon) -> int:
    return sum(1 for frame in fake.received if frame.message_type == LIST)


@pytest.mark.parametrize("kind", KINDS)
def test_the_label_catalog_on_every_host_kind(connected: Connected, kind: str) -> None:
    fake, client = connected(kind)
    if kind != "capable":  # features.workspaceLabels came in 0.5.0: the default selective fake (0.1.108) lacks it
        with pytest.raises(dc.UnsupportedByHost, match="list workspace labels") as caught:
            client.workspaces.labels()
        assert (caught.value.feature, caught.value.version) == ("workspaceLabels", "0.5.0")
        assert _sent(fake) == 0
        with pytest.raises(dc.RpcError) as unknown:  # sent anyway: the host does not know the type
            client.request({"type": LIST})
        assert unknown.value.code == "unknown_schema"
        return
    fake.worktrees.labels.append({"name": "Ship it", "color": "emerald", "icon": "rocket"})
    catalog = client.workspaces.labels()
    assert isinstance(catalog, dc.WorkspaceLabelCatalog)
    assert catalog.names() == ("Review", "Blocked", "Ship it")
    assert [label.color for label in catalog] == ["violet", "red", "emerald"]
    assert len(catalog) == 3
    assert catalog.labels[0] == dc.WorkspaceLabel(name="Review", color="violet")
    assert catalog.labels[2].extra_fields == {"icon": "rocket"}
    assert catalog.sync is not None
    assert (catalog.sync.mode, catalog.sync.head_seq) == ("snapshot", 3)
    assert _sent(fake) == 1


def test_a_capable_host_without_the_flag_is_refused_before_sending(connected: Connected) -> None:
    fake, client = connected("capable", features={"workspaceLabels": False})
    with pytest.raises(dc.UnsupportedByHost, match=r"features\.workspaceLabels \(Paseo 0\.5\.0 or newer\)"):
        client.workspaces.labels()
    assert _sent(fake) == 0


def test_a_selective_host_with_the_flag_has_the_catalog(connected: Connected) -> None:
    fake, client = connected("selective", version="0.6.0", features={"workspaceLabels": True})
    assert client.workspaces.labels().names() == ("Review", "Blocked")
    assert _sent(fake) == 1


def test_a_broadcast_host_that_reports_the_flag_is_still_refused(connected: Connected) -> None:
    fake, client = connected("broadcast", features={"workspaceLabels": True})
    with pytest.raises(dc.UnsupportedByHost, match=r"capable, selective hosts only; Paseo 0\.1\.65-beta\.5 is a"):
        client.workspaces.labels()
    assert _sent(fake) == 0


def test_a_reported_error_is_an_rpc_error(connected: Connected) -> None:
    fake, client = connected("capable")
    fake.on_request(LIST, lambda ctx: ctx.reply({"labels": [], "error": "label store unavailable"}))
    with pytest.raises(dc.RpcError, match="label store unavailable"):
        client.workspaces.labels()


def test_without_a_connection_the_client_cannot_tell(make_client, fakes) -> None:
    client = make_client(fakes("capable"))
    with pytest.raises(dc.NotConnected, match="list workspace labels"):
        client.workspaces.labels()


def test_catalog_entries_are_read_leniently() -> None:
    catalog = parse_label_catalog({"labels": [{"color": "red"}, {"name": "Kept"}, "junk"], "sync": "later"})
    assert catalog.names() == ("Kept",)  # entries without a name are skipped alone
    assert catalog.labels[0].color == ""
    assert catalog.sync is None
    assert parse_label_catalog({}).labels == ()
    assert parse_label_catalog({"labels": None, "newer": 1}).raw == {"labels": None, "newer": 1}
