"""Unit-test your own code against a fake daemon, with the fixtures of the bundled pytest plugin.

``fake_daemon`` is an in-memory ``FakeDaemon`` (capable host; parametrize it indirectly
with ``"selective"`` or ``"broadcast"``), ``fake_client`` a strict client connected to it:
a raising callback or a leaked thread fails the test. The tests below show how to

- set the daemon's state (``fake_daemon.agents``, ``.workspaces``, ``.runs``);
- test callback code: record calls with ``RecordingHandler`` and wait for them, and use
  ``fake_client.flush_callbacks()`` before asserting that something did *not* happen;
- script a reply with ``on_request``, or fail the next request with ``fail_next``;
- drop the connection (``drop_connections``, ``refuse_connections``) and check what your
  code does across the reconnect;
- assert on what the client sent (``wait_for_frame``, ``received``).

    pytest examples/test_my_code.py
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler, RequestContext


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


def describe(client: dc.Client, agent_id: str) -> str:
    """``"title (status)"`` of an agent, or why there is none."""
    try:
        agent = client.agents.fetch(agent_id, timeout=5)
    except dc.RpcError as error:
        return f"(daemon error: {error.code})"
    if agent is None:
        return "(unknown agent)"
    return f"{agent.title} ({agent.status})"


def notify_when_idle(client: dc.Client, notify: Callable[[str], object]) -> dc.DirectoryObservation[Any]:
    """Call ``notify(title)`` each time an agent goes from running to idle, even when that
    happened while the connection was down (the snapshot after a reconnect shows it).
    ``notify`` runs on the client's callback thread."""
    statuses: dict[str, str | None] = {}  # only the callback thread touches it

    def seen(agent: dc.AgentSnapshot) -> None:
        if statuses.get(agent.id) == "running" and agent.status == "idle":
            notify(agent.title or agent.id)
        statuses[agent.id] = agent.status

    def snapshot(result: dc.AgentListResult) -> None:  # first, and after every reconnect
        for entry in result.entries:
            seen(entry.agent)

    def update(message: dc.DirectoryMessage[dc.AgentUpdate]) -> None:
        if message.payload.agent is not None:
            seen(message.payload.agent)

    observation: dc.DirectoryObservation[Any] = client.agents.list(subscribe=True).subscription
    observation.subscribe(snapshot=snapshot, update=update)
    return observation


# --- its tests: state, runs and injected failures ---------------------------------------------
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


# --- callback code: RecordingHandler and flush_callbacks ----------------------------------------
def test_notifies_when_an_agent_goes_idle(fake_daemon: FakeDaemon, fake_client: dc.Client) -> None:
    build = fake_daemon.agents.upsert(title="build", status="running")
    docs = fake_daemon.agents.upsert(title="docs", status="running")
    notified = RecordingHandler[str]("notified")  # records each call; a test thread waits on it
    notify_when_idle(fake_client, notified)

    fake_daemon.agents.upsert(docs["id"], title="docs, second draft")  # still running
    fake_daemon.agents.upsert(build["id"], status="idle")

    assert notified.wait_for(1) == ["build"]
    # Every callback queued so far has run once this returns: a second notification would
    # be recorded by now, so its absence means something.
    assert fake_client.flush_callbacks()
    assert notified.items == ["build"]


# --- the connection dropped --------------------------------------------------------------------
@pytest.mark.parametrize("fake_daemon", ["capable", "selective", "broadcast"], indirect=True)
def test_notifies_a_change_made_while_disconnected(fake_daemon: FakeDaemon, fake_client: dc.Client) -> None:
    build = fake_daemon.agents.upsert(title="build", status="running")
    notified = RecordingHandler[str]("notified")
    notify_when_idle(fake_client, notified)
    states = RecordingHandler[tuple[dc.ConnectionState, dc.ConnectionState, str]]("states")
    fake_client.on_state_change(states)  # records (old, new, reason)

    fake_daemon.refuse_connections = True  # the client cannot come back before we let it
    fake_daemon.drop_connections()
    states.wait_for(1, predicate=lambda change: change[1] is dc.ConnectionState.DISCONNECTED)
    fake_daemon.agents.upsert(build["id"], status="idle")  # while the client is away
    fake_daemon.refuse_connections = False

    assert notified.wait_for(1) == ["build"]  # seen in the snapshot taken after the reconnect
    assert fake_client.flush_callbacks()
    assert notified.items == ["build"]


# --- scripted replies: on_request -----------------------------------------------------------------
def test_describes_an_agent(fake_daemon: FakeDaemon, fake_client: dc.Client) -> None:
    agent = fake_daemon.agents.upsert(title="Fix the build", status="running")

    assert describe(fake_client, agent["id"]) == "Fix the build (running)"


def test_describes_an_agent_the_daemon_does_not_know(fake_daemon: FakeDaemon, fake_client: dc.Client) -> None:
    asked: list[str] = []

    def reply(ctx: RequestContext) -> None:  # runs on the fake's connection thread
        asked.append(ctx.message["agentId"])
        ctx.reply({"agent": None, "error": None})

    fake_daemon.on_request("fetch_agent_request", reply)

    assert describe(fake_client, "a-42") == "(unknown agent)"
    assert asked == ["a-42"]


def test_describes_a_daemon_error(fake_daemon: FakeDaemon, fake_client: dc.Client) -> None:
    fake_daemon.on_request("fetch_agent_request", lambda ctx: ctx.rpc_error("store unavailable", code="store_busy"))

    assert describe(fake_client, "a-42") == "(daemon error: store_busy)"


# --- what the client sent ---------------------------------------------------------------------------
def test_sends_the_question_as_it_is(fake_daemon: FakeDaemon, fake_client: dc.Client) -> None:
    agent = fake_daemon.agents.upsert(title="helper")

    ask(fake_client, agent["id"], "  What is the answer?\n")

    frame = fake_daemon.wait_for_frame("send_agent_message_request")  # a session frame, decoded
    assert frame["message"]["agentId"] == agent["id"]
    assert frame["message"]["text"] == "  What is the answer?\n"
    sent = [received.message_type for received in fake_daemon.received]  # every frame, in order
    assert sent.count("send_agent_message_request") == 1
