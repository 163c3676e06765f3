"""Test your own code against a recorded daemon session, offline, with the bundled pytest plugin.

``@pytest.mark.daemon_recording("agents_list")`` names the recording, kept beside this file in
``recordings/test_replayed_session/agents_list.jsonl``; the ``recorded_client`` fixture is a
strict client connected to a replay of it. The recording here comes from a Paseo 0.1.65
daemon. Record your own once against a running daemon (a missing file is recorded, an
existing one replayed):

    pytest examples/test_replayed_session.py --daemon-record-mode=once --daemon-url ws://127.0.0.1:6767/ws

and from then on, without a daemon:

    pytest examples/test_replayed_session.py

A request the recording does not have fails the test with the closest recorded request and
the difference; so do recorded frames the test left unplayed.
"""

from __future__ import annotations

import pytest

import daemon_client as dc


# --- the code under test (yours) ----------------------------------------------------------
def idle_agent_titles(client: dc.Client) -> list[str]:
    """The titles of the agents that wait for work, in the daemon's order."""
    return [
        entry.agent.title or entry.agent.id for entry in client.agents.list().entries if entry.agent.status == "idle"
    ]


# --- its test -------------------------------------------------------------------------------
@pytest.mark.daemon_recording("agents_list")
def test_lists_the_idle_agents(recorded_client: dc.Client) -> None:
    assert idle_agent_titles(recorded_client) == [
        "Demo subscribe agent",
        "Walk me through the scroll anchoring code.",
    ]
