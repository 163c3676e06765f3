"""``client.providers.commands(config)``: the slash commands of a draft configuration
(``list_commands_request`` with a ``draftConfig``), served on every host kind as 0.1.65 does
(transcript 15 L14-L15)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.api.providers.extra_calls import DRAFT_AGENT_ID
from daemon_client.testing import FakeDaemon

from ...conftest import KINDS, TRANSPORTS

Connected = Callable[..., tuple[FakeDaemon, dc.Client]]
CWD = "/home/dev/projects/demo"


@pytest.fixture
def connected(fakes, make_client) -> Connected:
    def make(kind: str = "capable", transport: str = "memory", **options: Any) -> tuple[FakeDaemon, dc.Client]:
        fake = fakes(kind, **options)
        client = make_client(fake, transport)
        client.connect()
        return fake, client

    return make


def _sent(fake: FakeDaemon) -> list[dict[str, Any]]:
    return [{k: v for k, v in f["message"].items() if k != "requestId"} for f in fake.received
            if f.message_type == "list_commands_request"]  # fmt: skip


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_commands_of_a_draft_configuration(connected: Connected, kind: str, transport: str) -> None:
    fake, client = connected(kind, transport)
    config = dc.AgentConfig(provider="claude/sonnet", mode_id="plan", feature_values={"fast": True})
    commands = client.providers.commands(config, cwd=CWD)
    assert [(c.name, c.argument_hint) for c in commands] == [("review", "[path]"), ("compact", "")]
    assert commands[0].description == "Review the current diff"
    assert all(c.kind == ("command" if kind == "capable" else None) for c in commands)  # kind: newer hosts
    assert _sent(fake) == [{
        "type": "list_commands_request",
        "agentId": DRAFT_AGENT_ID,
        "draftConfig": {"provider": "claude", "cwd": CWD, "model": "sonnet", "modeId": "plan",
                        "featureValues": {"fast": True}},
    }]  # fmt: skip
    assert fake.agents.get(DRAFT_AGENT_ID) is None  # no agent was created


@pytest.mark.parametrize("kind", KINDS)
def test_a_provider_that_cannot_list_commands_raises(connected: Connected, kind: str) -> None:
    _fake, client = connected(kind)
    with pytest.raises(dc.RpcError, match="Provider 'mock' does not support listing commands"):
        client.providers.commands(dc.AgentConfig(provider="mock", cwd=CWD))  # the config's cwd, no model


@pytest.mark.parametrize("kind", KINDS)
def test_the_config_cwd_and_cwd_argument(connected: Connected, kind: str) -> None:
    fake, client = connected(kind)
    client.providers.commands(dc.AgentConfig(provider="claude", cwd="/elsewhere"), cwd=CWD)
    assert _sent(fake)[-1]["draftConfig"] == {"provider": "claude", "cwd": CWD}  # cwd= wins
    client.providers.commands(dc.AgentConfig(provider="claude", cwd="/elsewhere"))
    assert _sent(fake)[-1]["draftConfig"] == {"provider": "claude", "cwd": "/elsewhere"}


def test_without_a_directory_or_provider_nothing_is_sent(connected: Connected) -> None:
    fake, client = connected("broadcast")
    with pytest.raises(ValueError, match="commands are read for a working directory"):
        client.providers.commands(dc.AgentConfig(provider="claude/sonnet"))
    with pytest.raises(ValueError, match="provider/model"):
        client.providers.commands(dc.AgentConfig(provider="/sonnet", cwd=CWD))
    client.ping()
    assert _sent(fake) == []


def test_an_agent_that_is_loaded_is_not_what_the_draft_asks(connected: Connected) -> None:
    fake, client = connected("capable")
    fake.settings.commands["codex"] = [{"name": "plan", "description": "Plan", "argumentHint": ""}]
    fake.agents.upsert(provider="claude", title="Loaded")
    commands = client.providers.commands(dc.AgentConfig(provider="codex", cwd=CWD))
    assert [c.name for c in commands] == ["plan"]  # the draft's provider, not a loaded agent's
