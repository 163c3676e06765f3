"""Driven by hand (a recording ``submit``, no daemon): an owned membership's acknowledgement that
arrives for an attempt a reconnect superseded changes nothing and is released on the daemon;
a release whose connection was lost resets nothing (the daemon freed it with the socket)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import pytest

from daemon_client.errors import ConnectionLost, RequestTimeout
from daemon_client.protocol.hosts import HostKind
from daemon_client.runtime.dispatch import Dispatcher
from daemon_client.subscriptions.lifecycle import SubscriptionLink
from daemon_client.subscriptions.membership import Membership, MembershipManager, State
from daemon_client.subscriptions.timeline import TIMELINE

Settle = Callable[[dict[str, Any] | None, BaseException | None], None]


class Wire:
    """What the manager sent, with each message's settle hook."""

    def __init__(self) -> None:
        self.sent: list[tuple[dict[str, Any], Settle | None, Future[dict[str, Any]]]] = []
        self.resets: list[str] = []

    def submit(self, message: dict[str, Any], _timeout: float, *, direct: bool = False,
               on_settle: Settle | None = None) -> Future[dict[str, Any]]:  # fmt: skip
        future: Future[dict[str, Any]] = Future()
        self.sent.append((message, on_settle, future))
        return future

    def types(self) -> list[str]:
        return [message["type"] for message, _settle, _future in self.sent]


@pytest.fixture
def dispatcher() -> Iterator[Dispatcher]:
    dispatcher = Dispatcher()
    yield dispatcher
    dispatcher.stop()


def _link(wire: Wire, dispatcher: Dispatcher) -> SubscriptionLink:
    return SubscriptionLink(
        submit=wire.submit,
        server_info=lambda: None,
        host_kind=lambda: HostKind.CAPABLE,
        reset_transport=wire.resets.append,
        dispatcher=dispatcher,
    )


def test_an_acknowledgement_for_a_superseded_attempt_is_ignored_and_released(dispatcher: Dispatcher) -> None:
    wire = Wire()
    manager: MembershipManager[Membership] = MembershipManager(TIMELINE, _link(wire, dispatcher))
    manager.restore(HostKind.CAPABLE, reconnected=False)
    sub = manager.add(Membership(manager, "a1"))
    manager.on_disconnect()  # attempt 1 is in flight when the connection ends
    manager.restore(HostKind.CAPABLE, reconnected=True)  # attempt 2
    assert wire.types() == [TIMELINE.request_type] * 2
    (_m1, first_ack, _f1), (_m2, second_ack, _f2) = wire.sent
    assert first_ack is not None
    assert second_ack is not None

    first_ack({"subscriptionId": "sub-old", "requestId": "req-1"}, None)  # late, for attempt 1
    assert (sub.state, sub.subscription_id, sub.ready.done()) == (State.ESTABLISHING, None, False)
    assert manager.targets("a1", "sub-old") == ()
    assert wire.sent[-1][0] == {"type": "subscription.release.request", "subscriptionId": "sub-old"}

    second_ack({"subscriptionId": "sub-new", "requestId": "req-2"}, None)
    assert (sub.state, sub.subscription_id) == (State.LIVE, "sub-new")
    assert sub.ready.result(0).subscription_id == "sub-new"
    assert manager.targets("a1", "sub-new") == (sub,)
    assert wire.resets == []


def test_a_release_lost_with_the_connection_does_not_reset_the_connection(dispatcher: Dispatcher) -> None:
    wire = Wire()
    link = _link(wire, dispatcher)
    lost: Future[dict[str, Any]] = Future()
    lost.set_exception(ConnectionLost("the connection dropped"))
    link.await_release("<timeline a1>", lost, 1.0)
    assert wire.resets == []  # the daemon released it with the socket: no extra reconnect
    timed_out: Future[dict[str, Any]] = Future()
    timed_out.set_exception(RequestTimeout("subscription.release.request timed out"))
    link.await_release("<timeline a1>", timed_out, 1.0)  # unknown daemon state: reset, once
    assert len(wire.resets) == 1
