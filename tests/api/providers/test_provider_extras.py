"""Provider extras (features, diagnostic, usage), the ``auth_header`` connection option, and how a
0.1.65 host answers newest-only calls; transcripts 16 and 18 read without loss and replayed."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.api.common.feature_gates import require_feature
from daemon_client.protocol import RpcErrorPayload, decode_frame, parse_server_info, structure
from daemon_client.protocol.agents import AgentFeature, AgentMode
from daemon_client.protocol.provider_usage import parse_usage
from daemon_client.protocol.providers import AvailableProvider, ProviderModel
from daemon_client.testing import FakeDaemon

from ...conftest import KINDS, TRANSPORTS
from ..lossless import assert_lossless, replay, session_frames, transcript

Connected = Callable[..., tuple[FakeDaemon, dc.Client]]
CWD = "/home/dev/projects/demo"
TOKEN = "Bearer proxy-Token-9f8e"


def _sent(fake: FakeDaemon, message_type: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in f["message"].items() if k != "requestId"} for f in fake.received
            if f.message_type == message_type]  # fmt: skip


# ------------------------------------------------------------------------------ providers


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_list_features(connected: Connected, kind: str, transport: str) -> None:
    fake, client = connected(kind, transport)
    features = client.providers.list_features(dc.AgentConfig(provider="claude/sonnet", mode_id="default"), cwd=CWD)
    assert [(f.type, f.id, f.value) for f in features] == [("toggle", "web_search", False)]
    assert _sent(fake, "list_provider_features_request")[-1]["draftConfig"] == {
        "provider": "claude", "cwd": CWD, "model": "sonnet", "modeId": "default"
    }  # fmt: skip
    assert client.providers.list_features(dc.AgentConfig(provider="mock", cwd=CWD)) == ()  # a model is optional
    with pytest.raises(dc.RpcError, match="No client registered for provider 'nope'"):
        client.providers.list_features(dc.AgentConfig(provider="nope/x", cwd=CWD))
    with pytest.raises(ValueError, match="working directory"):
        client.providers.list_features(dc.AgentConfig(provider="claude/sonnet"))


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_diagnostic(connected: Connected, kind: str, transport: str) -> None:
    _fake, client = connected(kind, transport)
    assert "mock" in client.providers.diagnostic("mock").lower()
    with pytest.raises(dc.RpcError) as caught:
        client.providers.diagnostic("no-such-provider")
    assert caught.value.code == "provider_diagnostic_failed"
    with pytest.raises(ValueError):
        client.providers.diagnostic("")


def test_features_of_a_draft_without_a_provider_are_refused_before_sending(connected: Connected) -> None:
    fake, client = connected("capable")
    before = len(fake.received)
    with pytest.raises(ValueError, match=r'Expected config\.provider as "provider" or "provider/model"'):
        client.providers.list_features(dc.AgentConfig(provider="/model-only"), cwd=CWD)
    assert len(fake.received) == before


def test_a_diagnostic_answer_without_text_is_a_protocol_error(connected: Connected) -> None:
    fake, client = connected("capable")
    fake.on_request("provider_diagnostic_request", lambda ctx: ctx.reply({"provider": "mock", "diagnostic": None}))
    with pytest.raises(dc.ProtocolError, match="provider_diagnostic_request answered without a diagnostic text"):
        client.providers.diagnostic("mock")


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", ["capable", "selective"])
def test_list_usage(connected: Connected, kind: str, transport: str) -> None:
    _fake, client = connected(kind, transport)
    usage = client.providers.list_usage()
    (claude,) = usage.providers
    assert (claude.provider_id, claude.plan_label) == ("claude", "Max")
    assert claude.windows[0] == dc.UsageWindow(id="session", label="Session", used_pct=75.0, tone="warning")
    assert usage.raw["providers"][0]["displayName"] == "Claude"


@pytest.mark.parametrize(("kind", "features"), [("broadcast", None), ("capable", {"providerUsageList": False})])
def test_list_usage_needs_its_flag(connected: Connected, kind: str, features: dict[str, bool] | None) -> None:
    fake, client = connected(kind, features=features)
    with pytest.raises(dc.UnsupportedByHost, match=r"features\.providerUsageList") as caught:
        client.providers.list_usage()
    assert caught.value.feature == "providerUsageList"
    assert _sent(fake, "provider.usage.list.request") == []


def test_usage_rows_are_read_leniently() -> None:
    usage = parse_usage({"providers": [{"providerId": "x", "windows": [{"id": "w", "usedPct": "n/a"}], "newer": 1},
                                       {"displayName": "no id"}], "accounts": []})  # fmt: skip
    (row,) = usage.providers  # the row without its identity is skipped alone
    assert row.extra_fields == {"newer": 1}
    assert row.windows[0].used_pct is None
    assert row.windows[0].extra_fields == {"usedPct": "n/a"}
    assert usage.raw["accounts"] == []


# ------------------------------------------------------------------------------ auth_header


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_auth_header_goes_to_the_proxy_verbatim(
    fakes, make_client, caplog: pytest.LogCaptureFixture, kind: str, transport: str
) -> None:
    fake = fakes(kind)
    client = make_client(fake, transport, auth_header=TOKEN)
    client.connect()
    (connection,) = fake.connections
    headers = {name.lower(): value for name, value in connection.headers.items()}
    assert headers["authorization"] == TOKEN
    assert connection.subprotocols in ((), [], None)  # never offered as a subprotocol
    assert "auth" not in connection.hello  # and never in hello
    client.ping()
    assert TOKEN.split()[1] not in repr(client) + caplog.text  # never logged


@pytest.mark.parametrize("kind", KINDS)
def test_a_password_wins_over_auth_header(fakes, make_client, caplog: pytest.LogCaptureFixture, kind: str) -> None:
    fake = fakes(kind, password="s3cret-Token")
    client = make_client(fake, password="s3cret-Token", auth_header=TOKEN)
    client.connect()
    (connection,) = fake.connections
    headers = {name.lower(): value for name, value in connection.headers.items()}
    assert headers["authorization"] == "Bearer s3cret-Token"
    assert "a password is set: auth_header is not sent" in caplog.text
    assert TOKEN.split()[1] not in caplog.text


@pytest.mark.parametrize("bad", ["", "  ", "Bearer x\r\nX-Evil: 1", "a\nb"])
def test_a_malformed_auth_header_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="auth_header") as caught:
        dc.Client("ws://127.0.0.1:1/ws", auth_header=bad)
    assert "Evil" not in str(caught.value)


# ------------------------------------------------------------------------------ transcript 16


def test_transcript_16_decodes_without_loss() -> None:
    seen: set[str] = set()
    for number, line in enumerate(transcript("16-provider-extras.jsonl"), start=1):
        frame = line.get("frame")
        if line["dir"] != "in" or frame is None:
            continue
        decoded = decode_frame(json.dumps(frame))
        assert isinstance(decoded, dc.SessionMessage), number
        kind, payload, where = decoded.type, decoded.payload, f"L{number}"
        seen.add(kind)
        if kind == "list_provider_features_response":
            for raw in payload.get("features", []):
                assert_lossless(structure(raw, AgentFeature), raw, where)
        elif kind == "list_available_providers_response":
            for raw in payload["providers"]:
                assert_lossless(structure(raw, AvailableProvider), raw, where)
        elif kind == "list_provider_models_response":
            for raw in payload["models"]:
                assert_lossless(structure(raw, ProviderModel), raw, where)
        elif kind == "list_provider_modes_response":
            for raw in payload["modes"]:
                assert_lossless(structure(raw, AgentMode), raw, where)
        elif kind == "rpc_error":
            assert structure(payload, RpcErrorPayload).code == "provider_diagnostic_failed"
        else:
            assert kind in {"status", "provider_diagnostic_response"}, where
    assert "list_provider_features_response" in seen


def test_transcript_16_replayed_through_the_client(connected: Connected) -> None:
    fake, client = connected("broadcast")
    replay(fake, "16-provider-extras.jsonl", "list_provider_features_request", "provider_diagnostic_request")
    recorded = dict(session_frames("16-provider-extras.jsonl", "out"))
    draft = recorded[6]["draftConfig"]
    config = dc.AgentConfig(provider=f"mock/{draft['model']}", mode_id=draft["modeId"], cwd=draft["cwd"])
    assert client.providers.list_features(config) == ()
    first = _sent(fake, "list_provider_features_request")[0]
    assert first == {k: v for k, v in recorded[6].items() if k != "requestId"}
    with pytest.raises(dc.RpcError, match="No client registered"):  # the reply without a features key
        client.providers.list_features(dc.AgentConfig(provider="no-such-provider", cwd=CWD))
    assert client.providers.diagnostic("mock").startswith("Mock load-test provider")
    assert client.providers.diagnostic("codex").splitlines()[1].strip() == "Binary: not found"
    with pytest.raises(dc.RpcError, match="Failed to get provider diagnostic") as caught:
        client.providers.diagnostic("no-such-provider")
    assert caught.value.code == "provider_diagnostic_failed"


# ------------------------------------------------------------------------------ transcript 18


def _recorded_server_info() -> dc.ServerInfo:
    (_, info) = session_frames("18-newest-only-probes.jsonl", "in")[0]
    return parse_server_info(info["payload"])


@pytest.mark.parametrize(
    ("flag", "version"),
    [
        ("providerUsageList", "0.1.98"),
        ("agentDetach", "0.1.98"),
        ("agentForkContext", "0.1.102"),
        ("workspaceMultiplicity", "0.1.97"),
    ],
)
def test_the_recorded_0_1_65_lacks_every_newest_gate(flag: str, version: str) -> None:
    with pytest.raises(dc.UnsupportedByHost) as caught:
        require_feature(_recorded_server_info(), flag, "probe", version)
    assert caught.value.feature == flag
    assert "0.1.65-beta.5" in str(caught.value)


def test_transcript_18_decodes_and_every_probe_is_refused_locally(connected: Connected) -> None:
    for number, message in session_frames("18-newest-only-probes.jsonl", "in")[1:]:
        if message["type"] == "rpc_error":
            error = structure(message["payload"], RpcErrorPayload)
            assert (error.code, error.error) == ("unknown_schema", "Unknown request schema"), number
            assert error.request_type is not None
        else:
            assert message["type"] == "create_terminal_response", number
    fake, client = connected("broadcast")
    agent = client.agents.ref("00000000-0000-4000-8000-000000000000")
    calls: list[Callable[[], object]] = [
        client.providers.list_usage,
        agent.detach,
        agent.fork_context,
        lambda: client.workspaces.create(CWD, title="x"),
        lambda: client.workspaces.ref(CWD).set_title("x"),
    ]
    for call in calls:
        with pytest.raises(dc.UnsupportedByHost):
            call()
    sent = {f.message_type for f in fake.received}
    assert not sent & {"provider.usage.list.request", "agent.detach.request", "agent.fork_context.request",
                       "workspace.create.request", "workspace.title.set.request"}  # fmt: skip


def test_a_host_that_claims_a_flag_but_answers_unknown_schema(connected: Connected) -> None:
    fake, client = connected("capable")
    fake.registry.unregister("provider.usage.list.request")  # the 0.1.65 answer behind a newer server_info
    with pytest.raises(dc.RpcError) as caught:
        client.providers.list_usage()
    assert (caught.value.code, caught.value.request_type) == ("unknown_schema", "provider.usage.list.request")
