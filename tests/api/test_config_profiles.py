"""``client.config.add_agent_profiles()``: one patch-only ``addAgentProfilesIfMissing`` write,
gated on ``features.agentProfileWorkflows``, on every host kind; the typed profile's wire form;
``DaemonConfig.value()`` with a default for keys older hosts leave out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.protocol.config import parse_config, unapplied_patch_keys, unknown_patch_keys
from daemon_client.testing import FakeDaemon

from ..conftest import KINDS

Connected = Callable[..., tuple[FakeDaemon, dc.Client]]

PLANNER = dc.AgentProfile(
    id="planner",
    name="Planner",
    provider="codex",
    model="gpt-5",
    mode_id="read-only",
    thinking_option_id="high",
    feature_values={"plan_mode": True},
    notes="plans, never edits",
    post_approval_mode_id="auto",
)
PLANNER_WIRE = {
    "id": "planner",
    "name": "Planner",
    "provider": "codex",
    "model": "gpt-5",
    "modeId": "read-only",
    "thinkingOptionId": "high",
    "featureValues": {"plan_mode": True},
    "notes": "plans, never edits",
    "postApprovalModeId": "auto",
}


def _config_frames(fake: FakeDaemon, since: int) -> list[tuple[str | None, dict[str, Any]]]:
    return [
        (frame.message_type, frame["message"])
        for frame in fake.received[since:]
        if frame.message_type in ("get_daemon_config_request", "set_daemon_config_request")
    ]


def test_the_wire_form_of_a_profile() -> None:
    assert PLANNER.to_wire() == PLANNER_WIRE
    bare = dc.AgentProfile(id="p", name="P", provider="claude", extra_fields={"newerKey": 1})
    assert bare.to_wire() == {"newerKey": 1, "id": "p", "name": "P", "provider": "claude"}
    with pytest.raises(ValueError, match="name"):
        dc.AgentProfile(id="p", name=" ", provider="claude").to_wire()
    with pytest.raises(ValueError, match="model"):
        dc.AgentProfile(id="p", name="P", provider="claude", model=3).to_wire()  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", KINDS)
def test_add_agent_profiles_sends_one_patch_where_the_host_has_profile_workflows(
    connected: Connected, kind: str
) -> None:
    fake, client = connected(kind)
    before = len(fake.received)
    if kind != "capable":  # the selective (0.1.108) and broadcast (0.1.65) fakes lack the flag
        with pytest.raises(dc.UnsupportedByHost, match="Update the host to add agent profiles") as caught:
            client.config.add_agent_profiles([PLANNER])
        assert (caught.value.feature, caught.value.version) == ("agentProfileWorkflows", "0.11.0")
        assert not isinstance(caught.value, dc.UnknownConfigKeys)
        client.ping()  # anything sent before it has reached the fake
        assert _config_frames(fake, before) == []  # nothing sent, nothing read
        assert "agentProfiles" not in fake.daemon_config.current
        return
    result = client.config.add_agent_profiles([PLANNER])
    frames = _config_frames(fake, before)
    assert [request_type for request_type, _ in frames] == ["set_daemon_config_request"]  # no read before
    assert frames[0][1]["config"] == {"addAgentProfilesIfMissing": [PLANNER_WIRE]}
    assert result.agent_profiles == (PLANNER_WIRE,)
    assert fake.daemon_config.persisted["agentProfiles"] == [PLANNER_WIRE]


def test_a_profile_whose_id_is_taken_is_kept_as_it_was(connected: Connected) -> None:
    fake, client = connected("capable")
    existing = {"id": "planner", "name": "My planner", "provider": "claude"}
    fake.daemon_config.patch({"agentProfiles": [existing]})
    reviewer = {"id": "reviewer", "name": "Reviewer", "provider": "claude", "modeId": "plan"}
    result = client.config.add_agent_profiles([PLANNER, reviewer])  # a wire mapping is accepted too
    assert result.agent_profiles == (existing, reviewer)
    assert client.config.get().value("agentProfiles") == [existing, reviewer]
    again = client.config.add_agent_profiles([])  # nothing to add: still one frame, no change
    assert again.agent_profiles == (existing, reviewer)


def test_a_capable_host_without_the_flag_refuses(connected: Connected) -> None:
    fake, client = connected("capable", features={"agentProfileWorkflows": False})
    before = len(fake.received)
    with pytest.raises(dc.UnsupportedByHost, match=r"features\.agentProfileWorkflows"):
        client.config.add_agent_profiles([PLANNER])
    client.ping()
    assert _config_frames(fake, before) == []


def test_a_selective_host_reporting_the_flag_is_served(connected: Connected) -> None:
    fake, client = connected("selective", features={"agentProfileWorkflows": True})
    result = client.config.add_agent_profiles([PLANNER])
    assert result.agent_profiles == (PLANNER_WIRE,)
    assert fake.daemon_config.persisted["agentProfiles"] == [PLANNER_WIRE]


def test_not_connected_cannot_tell(fakes, make_client) -> None:
    client = make_client(fakes("capable"))
    with pytest.raises(dc.NotConnected):
        client.config.add_agent_profiles([PLANNER])


@pytest.mark.parametrize(
    ("profiles", "error"),
    [
        ([PLANNER, PLANNER], ValueError),  # the same ID twice
        ([{"id": "p", "name": "P"}], ValueError),  # no provider
        ([{"id": "p", "name": "P", "provider": "codex", "notes": float("nan")}], ValueError),  # not JSON
        (["planner"], TypeError),
        (PLANNER, TypeError),  # one profile, not a list
    ],
)
def test_an_invalid_profile_is_refused_before_sending(connected: Connected, profiles: Any, error: type) -> None:
    fake, client = connected("capable")
    before = len(fake.received)
    with pytest.raises(error):
        client.config.add_agent_profiles(profiles)
    client.ping()
    assert _config_frames(fake, before) == []


def test_a_daemon_that_drops_the_operation_is_not_applied(connected: Connected) -> None:
    fake, client = connected("capable")
    fake.daemon_config.profile_workflows = False  # reports the flag, ignores the operation
    with pytest.raises(dc.RpcError) as caught:
        client.config.add_agent_profiles([PLANNER])
    assert caught.value.code == "config_not_applied"
    assert "addAgentProfilesIfMissing.planner" in str(caught.value)


def test_the_operation_and_profiles_in_the_key_checks() -> None:
    current = {"mcp": {"injectIntoAgents": False}, "providers": {}}
    assert unknown_patch_keys({"addAgentProfilesIfMissing": []}, current, {"agentProfileWorkflows": True}) == (
        "addAgentProfilesIfMissing",
    )  # an operation: patch() sends it only when forced
    added = {"agentProfiles": [{"id": "a"}, {"id": "b"}]}
    patch = {"addAgentProfilesIfMissing": [{"id": "a"}, {"id": "c"}]}
    assert unapplied_patch_keys(patch, added) == ("addAgentProfilesIfMissing.c",)
    assert unapplied_patch_keys(patch, {}) == ("addAgentProfilesIfMissing.a", "addAgentProfilesIfMissing.c")


# ------------------------------------------------------------------ defaults of missing keys


@pytest.mark.parametrize("kind", KINDS)
def test_value_gives_the_default_for_a_key_the_host_leaves_out(connected: Connected, kind: str) -> None:
    _fake, client = connected(kind)
    config = client.config.get()
    if kind == "broadcast":  # 0.1.65: mcp and providers only; the model keeps None
        assert config.browser_tools is None
        assert config.append_system_prompt is None
        assert config.enable_terminal_agent_hooks is None
        assert config.metadata_generation is None
        assert config.value("browserTools.enabled", False) is False
        assert config.value("appendSystemPrompt", "") == ""
        assert config.value("metadataGeneration.providers", []) == []
    else:
        assert config.browser_tools is not None
        assert config.value("browserTools.enabled", True) is False  # the host's value wins
    assert config.value("enableTerminalAgentHooks", False) is False
    assert config.value("mcp.injectIntoAgents", True) is False
    assert config.value("mcp.injectIntoAgents.deeper", "d") == "d"  # a path through a scalar


def test_value_without_a_default_is_none() -> None:
    config = parse_config({"mcp": {"injectIntoAgents": True}, "appendSystemPrompt": ""})
    assert config.value("browserTools") is None
    assert config.value("appendSystemPrompt", "x") == ""  # present though falsy: not the default
    assert config.value("mcp") == {"injectIntoAgents": True}
