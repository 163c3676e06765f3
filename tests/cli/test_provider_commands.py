"""``daemon-client agent commands --provider PROVIDER[/MODEL]``: the slash commands a new agent
would have, on every host kind, against the fake daemon on a real loopback WebSocket."""

from __future__ import annotations

import json
import os
from collections.abc import Callable

import pytest

from daemon_client.api.providers.extra_calls import DRAFT_AGENT_ID
from daemon_client.testing import FakeDaemon

from ..conftest import KINDS
from .cli_inprocess import run


def _drafts(fake: FakeDaemon) -> list[object]:
    return [f["message"].get("draftConfig") for f in fake.received if f.message_type == "list_commands_request"]


@pytest.mark.parametrize("kind", KINDS)
def test_commands_of_a_provider(
    serve: Callable[[str], FakeDaemon], capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    fake = serve(kind)
    code, out = run(["agent", "commands", "--provider", "claude/sonnet", "--cwd", "/repo", "--url", fake.url])
    assert code == 0
    assert "/review" in out
    assert "Review the current diff" in out
    code, out = run(["agent", "commands", "--provider", "claude", "--mode", "plan", "--json", "--url", fake.url])
    assert code == 0
    assert [c["name"] for c in json.loads(out)] == ["review", "compact"]
    assert _drafts(fake) == [
        {"provider": "claude", "cwd": "/repo", "model": "sonnet"},
        {"provider": "claude", "cwd": os.getcwd(), "modeId": "plan"},  # the current directory by default
    ]
    assert {f["message"]["agentId"] for f in fake.received if f.message_type == "list_commands_request"} == {
        DRAFT_AGENT_ID
    }
    code, _ = run(["agent", "commands", "--provider", "mock", "--url", fake.url])
    assert code == 1
    assert "Provider 'mock' does not support listing commands" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["agent", "commands"],  # neither an agent nor a provider
        ["agent", "commands", "Helper", "--provider", "claude"],  # both
        ["agent", "commands", "Helper", "--cwd", "/repo"],  # --cwd without --provider
    ],
)
def test_an_agent_or_a_provider(
    serve: Callable[[str], FakeDaemon], capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    fake = serve("broadcast")
    code, _ = run([*argv, "--url", fake.url])
    assert code == 2
    assert "--provider" in capsys.readouterr().err
    assert _drafts(fake) == []
