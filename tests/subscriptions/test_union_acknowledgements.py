"""Union memberships (selective hosts): a handle whose key the union already holds is ready on
the last acknowledged union, also when the union's acknowledgement is handled while the handle
is being established. Driven through the manager with a scripted link that holds each union
until the test answers it, and a lock that lets the test answer one exactly between two steps
of an establishment."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest

from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.models import ServerInfo
from daemon_client.runtime.dispatch import Dispatcher
from daemon_client.subscriptions.lifecycle import SubscriptionLink
from daemon_client.subscriptions.membership import Membership, MembershipManager, Mode
from daemon_client.subscriptions.timeline import TIMELINE

Settle = Callable[[dict[str, Any] | None, BaseException | None], None]
INFO = ServerInfo(server_id="srv", features={TIMELINE.union_feature: True})


class InterleavingLock:
    """The manager's lock: ``after_release``, once set, runs right after the next release."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.after_release: Callable[[], None] | None = None

    def __enter__(self) -> InterleavingLock:
        self._lock.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release()
        job, self.after_release = self.after_release, None
        if job is not None:
            job()


class ProbedManager(MembershipManager[Membership]):
    """A manager whose next read of the acknowledged union, once armed, has the held union
    answered as soon as the lock it was read under is released."""

    on_acked_read: Callable[[], None] | None = None

    @property
    def _acked(self) -> frozenset[str]:
        job, self.on_acked_read = self.on_acked_read, None
        if job is not None:
            lock = self._lock
            assert isinstance(lock, InterleavingLock)
            lock.after_release = job
        return self._acked_value

    @_acked.setter
    def _acked(self, value: frozenset[str]) -> None:
        self._acked_value = value


class ScriptedUnionLink:
    def __init__(self) -> None:
        self.dispatcher = Dispatcher(executor="manual")
        self.unions: list[tuple[list[str], Settle]] = []
        link = SubscriptionLink(
            submit=self._submit,
            server_info=lambda: INFO,
            host_kind=lambda: HostKind.SELECTIVE,
            reset_transport=lambda reason: None,
            dispatcher=self.dispatcher,
        )
        self.manager = ProbedManager(TIMELINE, link)
        self.manager._lock = InterleavingLock()  # type: ignore[assignment]
        self.manager.restore(HostKind.SELECTIVE, reconnected=False)
        assert self.manager.mode is Mode.UNION

    def _submit(self, message: dict[str, Any], timeout: float, *, direct: bool = False, on_settle: Settle) -> Future:
        self.unions.append((message[TIMELINE.key_field], on_settle))
        return Future()

    def answer(self, index: int) -> None:
        _keys, settle = self.unions[index]
        settle({"requestId": f"req-{index}"}, None)

    def subscribe(self, key: str = "a1") -> Membership:
        return self.manager.add(Membership(self.manager, key))


@pytest.mark.interpreted_only("replaces an internal method to force an interleaving")
def test_an_acknowledgement_handled_while_a_handle_joins_the_union_is_kept() -> None:
    scripted = ScriptedUnionLink()
    first = scripted.subscribe()
    assert [keys for keys, _ in scripted.unions] == [["a1"]]  # held: not acknowledged yet
    scripted.manager.on_acked_read = lambda: scripted.answer(0)  # answered inside the next join
    second = scripted.subscribe()  # the union is unchanged: nothing more is sent
    assert len(scripted.unions) == 1
    assert first.ready.done()
    assert second.ready.done()
    third = scripted.subscribe()  # covered by the acknowledged union
    assert len(scripted.unions) == 1
    assert third.ready.result(0).keys == ("a1",)
    scripted.dispatcher.stop()


@pytest.mark.interpreted_only("replaces an internal method to force an interleaving")
def test_a_handle_joining_an_acknowledged_union_is_ready_at_once() -> None:
    scripted = ScriptedUnionLink()
    first = scripted.subscribe()
    scripted.answer(0)
    assert first.ready.result(0).request_id == "req-0"
    second = scripted.subscribe()
    assert len(scripted.unions) == 1
    assert second.ready.result(0).subscription_id.startswith("legacy:")
    other = scripted.subscribe("a2")  # a new key: a new union, ready on its acknowledgement
    assert [keys for keys, _ in scripted.unions][-1] == ["a1", "a2"]
    assert not other.ready.done()
    scripted.answer(1)
    assert other.ready.result(0).keys == ("a2",)
    scripted.dispatcher.stop()
