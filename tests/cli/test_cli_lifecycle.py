"""``cancel``, ``archive`` and ``permissions`` as text on standard error, and the choice of a
permission among several. In the test process against the fake daemon on loopback."""

from __future__ import annotations

import json

import pytest

from daemon_client.testing import FakeDaemon
from daemon_client.testing.fake.runs.scripts import permission_request

from .cli_inprocess import run


def _agent(fake: FakeDaemon, **fields: object) -> str:
    return str(fake.agents.upsert(title="Worker", provider="mock", **fields)["id"])


def test_cancel_and_archive_note_what_they_did(fake: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    agent_id = _agent(fake)
    fake.runs.send(agent_id, "please hold")
    assert run(["cancel", agent_id, "--url", fake.url]) == (0, "")
    assert capsys.readouterr().err.startswith(f"daemon-client: agent {agent_id}: cancel requested (status now ")
    fake.runs.wait_until_idle(agent_id)
    assert run(["archive", agent_id, "--url", fake.url]) == (0, "")
    archived_at = fake.agents.get(agent_id)["archivedAt"]  # type: ignore[index]
    assert capsys.readouterr().err == f"daemon-client: agent {agent_id} archived at {archived_at}\n"


def test_permissions_of_an_agent_waiting_for_none(fake: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    agent_id = _agent(fake)
    assert run(["permissions", agent_id, "--url", fake.url]) == (0, "")
    assert capsys.readouterr().err == f"daemon-client: agent {agent_id} waits for no permission\n"


def test_one_of_several_permissions_must_be_named(fake: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = permission_request("mock"), permission_request("mock")
    agent_id = _agent(fake, pendingPermissions=[first, second])
    code, out = run(["permissions", agent_id, "--url", fake.url, "--json"])
    assert code == 0
    assert [p["id"] for p in json.loads(out)] == [first["id"], second["id"]]
    assert run(["permissions", agent_id, "approve", "--url", fake.url]) == (1, "")
    assert capsys.readouterr().err == (
        f"daemon-client: agent {agent_id} waits for 2 permissions; name one of {first['id']}, {second['id']}\n"
    )
    assert run(["permissions", agent_id, "deny", "perm-nope", "--url", fake.url]) == (1, "")
    assert capsys.readouterr().err == f"daemon-client: agent {agent_id} has no pending permission 'perm-nope'\n"


def test_approving_the_second_of_two_permissions(fake: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    agent_id = _agent(fake)
    fake.runs.send(agent_id, "ask permission")
    assert run(["wait", agent_id, "--url", fake.url, "-q"]) == (1, "")
    asked = fake.runs.pending_permission(agent_id)
    assert asked is not None
    fake.agents.upsert(agent_id, pendingPermissions=[permission_request("mock"), asked])
    capsys.readouterr()
    assert run(["permissions", agent_id, "approve", asked["id"], "--url", fake.url]) == (0, "")
    assert capsys.readouterr().err == f"daemon-client: agent {agent_id}: permission {asked['id']} approved\n"
    fake.runs.wait_until_idle(agent_id)
    assert fake.timeline.last_message(agent_id) == "The answer is 42."


def test_the_only_pending_permission_needs_no_id(fake: FakeDaemon, capsys: pytest.CaptureFixture[str]) -> None:
    agent_id = _agent(fake)
    fake.runs.send(agent_id, "ask permission")
    assert run(["wait", agent_id, "--url", fake.url, "-q"]) == (1, "")
    asked = fake.runs.pending_permission(agent_id)
    assert asked is not None
    capsys.readouterr()
    assert run(["permissions", agent_id, "deny", "--url", fake.url]) == (0, "")
    assert capsys.readouterr().err == f"daemon-client: agent {agent_id}: permission {asked['id']} denied\n"
    fake.runs.wait_until_idle(agent_id)
