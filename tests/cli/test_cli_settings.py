"""``daemon-client config get/set`` and ``daemon-client agent set-mode/set-model/commands`` against
the fake daemon on a real loopback WebSocket."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from daemon_client.testing import FakeDaemon

from ..conftest import KINDS
from .cli_inprocess import run


@pytest.mark.parametrize("kind", KINDS)
def test_config_get_and_set(serve: Callable[[str], FakeDaemon], capsys: pytest.CaptureFixture[str], kind: str) -> None:
    fake = serve(kind)
    code, out = run(["config", "get", "--url", fake.url])
    assert code == 0
    assert json.loads(out) == fake.daemon_config.current
    code, out = run(["config", "set", "mcp.injectIntoAgents", "true", "--url", fake.url])
    assert (code, out) == (0, "mcp.injectIntoAgents = true\n")
    assert fake.daemon_config.persisted["mcp"]["injectIntoAgents"] is True
    code, out = run(["config", "get", "mcp.injectIntoAgents", "--url", fake.url])
    assert (code, out) == (0, "true\n")
    code, _ = run(["config", "set", "providers.claude", '{"enabled": false}', "--url", fake.url])
    assert code == 0
    assert fake.daemon_config.current["providers"]["claude"] == {"enabled": False}
    code, _ = run(["config", "get", "no.such.key", "--url", fake.url])
    assert code == 1
    assert "has no 'no.such.key'" in capsys.readouterr().err


def test_config_set_an_unknown_key(serve: Callable[[str], FakeDaemon], capsys: pytest.CaptureFixture[str]) -> None:
    fake = serve("broadcast")
    code, _ = run(["config", "set", "relay.enabled", "true", "--url", fake.url])
    assert code == 1
    err = capsys.readouterr().err
    assert "does not know relay" in err
    assert "--allow-unknown" in err
    code, out = run(["config", "set", "relay.enabled", "true", "--allow-unknown", "--url", fake.url])
    assert (code, out) == (0, "relay.enabled = true\n")  # echoed, as 0.1.65 does, but not saved
    assert "relay" not in fake.daemon_config.persisted
    code, _ = run(["config", "set", "mcp..x", "1", "--url", fake.url])
    assert code == 2
    assert "bad config key" in capsys.readouterr().err


@pytest.mark.parametrize("kind", KINDS)
def test_agent_set_mode_set_model_and_commands(
    serve: Callable[[str], FakeDaemon], capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    fake = serve(kind)
    agent = fake.agents.upsert(provider="claude", model="sonnet", title="Helper")
    code, out = run(["agent", "set-mode", "Helper", "plan", "--url", fake.url])
    assert (code, out) == (0, "Helper: mode plan\n")
    assert fake.agents.get(agent["id"])["currentModeId"] == "plan"
    code, out = run(["agent", "set-model", agent["id"][:8], "opus", "--url", fake.url])
    assert (code, out) == (0, "Helper: model opus\n")
    code, out = run(["agent", "set-model", "Helper", "default", "--url", fake.url])
    assert (code, out) == (0, "Helper: model the provider default\n")
    code, out = run(["agent", "commands", "Helper", "--url", fake.url])
    assert code == 0
    assert "/review" in out
    assert "Review the current diff" in out
    code, out = run(["agent", "commands", "Helper", "--json", "--url", fake.url])
    assert [c["name"] for c in json.loads(out)] == ["review", "compact"]
    fake.agents.upsert(provider="mock", title="Mocked")
    code, _ = run(["agent", "commands", "Mocked", "--url", fake.url])
    assert code == 1
    assert "Agent does not support listing commands" in capsys.readouterr().err
    code, _ = run(["agent", "set-mode", "nobody", "plan", "--url", fake.url])
    assert code == 1


def test_agent_settings_print_the_hosts_notice(serve: Callable[[str], FakeDaemon]) -> None:
    fake = serve("capable")
    fake.settings.notice = {"type": "info", "message": "Applies to the next turn"}
    fake.agents.upsert(provider="claude", title="Noticed")
    code, out = run(["agent", "set-model", "Noticed", "opus", "--url", fake.url])
    assert code == 0
    assert "note (info): Applies to the next turn" in out


def test_config_set_takes_a_value_that_is_not_json_as_text(serve: Callable[[str], FakeDaemon]) -> None:
    fake = serve("broadcast")
    code, out = run(["config", "set", "relay.name", "plain text", "--allow-unknown", "--url", fake.url])
    assert (code, out) == (0, 'relay.name = "plain text"\n')


def test_an_agent_the_daemon_answers_with_nothing_is_unknown(
    serve: Callable[[str], FakeDaemon], capsys: pytest.CaptureFixture[str]
) -> None:
    fake = serve("capable")
    fake.on_request("fetch_agent_request", lambda ctx: ctx.reply({"agent": None, "project": None, "error": None}))
    assert run(["agent", "set-mode", "ghost", "plan", "--url", fake.url]) == (1, "")
    assert capsys.readouterr().err == "daemon-client: no agent 'ghost'\n"
    assert run(["wait", "ghost", "--url", fake.url]) == (1, "")
    assert capsys.readouterr().err == (
        "daemon-client: no agent 'ghost' (give an ID, a unique ID prefix or an exact title)\n"
    )
