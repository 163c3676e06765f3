"""Following the daemon's configuration, the paths a live daemon rarely takes: reads that overlap,
cannot be sent or answer after a disconnect; configurations the parser refuses; changes that
arrive for a released follower. Driven through the manager with a scripted link, a parser that
refuses marked configurations and a manual callback queue."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.models import SessionMessage
from daemon_client.runtime.dispatch import Dispatcher
from daemon_client.subscriptions.config import ConfigManager
from daemon_client.subscriptions.lifecycle import SubscriptionLink
from daemon_client.testing import RecordingHandler

Settle = Callable[[dict[str, Any] | None, BaseException | None], None]


def _parse(config: Mapping[str, Any]) -> dict[str, Any]:
    if config.get("broken"):
        raise dc.ProtocolError("the configuration is broken")
    return dict(config)


class ScriptedLink:
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


def test_an_unreadable_first_configuration_fails_the_follower(scripted: ScriptedLink, caplog) -> None:
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


def test_an_unreadable_change_is_skipped(scripted: ScriptedLink, caplog) -> None:
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


def test_a_read_answered_after_a_disconnect_is_read_again(scripted: ScriptedLink) -> None:
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
