"""``run --parent`` and ``workspaces label``: the frames the fake daemon receives, the output as
text and JSON, and the refusal with status 1 (nothing created or sent) on hosts without parent
links or workspace labels. In the test process against the fake daemon on loopback."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from daemon_client.protocol.agents import PARENT_AGENT_ID_LABEL
from daemon_client.testing import FakeDaemon

from .cli_inprocess import run

CREATES = ("create_agent_request", "agent.create.request")
SET = "workspace.label.assignment.set.request"


def _creates(fake: FakeDaemon) -> list[dict[str, object]]:
    return [dict(frame["message"]) for frame in fake.received if frame.message_type in CREATES]


@pytest.mark.parametrize("kind", ["capable", "selective"])
def test_run_with_a_parent_creates_a_child_of_it(serve: Callable[[str], FakeDaemon], kind: str) -> None:
    fake = serve(kind)
    lead = str(fake.agents.upsert(title="Lead", provider="mock")["id"])
    code, out = run(["run", "--url", fake.url, "--provider", "mock/x", "--parent", "Lead", "-q", "Go"])
    assert (code, out) == (0, "The answer is 42.\n")
    (create,) = _creates(fake)
    assert create["callerAgentId"] == lead  # the title was resolved to the agent's ID
    (child,) = [agent for agent in fake.agents.all() if agent["id"] != lead]
    assert child["labels"] == {PARENT_AGENT_ID_LABEL: lead}


def test_run_with_a_parent_on_an_old_daemon_creates_nothing(
    serve: Callable[[str], FakeDaemon], capsys: pytest.CaptureFixture[str]
) -> None:
    fake = serve("broadcast")
    fake.agents.upsert(title="Lead", provider="mock")
    assert run(["run", "--url", fake.url, "--provider", "mock/x", "--parent", "Lead", "Go"]) == (1, "")
    assert "create agents with a parent" in capsys.readouterr().err
    assert _creates(fake) == []
    assert not [frame for frame in fake.received if frame.message_type == "fetch_agent_request"]


def test_run_with_an_unknown_parent_is_status_1(
    serve: Callable[[str], FakeDaemon], capsys: pytest.CaptureFixture[str]
) -> None:
    fake = serve("capable")
    assert run(["run", "--url", fake.url, "--provider", "mock/x", "--parent", "nobody", "Go"])[0] == 1
    assert "no agent 'nobody'" in capsys.readouterr().err
    assert _creates(fake) == []


def test_workspace_label_assigns_and_removes(serve: Callable[[str], FakeDaemon]) -> None:
    fake = serve("capable")
    workspace = str(fake.workspaces.open("/home/dev/projects/demo")["id"])
    assert run(["workspaces", "label", "--url", fake.url, workspace, "Review"]) == (0, "Review\n")
    code, out = run(["workspaces", "label", "--url", fake.url, workspace, "Needs design", "--color", "amber", "--json"])
    assert code == 0
    document = json.loads(out)
    assert document == {"label": {"name": "Needs design", "color": "amber"}, "labels": ["Review", "Needs design"]}
    assert run(["workspaces", "label", "--url", fake.url, workspace, "review", "--remove"]) == (0, "Needs design\n")
    removed = run(["workspaces", "label", "--url", fake.url, workspace, "Needs design", "--remove"])
    assert removed == (0, "(no labels)\n")
    sent = [dict(frame["message"]) for frame in fake.received if frame.message_type == SET]
    assert [(m["label"], m["assigned"]) for m in sent] == [
        ({"name": "Review", "color": "violet"}, True),
        ({"name": "Needs design", "color": "amber"}, True),
        ({"name": "review", "color": "violet"}, False),
        ({"name": "Needs design", "color": "violet"}, False),
    ]
    assert fake.workspaces.get(workspace)["labels"] == []


@pytest.mark.parametrize("kind", ["selective", "broadcast"])
def test_workspace_label_on_a_daemon_without_labels_sends_nothing(
    serve: Callable[[str], FakeDaemon], kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = serve(kind)
    workspace = str(fake.workspaces.open("/home/dev/projects/demo")["id"])
    assert run(["workspaces", "label", "--url", fake.url, workspace, "Review"]) == (1, "")
    assert "assign workspace labels" in capsys.readouterr().err
    assert not [frame for frame in fake.received if frame.message_type == SET]


def test_workspace_label_refusals(serve: Callable[[str], FakeDaemon], capsys: pytest.CaptureFixture[str]) -> None:
    fake = serve("capable")
    workspace = str(fake.workspaces.open("/home/dev/projects/demo")["id"])
    assert run(["workspaces", "label", "--url", fake.url, workspace, "Review", "--remove", "--color", "red"])[0] == 2
    assert "--color applies to assigning" in capsys.readouterr().err
    assert run(["workspaces", "label", "--url", fake.url, workspace, "New", "--color", "mauve"])[0] == 1
    assert "refused" in capsys.readouterr().err
    assert run(["workspaces", "label", "--url", fake.url, "ws-unknown", "Review"])[0] == 1
    assert run(["workspaces", "label", "--url", fake.url, workspace, "  "])[0] == 2
