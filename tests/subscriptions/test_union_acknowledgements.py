"""Union memberships (selective hosts): a handle whose key the union already holds is ready on
the last acknowledged union, also when the union's acknowledgement is handled while the handle
is being established. Driven through the manager with a scripted link that holds each union
until the test answers it, and the manager's ``_after_acked_read`` seam, which lets the test
answer one exactly between two steps of an establishment."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.models import ServerInfo
from daemon_client.runtime.dispatch import Dispatcher
from daemon_client.subscriptions.lifecycle import SubscriptionLink
from daemon_client.subscriptions.membership import Membership, MembershipManager, Mode
from daemon_client.subscriptions.timeline import TIMELINE

Settle = Callable[[dict[str, Any] | None, BaseException | None], None]
INFO = ServerInfo(server_id="srv", features={TIMELINE.union_feature: True})


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
        self.manager: MembershipManager[Membership] = MembershipManager(TIMELINE, link)
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

    def answer_after_the_next_acked_read(self, index: int) -> None:
        """The next establishment on an unchanged union has union ``index`` answered right
        after it read the acknowledged union (under the manager's lock), before it acts on it."""

        def answer() -> None:
            self.manager._after_acked_read = None
            self.answer(index)

        self.manager._after_acked_read = answer


def test_an_acknowledgement_handled_while_a_handle_joins_the_union_is_kept() -> None:
    scripted = ScriptedUnionLink()
    first = scripted.subscribe()
    assert [keys for keys, _ in scripted.unions] == [["a1"]]  # held: not acknowledged yet
    scripted.answer_after_the_next_acked_read(0)  # answered inside the next join
    second = scripted.subscribe()  # the union is unchanged: nothing more is sent
    assert len(scripted.unions) == 1
    assert first.ready.done()
    assert second.ready.done()
    third = scripted.subscribe()  # covered by the acknowledged union
    assert len(scripted.unions) == 1
    assert third.ready.result(0).keys == ("a1",)
    scripted.dispatcher.stop()


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
