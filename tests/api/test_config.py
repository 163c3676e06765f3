"""``client.config``: get, patch (with the unknown-key policy), subscribe with its restore after
a reconnect, on every host kind over memory and loopback; transcript 14 read without loss. The
paths a live daemon rarely takes (reads that overlap, cannot be sent or answer after a
disconnect; configurations the parser refuses; changes for a released follower) are driven
through the manager with a scripted link, a parser that refuses marked configurations and a
manual callback queue."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.protocol import RpcErrorPayload, decode_frame, structure
from daemon_client.protocol.config import parse_config, unapplied_patch_keys, unknown_patch_keys
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.models import SessionMessage
from daemon_client.protocol.providers import parse_update
from daemon_client.runtime.dispatch import Dispatcher
from daemon_client.subscriptions.config import ConfigManager
from daemon_client.subscriptions.lifecycle import SubscriptionLink
from daemon_client.testing import FakeDaemon, RecordingHandler

from ..conftest import KINDS, TRANSPORTS
from .lossless import assert_lossless, session_frames, transcript

Connected = Callable[..., tuple[FakeDaemon, dc.Client]]


def _sent(fake: FakeDaemon, message_type: str) -> list[dict[str, Any]]:
    return [f["message"] for f in fake.received if f.message_type == message_type]


def _settle(client: dc.Client) -> None:
    client.ping()
    assert client.flush_callbacks()


# ------------------------------------------------------------------------------ get and patch


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_get_and_patch(connected: Connected, kind: str, transport: str) -> None:
    fake, client = connected(kind, transport)
    config = client.config.get()
    assert config.mcp is not None
    assert config.mcp.inject_into_agents is False
    assert config.to_wire() == fake.daemon_config.current
    assert (config.browser_tools is None) is (kind == "broadcast")  # 0.1.65 has mcp and providers only
    result = client.config.patch({"mcp": {"injectIntoAgents": True}})
    assert result.mcp is not None
    assert result.mcp.inject_into_agents is True
    assert fake.daemon_config.persisted["mcp"]["injectIntoAgents"] is True
    assert client.config.get().value("mcp.injectIntoAgents") is True
    assert _sent(fake, "set_daemon_config_request")[-1]["config"] == {"mcp": {"injectIntoAgents": True}}


@pytest.mark.parametrize("kind", KINDS)
def test_patch_merges_objects_and_replaces_arrays(connected: Connected, kind: str) -> None:
    fake, client = connected(kind)
    client.config.patch({"providers": {"claude": {"enabled": False}}})
    models = [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}]
    client.config.patch({"providers": {"claude": {"additionalModels": models}}})
    result = client.config.patch({"providers": {"claude": {"additionalModels": models[1:]}}})
    claude = result.providers["claude"]
    assert claude.enabled is False  # merged, not replaced
    assert [m.id for m in claude.additional_models or ()] == ["b"]  # arrays replace
    assert fake.daemon_config.persisted["providers"]["claude"]["enabled"] is False


@pytest.mark.parametrize("kind", KINDS)
def test_a_value_of_the_wrong_type_fails_the_daemons_schema(connected: Connected, kind: str) -> None:
    fake, client = connected(kind)
    with pytest.raises(dc.RpcError) as caught:
        client.config.patch({"mcp": {"injectIntoAgents": "yes"}})
    assert caught.value.code == "unknown_schema"
    assert caught.value.request_type == "set_daemon_config_request"
    assert client.config.get().value("mcp.injectIntoAgents") is False  # unchanged
    assert fake.daemon_config.persisted["mcp"] == {"injectIntoAgents": False}


@pytest.mark.parametrize(
    ("kind", "patch", "unknown"),
    [
        ("broadcast", {"relay": {"enabled": True}}, ("relay",)),
        ("broadcast", {"browserTools": {"enabled": True}, "mcp": {"injectIntoAgents": True}}, ("browserTools",)),
        ("selective", {"relay": {"enabled": True}}, ("relay",)),
        ("capable", {"mcp": {"injectIntoAgents": True, "newerSwitch": 1}}, ("mcp.newerSwitch",)),
        ("capable", {"newerSection": {}}, ("newerSection",)),
    ],
)
def test_a_key_the_host_does_not_report_is_refused_before_sending(
    connected: Connected, kind: str, patch: dict[str, Any], unknown: tuple[str, ...]
) -> None:
    fake, client = connected(kind)
    with pytest.raises(dc.UnknownConfigKeys) as caught:
        client.config.patch(patch)
    assert caught.value.keys == unknown
    assert isinstance(caught.value, dc.UnsupportedByHost)
    assert "allow_unknown_keys=True" in str(caught.value)
    assert _sent(fake, "set_daemon_config_request") == []  # nothing was written


def test_a_forced_unknown_key_on_0_1_65_is_echoed_but_not_saved(connected: Connected) -> None:
    fake, client = connected("broadcast")
    result = client.config.patch({"relay": {"enabled": True}}, allow_unknown_keys=True)
    assert result.value("relay.enabled") is True  # echoed back, as 0.1.65 does ...
    assert "relay" not in fake.daemon_config.persisted  # ... without saving it
    assert _sent(fake, "get_daemon_config_request") == []  # forcing skips the check's read


def test_a_forced_unknown_key_a_newer_host_drops_is_not_applied(connected: Connected) -> None:
    fake, client = connected("capable")
    with pytest.raises(dc.RpcError) as caught:
        client.config.patch({"newerSection": {"on": True}}, allow_unknown_keys=True)
    assert caught.value.code == "config_not_applied"
    assert "newerSection" in str(caught.value)
    assert "newerSection" not in fake.daemon_config.current


@pytest.mark.parametrize(("relay_config", "known"), [(True, True), (False, False)])
def test_relay_is_known_by_its_feature_flag(connected: Connected, relay_config: bool, known: bool) -> None:
    _fake, client = connected("capable", features={"relayConfig": relay_config})
    if known:
        result = client.config.patch({"relay": {"enabled": True}})
        assert result.relay is not None
        assert result.relay.enabled is True
        assert client.config.get().value("relay.enabled") is True
    else:
        with pytest.raises(dc.UnknownConfigKeys):
            client.config.patch({"relay": {"enabled": True}})


def test_remove_providers_is_sent_only_when_forced_and_checked(connected: Connected) -> None:
    _fake, client = connected("capable")
    client.config.patch({"providers": {"custom": {"enabled": True}}})
    with pytest.raises(dc.UnknownConfigKeys) as caught:
        client.config.patch({"removeProviders": ["custom"]})
    assert caught.value.keys == ("removeProviders",)
    result = client.config.patch({"removeProviders": ["custom"]}, allow_unknown_keys=True)
    assert "custom" not in result.providers


def test_remove_providers_on_0_1_65_is_not_applied(connected: Connected) -> None:
    _fake, client = connected("broadcast")
    client.config.patch({"providers": {"custom": {"enabled": True}}})
    with pytest.raises(dc.RpcError) as caught:
        client.config.patch({"removeProviders": ["custom"]}, allow_unknown_keys=True)
    assert caught.value.code == "config_not_applied"
    assert "removeProviders.custom" in str(caught.value)


@pytest.mark.parametrize("patch", [["mcp"], {1: True}, {"mcp": {1, 2}}, {"x": float("nan")}])
def test_a_patch_that_is_not_a_json_object_is_refused(connected: Connected, patch: Any) -> None:
    fake, client = connected("capable")
    with pytest.raises(ValueError, match="config patch"):
        client.config.patch(patch)
    assert _sent(fake, "get_daemon_config_request") == []


def test_the_key_checks() -> None:
    current = {"mcp": {"injectIntoAgents": False}, "providers": {}}
    assert unknown_patch_keys({"providers": {"x": {"anything": 1}}}, current) == ()
    assert unknown_patch_keys({"mcp": {"a": 1, "injectIntoAgents": True}}, current) == ("mcp.a",)
    assert unknown_patch_keys({"agentProfiles": []}, current, {"agentProfiles": True}) == ()
    assert unknown_patch_keys({"agentProfiles": []}, current, {}) == ("agentProfiles",)
    assert unapplied_patch_keys({"mcp": {"injectIntoAgents": True}}, current) == ("mcp.injectIntoAgents",)
    assert unapplied_patch_keys({"providers": {"x": {"enabled": True}}}, current) == ("providers.x",)
    assert unapplied_patch_keys({"mcp": {}}, current) == ()


# ------------------------------------------------------------------------------ subscribe


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS)
def test_subscribe_hears_every_change(connected: Connected, make_client, kind: str, transport: str) -> None:
    fake, client = connected(kind, transport)
    changes = RecordingHandler[dc.DaemonConfig]("changes")
    subscription = client.config.subscribe(changes)
    ready = subscription.ready.result(5)
    assert isinstance(ready, dc.DaemonConfig)
    assert ready.value("mcp.injectIntoAgents") is False
    other = make_client(fake, transport)
    other.connect()
    other.config.patch({"mcp": {"injectIntoAgents": True}})  # another client's change
    (change,) = changes.wait_for(1)
    assert change.value("mcp.injectIntoAgents") is True
    client.config.patch({"mcp": {"injectIntoAgents": False}})  # and this client's own
    assert changes.wait_for(2)[1].value("mcp.injectIntoAgents") is False
    client.config.patch({})  # a patch that changes nothing pushes nothing
    _settle(client)
    assert len(changes) == 2
    subscription.release()
    fake.daemon_config.patch({"mcp": {"injectIntoAgents": True}})
    _settle(client)
    assert len(changes) == 2  # released: nothing more
    assert subscription.released


def test_a_change_made_while_disconnected_is_delivered_after_the_reconnect(connected: Connected) -> None:
    fake, client = connected("broadcast")
    changes = RecordingHandler[dc.DaemonConfig]("changes")
    restored = RecordingHandler[object]("restored")
    subscription = client.config.subscribe(changes, on_restored=restored)
    subscription.ready.result(5)
    fake.refuse_connections = True
    fake.drop_connections()
    fake.wait_for_connections(0)
    fake.daemon_config.patch({"mcp": {"injectIntoAgents": True}})  # pushed to nobody
    fake.refuse_connections = False
    restored.wait_for(1, timeout=10)
    (change,) = changes.items  # delivered before on_restored
    assert change.value("mcp.injectIntoAgents") is True
    assert len(_sent(fake, "get_daemon_config_request")) == 2  # the baseline read and the catch-up


def test_a_reconnect_without_a_change_delivers_nothing(connected: Connected) -> None:
    fake, client = connected("capable")
    changes = RecordingHandler[dc.DaemonConfig]("changes")
    restored = RecordingHandler[object]("restored")
    client.config.subscribe(changes, on_restored=restored).ready.result(5)
    fake.drop_connections()
    restored.wait_for(1, timeout=10)
    _settle(client)
    assert changes.items == []


def test_subscribe_before_connect_becomes_ready_on_connect(fakes, make_client) -> None:
    fake = fakes("selective")
    client = make_client(fake)
    subscription = client.config.subscribe(lambda config: None)
    assert not subscription.ready.done()
    client.connect()
    assert subscription.ready.result(5).value("mcp.injectIntoAgents") is False


def test_close_fails_a_pending_subscription(fakes, make_client) -> None:
    client = make_client(fakes("capable"))
    subscription = client.config.subscribe(lambda config: None)
    client.close()
    with pytest.raises(dc.ClientClosed):
        subscription.ready.result(5)


def test_a_failed_first_read_fails_the_subscription(connected: Connected) -> None:
    fake, client = connected("capable")
    fake.fail_next("get_daemon_config_request", "boom")
    errors = RecordingHandler[BaseException]("errors")
    subscription = client.config.subscribe(lambda config: None, on_error=errors)
    with pytest.raises(dc.RpcError, match="boom"):
        subscription.ready.result(5)
    assert isinstance(errors.wait_for(1)[0], dc.RpcError)
    assert subscription.released


def test_a_0_1_65_patch_reprobes_the_providers(connected: Connected) -> None:
    _fake, client = connected("broadcast")
    updates = RecordingHandler[dc.ProviderSnapshotUpdate]("providers")
    client.providers.subscribe(updates).ready.result(5)
    client.config.patch({"mcp": {"injectIntoAgents": True}})
    updates.wait_for(4)  # loading, then one update per provider
    assert updates.items[0].loading
    assert not updates.items[-1].loading


# ------------------------------------------------------------------------------ transcript 14


def test_transcript_14_decodes_without_loss() -> None:
    seen: dict[str, int] = {}
    for number, line in enumerate(transcript("14-config.jsonl"), start=1):
        frame = line.get("frame")
        if line["dir"] != "in" or frame is None:
            continue
        decoded = decode_frame(json.dumps(frame))
        assert isinstance(decoded, dc.SessionMessage), number
        payload = decoded.payload
        seen[decoded.type] = seen.get(decoded.type, 0) + 1
        if decoded.type in ("get_daemon_config_response", "set_daemon_config_response") or (
            decoded.type == "status" and payload.get("status") == "daemon_config_changed"
        ):
            config = parse_config(payload["config"])
            assert_lossless(config, payload["config"], f"L{number}")
            assert config.to_wire() == payload["config"]
        elif decoded.type == "providers_snapshot_update":
            assert len(parse_update(payload).entries) == len(payload["entries"]), number
        elif decoded.type == "rpc_error":
            error = structure(payload, RpcErrorPayload)
            assert (error.code, error.request_type) == ("unknown_schema", "set_daemon_config_request")
        else:
            assert decoded.type == "status", number
            assert payload["status"] == "server_info", number
    assert seen["providers_snapshot_update"] == 14
    assert seen["get_daemon_config_response"] == 3


def test_transcript_14_requests_are_what_the_client_sends(connected: Connected) -> None:
    fake, client = connected("broadcast")
    recorded = [m for _, m in session_frames("14-config.jsonl", "out")]
    client.config.get()
    client.config.patch({"mcp": {"injectIntoAgents": True}}, allow_unknown_keys=True)
    ours = [f["message"] for f in fake.received if f.get("type") == "session" and "config" in f.message_type]
    strip = [{k: v for k, v in m.items() if k != "requestId"} for m in ours]
    assert strip[0] == {k: v for k, v in recorded[0].items() if k != "requestId"}
    assert strip[1] == {k: v for k, v in recorded[1].items() if k != "requestId"}


def test_transcript_14_replayed_reads_and_errors(connected: Connected) -> None:
    fake, client = connected("broadcast")
    replies = {m["type"]: m["payload"] for _, m in session_frames("14-config.jsonl", "in")}
    recorded = replies["get_daemon_config_response"]
    fake.on_request("get_daemon_config_request", lambda ctx: ctx.reply({"config": recorded["config"]}))
    assert client.config.get().to_wire() == recorded["config"]
    error = replies["rpc_error"]
    fake.on_request("set_daemon_config_request", lambda ctx: ctx.rpc_error(error["error"], error["code"]))
    with pytest.raises(dc.RpcError, match="Unknown request schema") as caught:
        client.config.patch({"mcp": {"injectIntoAgents": "yes"}}, allow_unknown_keys=True)
    assert caught.value.code == "unknown_schema"


def test_a_first_read_without_a_configuration_fails_the_subscription(connected: Connected) -> None:
    fake, client = connected("broadcast")
    fake.on_request("get_daemon_config_request", lambda ctx: ctx.reply({"config": "broken"}))
    subscription = client.config.subscribe(lambda config: None)
    with pytest.raises(dc.ProtocolError, match="without a configuration"):
        subscription.ready.result(5)
    assert subscription.released
    with pytest.raises(dc.ProtocolError, match="not an object"):
        client.config.get()


def test_subscription_handles_release_every_way(fakes, make_client, caplog: pytest.LogCaptureFixture) -> None:
    fake = fakes("capable")
    client = make_client(fake)
    early = client.config.subscribe(lambda config: None)
    assert "pending" in repr(early)
    early.release()  # released before it was ever ready
    with pytest.raises(dc.SubscriptionReleased):
        early.ready.result(5)
    early.release()  # harmless twice
    client.connect()
    changes = RecordingHandler[dc.DaemonConfig]("changes")
    with client.config.subscribe(changes) as scoped:
        scoped.ready.result(5)
        assert "live" in repr(scoped)
        fake.push("status", {"status": "daemon_config_changed"})  # no configuration: skipped
        fake.push("status", {"status": "restart_requested"})  # another status: not this family's
        fake.daemon_config.patch({"mcp": {"injectIntoAgents": True}})
        changes.wait_for(1)
    assert "released" in repr(scoped)
    called = client.config.subscribe(changes)
    called.ready.result(5)
    called()  # calling it releases it
    fake.daemon_config.patch({"mcp": {"injectIntoAgents": False}})
    _settle(client)
    assert len(changes) == 1
    assert "daemon_config_changed without a configuration skipped" in caplog.text


# ------------------------------------------------------------------------------ the manager, scripted

Settle = Callable[[dict[str, Any] | None, BaseException | None], None]


def _parse(config: Mapping[str, Any]) -> dict[str, Any]:
    if config.get("broken"):
        raise dc.ProtocolError("the configuration is broken")
    return dict(config)


class ScriptedLink:
    """A link whose ``submit`` keeps each configuration read's settle hook for the test to answer
    (or raises ``fail``), with a manual callback queue."""

    def __init__(self) -> None:
        self.dispatcher = Dispatcher(executor="manual")
        self.reads: list[Settle] = []
        self.fail: BaseException | None = None
        link = SubscriptionLink(
            submit=self._submit,
            server_info=lambda: None,
            host_kind=lambda: HostKind.CAPABLE,
            reset_transport=lambda reason: None,
            dispatcher=self.dispatcher,
        )
        self.manager: ConfigManager[dict[str, Any]] = ConfigManager(link, _parse)

    def _submit(self, message: dict[str, Any], timeout: float, *, direct: bool = False, on_settle: Settle) -> Future:
        assert message == {"type": "get_daemon_config_request"}
        if self.fail is not None:
            raise self.fail
        self.reads.append(on_settle)
        return Future()

    def answer(self, config: dict[str, Any], index: int = -1) -> None:
        self.reads[index]({"config": config}, None)
        self.run_callbacks()

    def push(self, config: dict[str, Any]) -> None:
        self.manager.route(SessionMessage("status", {"status": "daemon_config_changed", "config": config}))

    def run_callbacks(self) -> int:
        return self.dispatcher.process_events(timeout=0)


@pytest.fixture
def scripted() -> ScriptedLink:
    link = ScriptedLink()
    link.manager.restore(HostKind.CAPABLE, reconnected=False)
    return link


def test_followers_who_join_during_a_read_share_it(scripted: ScriptedLink) -> None:
    first = scripted.manager.subscribe(lambda config: None)
    second = scripted.manager.subscribe(lambda config: None)
    assert len(scripted.reads) == 1  # the second waits for the read in flight
    assert repr(second) == "<ConfigSubscription establishing>"
    scripted.answer({"mcp": {"injectIntoAgents": False}})
    assert first.ready.result(0) == second.ready.result(0) == {"mcp": {"injectIntoAgents": False}}
    assert repr(first) == "<ConfigSubscription live>"


def test_a_read_that_cannot_be_sent_is_made_at_the_next_handshake(scripted: ScriptedLink) -> None:
    scripted.fail = dc.ConnectionLost("the socket closed")
    sub = scripted.manager.subscribe(lambda config: None)
    assert repr(sub) == "<ConfigSubscription pending>"
    scripted.fail = None
    scripted.manager.on_disconnect()
    scripted.manager.restore(HostKind.CAPABLE, reconnected=True)
    scripted.answer({"v": 1})
    assert sub.ready.result(0) == {"v": 1}


def test_an_unreadable_first_configuration_fails_and_releases_the_follower(scripted: ScriptedLink, caplog) -> None:
    errors = RecordingHandler[BaseException]("errors")
    sub = scripted.manager.subscribe(lambda config: None, on_error=errors)
    scripted.answer({"broken": True})
    with pytest.raises(dc.ProtocolError, match="the configuration is broken"):
        sub.ready.result(0)
    assert [str(e) for e in errors.items] == ["the configuration is broken"]
    assert sub.released
    assert repr(sub) == "<ConfigSubscription released>"
    assert "reading the daemon configuration failed: the configuration is broken" in caplog.text
    scripted.manager.on_disconnect()
    scripted.manager.restore(HostKind.CAPABLE, reconnected=True)
    assert len(scripted.reads) == 1  # nobody follows any more: nothing is read


def test_an_unreadable_change_is_skipped_and_the_next_one_delivered(scripted: ScriptedLink, caplog) -> None:
    changes = RecordingHandler[dict[str, Any]]("changes")
    scripted.manager.subscribe(changes)
    scripted.answer({"v": 1})
    scripted.push({"broken": True})
    scripted.push({"v": 2})
    scripted.run_callbacks()
    assert changes.items == [{"v": 2}]
    assert "unreadable daemon configuration skipped: the configuration is broken" in caplog.text


def test_a_change_routed_before_a_release_is_not_delivered(scripted: ScriptedLink) -> None:
    changes = RecordingHandler[dict[str, Any]]("changes")
    sub = scripted.manager.subscribe(changes)
    scripted.answer({"v": 1})
    scripted.push({"v": 2})
    sub()  # released before the callback thread ran
    scripted.run_callbacks()
    assert changes.items == []


def test_only_followers_with_on_restored_hear_the_restore(scripted: ScriptedLink) -> None:
    restored = RecordingHandler[Any]("restored")
    quiet_changes = RecordingHandler[dict[str, Any]]("quiet")
    scripted.manager.subscribe(quiet_changes)
    scripted.manager.subscribe(lambda config: None, on_restored=restored)
    scripted.answer({"v": 1})
    scripted.manager.on_disconnect()
    scripted.manager.restore(HostKind.CAPABLE, reconnected=True)
    scripted.answer({"v": 2})
    assert len(restored) == 1
    assert quiet_changes.items == [{"v": 2}]  # the change made while away, then nothing else


def test_a_read_answered_after_a_disconnect_is_read_again_and_ready_resolves_once(scripted: ScriptedLink) -> None:
    changes = RecordingHandler[dict[str, Any]]("changes")
    sub = scripted.manager.subscribe(changes)
    scripted.manager.on_disconnect()
    scripted.answer({"v": 1})  # resolves ready, but the follower is not live on a closed connection
    assert sub.ready.result(0) == {"v": 1}
    assert repr(sub) == "<ConfigSubscription pending>"
    scripted.manager.restore(HostKind.CAPABLE, reconnected=True)
    scripted.answer({"v": 1})
    assert repr(sub) == "<ConfigSubscription live>"
    assert sub.ready.result(0) == {"v": 1}  # resolved once
    scripted.push({"v": 3})
    scripted.run_callbacks()
    assert changes.items == [{"v": 3}]
