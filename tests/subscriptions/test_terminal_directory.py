"""The terminal directory, the paths a live daemon rarely takes: asks that cannot be sent,
unreadable first lists, releases before the first list, pushes for released subscriptions and
``close()`` before any connection. Driven through the manager with a scripted sender and a
manual callback queue, and through a client against the fake where the fake can play it."""

from __future__ import annotations

from typing import Any

import pytest

import daemon_client as dc
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.models import SessionMessage
from daemon_client.runtime.dispatch import Dispatcher
from daemon_client.subscriptions.lifecycle import SubscriptionLink
from daemon_client.subscriptions.terminal_directory import (
    DirectoryKey,
    DirectoryState,
    TerminalDirectoryManager,
    TerminalDirectorySubscription,
)
from daemon_client.testing import RecordingHandler

CWD = "/home/dev/projects/demo"


class ScriptedSender:
    """A terminal directory manager whose sends are recorded, or refused while ``down``."""

    def __init__(self) -> None:
        self.dispatcher = Dispatcher(executor="manual")
        self.sent: list[dict[str, Any]] = []
        self.down = False
        link = SubscriptionLink(
            submit=lambda *args, **kwargs: None,  # type: ignore[arg-type, return-value]
            server_info=lambda: None,
            host_kind=lambda: HostKind.BROADCAST,
            reset_transport=lambda reason: None,
            dispatcher=self.dispatcher,
        )
        self.manager = TerminalDirectoryManager(link, self._send)

    def _send(self, message: dict[str, Any], direct: bool = False) -> None:
        if self.down:
            raise dc.ConnectionLost("the socket closed")
        self.sent.append(message)

    def subscribe(self, cwd: str = CWD, workspace_id: str | None = None) -> tuple[TerminalDirectorySubscription, Any]:
        seen = RecordingHandler[dc.TerminalsChanged]("seen")
        sub = TerminalDirectorySubscription(self.manager, DirectoryKey(cwd, workspace_id), seen)
        return self.manager.add(sub), seen

    def push(self, payload: dict[str, Any]) -> None:
        self.manager.route(SessionMessage("terminals_changed", payload))
        self.dispatcher.process_events(timeout=0)

    def types(self) -> list[str]:
        return [m["type"] for m in self.sent]


@pytest.fixture
def scripted() -> ScriptedSender:
    return ScriptedSender()


def test_an_ask_that_cannot_be_sent_is_repeated_at_the_next_handshake(scripted: ScriptedSender) -> None:
    scripted.manager.restore(HostKind.BROADCAST, reconnected=False)
    scripted.down = True
    sub, seen = scripted.subscribe()
    assert sub.state is DirectoryState.PENDING
    scripted.down = False
    scripted.manager.on_disconnect()
    scripted.manager.restore(HostKind.BROADCAST, reconnected=True)
    assert scripted.sent == [{"type": "subscribe_terminals_request", "cwd": CWD}]
    scripted.push({"cwd": CWD, "terminals": [{"id": "t1", "name": "a"}]})
    assert [t.id for t in sub.ready.result(0).terminals] == ["t1"]
    assert len(seen) == 1


def test_a_restore_stops_asking_when_the_connection_goes_again(scripted: ScriptedSender, caplog) -> None:
    scripted.subscribe("/a")
    scripted.subscribe("/b")
    scripted.down = True
    scripted.manager.restore(HostKind.BROADCAST, reconnected=True)
    assert scripted.sent == []
    assert "not asked again: the socket closed" in caplog.text
    assert caplog.text.count("not asked again") == 1


def test_an_unreadable_first_list_fails_ready(scripted: ScriptedSender, caplog) -> None:
    scripted.manager.restore(HostKind.BROADCAST, reconnected=False)
    sub, seen = scripted.subscribe(workspace_id="wa")
    scripted.push({"workspaceId": "wa", "cwd": 5, "terminals": []})  # routed by workspace, unreadable
    with pytest.raises(dc.ProtocolError, match="no usable 'cwd'"):
        sub.ready.result(0)
    assert seen.items == []
    assert sub.current() is None
    assert "unreadable terminals_changed skipped" in caplog.text
    scripted.push({"workspaceId": "wa", "cwd": CWD, "terminals": []})  # later lists still arrive
    assert len(seen) == 1
    assert sub.current() == seen.items[0]


def test_a_subscription_released_before_its_first_list(scripted: ScriptedSender) -> None:
    scripted.manager.restore(HostKind.BROADCAST, reconnected=False)
    sub, _ = scripted.subscribe()
    sub.release()
    with pytest.raises(dc.SubscriptionReleased, match="terminal directory subscription was released"):
        sub.ready.result(0)
    assert scripted.types() == ["subscribe_terminals_request", "unsubscribe_terminals_request"]
    sub.release()  # harmless twice
    assert len(scripted.sent) == 2


def test_an_unsubscribe_that_cannot_be_sent_is_not_an_error(scripted: ScriptedSender) -> None:
    scripted.manager.restore(HostKind.BROADCAST, reconnected=False)
    sub, _ = scripted.subscribe()
    scripted.down = True
    sub.release()
    assert sub.released
    assert scripted.types() == ["subscribe_terminals_request"]


def test_a_list_routed_before_a_release_is_not_delivered_after_it(scripted: ScriptedSender) -> None:
    scripted.manager.restore(HostKind.BROADCAST, reconnected=False)
    sub, seen = scripted.subscribe()
    scripted.manager.route(SessionMessage("terminals_changed", {"cwd": CWD, "terminals": []}))
    sub.release()  # before the callback thread ran
    scripted.dispatcher.process_events(timeout=0)
    assert seen.items == []
    assert sub.current() is None


def test_a_second_list_before_ready_resolves_keeps_the_first(scripted: ScriptedSender) -> None:
    scripted.manager.restore(HostKind.BROADCAST, reconnected=False)
    sub, seen = scripted.subscribe()
    scripted.manager.route(SessionMessage("terminals_changed", {"cwd": CWD, "terminals": []}))
    sub.ready.set_result(dc.TerminalsChanged(cwd="/set", terminals=()))  # resolved elsewhere first
    scripted.dispatcher.process_events(timeout=0)
    assert sub.ready.result(0).cwd == "/set"
    assert len(seen) == 1


def test_close_before_any_connection_fails_ready(fakes, make_client) -> None:
    client = make_client(fakes("broadcast"))
    seen = RecordingHandler[dc.TerminalsChanged]("seen")
    sub = client.terminals.subscribe(seen, cwd=CWD)
    assert repr(sub) == f"<TerminalDirectorySubscription {CWD} pending>"
    client.close()
    with pytest.raises(dc.ClientClosed):
        sub.ready.result(5)
    assert sub.released
    assert seen.items == []


def test_a_workspace_subscription_names_its_workspace(fakes, make_client) -> None:
    fake = fakes("capable")
    client = make_client(fake)
    client.connect()
    seen = RecordingHandler[dc.TerminalsChanged]("seen")
    with client.terminals.subscribe(seen, workspace_id="wa", cwd=CWD) as sub:
        sub.ready.result(5)
        assert repr(sub) == "<TerminalDirectorySubscription workspace wa live>"
    assert sub.released


def test_an_unreadable_first_list_after_ready_resolved_elsewhere(scripted: ScriptedSender) -> None:
    scripted.manager.restore(HostKind.BROADCAST, reconnected=False)
    sub, seen = scripted.subscribe(workspace_id="wa")
    scripted.manager.route(SessionMessage("terminals_changed", {"workspaceId": "wa", "terminals": []}))
    sub.ready.set_result(dc.TerminalsChanged(cwd="/set", terminals=()))
    scripted.dispatcher.process_events(timeout=0)
    assert sub.ready.result(0).cwd == "/set"
    assert seen.items == []


def test_a_list_for_a_directory_nobody_follows_is_dropped(scripted: ScriptedSender, caplog) -> None:
    scripted.manager.restore(HostKind.BROADCAST, reconnected=False)
    sub, seen = scripted.subscribe()
    scripted.push({"cwd": "/elsewhere", "terminals": []})
    assert seen.items == []
    assert not sub.ready.done()
    assert "terminals_changed for '/elsewhere' with no subscription dropped" in caplog.text
