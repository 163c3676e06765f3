"""Unit-test your own code against a fake daemon, with the fixtures of the bundled pytest plugin.

``fake_daemon`` is an in-memory ``FakeDaemon`` (capable host; parametrize it indirectly
with ``"selective"`` or ``"broadcast"``), ``fake_client`` a strict client connected to it:
a raising callback or a leaked thread fails the test. Set the daemon's state through
``fake_daemon.agents``, ``.workspaces`` or ``.runs``, inject failures with ``fail_next``, or
script replies with ``on_request``.

    pytest examples/test_my_code.py
"""

from __future__ import annotations

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon


# --- the code under test (yours) ----------------------------------------------------------
def count_running_agents(client: dc.Client) -> int:
    """How many agents are working right now."""
    return len(client.agents.list(filter=dc.AgentFilter(statuses=["running"])).entries)


def ask(client: dc.Client, agent_id: str, question: str) -> str:
    """The agent's answer to ``question``, or ``"(no answer)"`` when the daemon cannot give one."""
    try:
        result = client.agents.ref(agent_id).run(question, timeout=30)
    except dc.RpcError:
        return "(no answer)"
    return result.last_message or "(no answer)"


# --- its tests ------------------------------------------------------------------------------
@pytest.mark.parametrize("fake_daemon", ["capable", "selective", "broadcast"], indirect=True)
def test_counts_only_running_agents(fake_daemon: FakeDaemon, fake_client: dc.Client) -> None:
    fake_daemon.agents.upsert(title="busy", status="running")
    fake_daemon.agents.upsert(title="done", status="idle")
    fake_daemon.agents.upsert(title="also busy", status="running")

    assert count_running_agents(fake_client) == 2


def test_counts_none_on_an_empty_daemon(fake_client: dc.Client) -> None:
    assert count_running_agents(fake_client) == 0


def test_asks_an_agent(fake_daemon: FakeDaemon, fake_client: dc.Client) -> None:
    agent = fake_daemon.agents.upsert(title="helper")  # its turns answer "The answer is 42."

    assert ask(fake_client, agent["id"], "What is the answer?") == "The answer is 42."


def test_no_answer_when_the_daemon_refuses(fake_daemon: FakeDaemon, fake_client: dc.Client) -> None:
    agent = fake_daemon.agents.upsert(title="helper")
    fake_daemon.fail_next("send_agent_message_request")  # the next such request gets an rpc_error

    assert ask(fake_client, agent["id"], "What is the answer?") == "(no answer)"
