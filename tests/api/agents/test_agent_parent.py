"""``parent=`` on ``client.agents.create`` and ``workspace.agents.create``: the ``callerAgentId``
the fake receives on each creation path, the parent label on the created agent, detaching, and
the refusal before sending on hosts without parentage."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.protocol.agents import PARENT_AGENT_ID_LABEL, AgentSnapshot
from daemon_client.protocol.codec import structure
from daemon_client.testing import FakeDaemon

from ...conftest import KINDS
from ...helpers import session_frames

Connected = Callable[..., tuple[FakeDaemon, dc.Client]]
CONFIG = dc.AgentConfig(provider="mock/ten-second-stream")
CWD = "/home/dev/projects/demo"
CREATES = ("agent.create.request", "create_agent_request")


def _creates(fake: FakeDaemon) -> list[dict[str, Any]]:
    return [frame for kind in CREATES for frame in session_frames(fake, kind)]


@pytest.mark.parametrize("kind", KINDS)
def test_a_parent_is_sent_as_caller_agent_id_on_every_host_kind(connected: Connected, kind: str) -> None:
    fake, client = connected(kind)
    parent = client.agents.create(CONFIG, cwd=CWD, title="Lead")
    if kind == "broadcast":  # 0.1.65 has no parentage: it would drop the field and make an unparented agent
        with pytest.raises(dc.UnsupportedByHost, match="create agents with a parent") as caught:
            client.agents.create(CONFIG, cwd=CWD, title="Worker", parent=parent)
        assert (caught.value.feature, caught.value.version) == ("agentDetach", "0.1.98")
        assert len(_creates(fake)) == 1
        return
    child = client.agents.create(CONFIG, cwd=CWD, title="Worker", parent=parent)
    request_type = "agent.create.request" if kind == "capable" else "create_agent_request"
    sent = session_frames(fake, request_type)[-1]
    assert sent["callerAgentId"] == parent.id
    assert "callerAgentId" not in session_frames(fake, request_type)[0]  # only when a parent is given
    snapshot = child.current()
    assert snapshot is not None
    assert snapshot.parent_agent_id == parent.id
    assert snapshot.labels == {PARENT_AGENT_ID_LABEL: parent.id}
    assert fake.agents.get(child.id)["labels"] == {PARENT_AGENT_ID_LABEL: parent.id}
    assert parent.current().parent_agent_id is None
    children = client.agents.list(filter=dc.AgentFilter(labels={PARENT_AGENT_ID_LABEL: parent.id}))
    assert [entry.agent.id for entry in children.entries] == [child.id]


@pytest.mark.parametrize("kind", KINDS)
def test_workspace_agents_take_a_parent(connected: Connected, kind: str) -> None:
    fake, client = connected(kind)
    workspace = client.workspaces.open(CWD)
    lead = client.agents.create(CONFIG, cwd=CWD, title="Lead")
    if kind == "broadcast":
        fetches = len(session_frames(fake, "fetch_workspaces_request"))
        bare = client.workspaces.ref("/home/dev/projects/other")  # no snapshot: refused before it is read
        with pytest.raises(dc.UnsupportedByHost, match=r"features\.agentDetach"):
            bare.agents.create(CONFIG, parent=lead.id)
        with pytest.raises(dc.UnsupportedByHost):
            workspace.agents.create(CONFIG, parent=lead)
        assert len(_creates(fake)) == 1
        assert len(session_frames(fake, "fetch_workspaces_request")) == fetches
        return
    child = workspace.agents.create(CONFIG, labels={"team": "infra"}, parent=lead.id)
    sent = _creates(fake)[-1]
    assert (sent["callerAgentId"], sent["workspaceId"], sent["config"]["cwd"]) == (lead.id, workspace.id, CWD)
    assert sent["labels"] == {"team": "infra"}
    assert child.current().labels == {"team": "infra", PARENT_AGENT_ID_LABEL: lead.id}


def test_a_parent_may_be_a_handle_a_snapshot_an_entry_or_an_id(connected: Connected) -> None:
    fake, client = connected("capable")
    lead = client.agents.create(CONFIG, cwd=CWD, title="Lead")
    snapshot = lead.current()
    assert snapshot is not None
    entry = client.agents.list().entries[0]
    for parent in (lead, snapshot, entry, f"  {lead.id} "):
        client.agents.create(CONFIG, cwd=CWD, parent=parent)
        assert _creates(fake)[-1]["callerAgentId"] == lead.id
    for empty in ("", "   "):
        with pytest.raises(ValueError, match="non-empty"):
            client.agents.create(CONFIG, cwd=CWD, parent=empty)
    with pytest.raises(ValueError, match="agent ID or an agent handle"):
        client.agents.create(CONFIG, cwd=CWD, parent=42)  # type: ignore[arg-type]
    assert len(_creates(fake)) == 5


def test_a_selective_host_without_detach_is_refused(connected: Connected) -> None:
    fake, client = connected("selective", features={"agentDetach": False})
    with pytest.raises(dc.UnsupportedByHost, match=r"features\.agentDetach \(Paseo 0\.1\.98 or newer\)"):
        client.agents.create(CONFIG, cwd=CWD, parent="a-parent")
    assert _creates(fake) == []


def test_detaching_removes_the_parent_label(connected: Connected) -> None:
    fake, client = connected("capable")
    lead = client.agents.create(CONFIG, cwd=CWD, title="Lead")
    child = client.agents.create(CONFIG, cwd=CWD, title="Worker", parent=lead)
    child.detach()
    assert fake.agents.get(child.id)["labels"] == {}
    assert child.refresh() is not None
    assert child.current().parent_agent_id is None


def test_the_parent_label_is_read_leniently() -> None:
    def parent_of(labels: object) -> str | None:
        return structure({"id": "a1", "labels": labels}, AgentSnapshot).parent_agent_id

    assert parent_of({PARENT_AGENT_ID_LABEL: " lead "}) == "lead"
    assert parent_of({PARENT_AGENT_ID_LABEL: "  "}) is None
    assert parent_of({}) is None
    assert parent_of("junk") is None
