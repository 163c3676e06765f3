"""Values built by assigning slots (protocol/assignable.py) are the models' own instances:
the live stream's one-step parser, its restamping, the field-by-field constructors and the
generated readers all hand out objects that equal, hash, copy and pickle like ``__init__``'s."""

from __future__ import annotations

import copy
import pickle
import threading
from typing import Any

import attrs
import pytest

from daemon_client.protocol import stream_payload, timeline
from daemon_client.protocol.assignable import assignable
from daemon_client.protocol.timeline import AssistantMessage, Reasoning, TimelineEvent, TimelineUpdate


def _payload(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "agentId": "agent-1",
        "timestamp": "2026-01-01T00:00:00Z",
        "seq": 7,
        "epoch": "ep-1",
        "event": {"type": "timeline", "provider": "claude", "item": item},
    }


@pytest.mark.parametrize(
    ("item", "expected_item"),
    [
        ({"type": "assistant_message", "text": "chunk"}, AssistantMessage(text="chunk")),
        ({"type": "reasoning", "text": "thinking"}, Reasoning(text="thinking")),
    ],
)
def test_the_streams_one_step_values_are_the_models_own(item: dict[str, Any], expected_item: Any) -> None:
    update = stream_payload.parse_stream_payload(_payload(item), "sub-1")
    expected = TimelineUpdate(
        agent_id="agent-1",
        event=TimelineEvent(item=expected_item, provider="claude"),
        subscription_id="sub-1",
        timestamp="2026-01-01T00:00:00Z",
        seq=7,
        epoch="ep-1",
    )
    assert update == expected
    assert hash(update) == hash(expected)
    assert repr(update) == repr(expected)
    assert type(update) is TimelineUpdate
    assert type(update.event) is TimelineEvent
    assert type(update.event.item) is type(expected_item)
    assert pickle.loads(pickle.dumps(update)) == expected
    assert copy.deepcopy(update) == expected
    assert attrs.evolve(update, seq=8).seq == 8
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        update.seq = 9  # type: ignore[misc]  # the value is frozen again once built
    restamped = stream_payload.restamp(update, "sub-2")
    assert type(restamped) is TimelineUpdate
    assert restamped == attrs.evolve(expected, subscription_id="sub-2")


def test_every_field_of_the_streams_values_is_assigned() -> None:
    """A class that gains a field must gain it in the stream's builders too."""
    for cls, names in stream_payload.BUILT.items():
        assert names == tuple(field.name for field in attrs.fields(cls)), cls
    message = stream_payload.parse_stream_payload(_payload({"type": "assistant_message", "text": "a"}), None)
    reasoning = stream_payload.parse_stream_payload(_payload({"type": "reasoning", "text": "r"}), None)
    for built in (message, message.event, message.event.item, reasoning.event.item):  # type: ignore[union-attr]
        for field in attrs.fields(type(built)):
            getattr(built, field.name)  # an unassigned slot would raise AttributeError


def test_the_field_by_field_constructors_build_the_models_own() -> None:
    made = timeline.new_timeline_update("a", timeline.new_reasoning("r", "reasoning"), None, None, None, None)
    assert type(made) is TimelineUpdate
    assert made == TimelineUpdate("a", Reasoning("r"))


def test_one_subclass_per_model_from_sixteen_threads(fast_switching: None) -> None:
    @attrs.frozen
    class Fresh:
        a: int
        b: str = ""

    barrier = threading.Barrier(16)
    seen: list[type[Any] | None] = []

    def ask() -> None:
        barrier.wait(10)
        seen.append(assignable(Fresh))

    threads = [threading.Thread(target=ask) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not any(thread.is_alive() for thread in threads)
    assert len(seen) == 16
    assert seen[0] is not None
    assert all(made is seen[0] for made in seen)
    assert [klass for klass in Fresh.__subclasses__() if klass is seen[0]] == [seen[0]]
    built: Any = seen[0]()
    built.a, built.b = 1, "x"
    built.__class__ = Fresh
    assert built == Fresh(1, "x")


def test_a_model_that_cannot_share_its_layout_gets_none() -> None:
    class Meta(type):
        pass

    class WithMeta(metaclass=Meta):
        __slots__ = ("a",)

    @attrs.frozen
    class WithHook:
        a: int

        def __init_subclass__(cls, **kwargs: Any) -> None:  # a subclass hook is not run behind its back
            raise AssertionError("no subclass expected")

    assert assignable(WithMeta) is None
    assert assignable(WithHook) is None  # its hook never ran: it would have raised
    assert assignable(WithHook) is None  # and the answer is kept
