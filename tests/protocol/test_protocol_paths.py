"""Small reading and writing rules of the protocol models that the scenarios do not reach:
project lists of the wrong shape, sort specs, the legacy worktree request, tool-call detail
types, skipped timeline entries and nested configuration patches."""

from __future__ import annotations

import logging

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import daemon_client as dc
from daemon_client.protocol import config, projects, timeline, worktrees
from daemon_client.protocol.directory import Sort, sort_to_wire


def test_a_project_list_without_projects_is_empty_and_a_non_list_is_refused() -> None:
    assert projects.parse_list({}).projects == ()
    with pytest.raises(dc.ProtocolError, match="projects is dict, not a list"):
        projects.parse_list({"projects": {"p1": {}}})


def test_sort_specs_are_checked_and_a_single_one_is_accepted() -> None:
    allowed = frozenset({"updatedAt", "title"})
    with pytest.raises(ValueError, match="sort direction must be 'asc' or 'desc', got 'up'"):
        Sort("title", "up")
    assert sort_to_wire("title", allowed) == [{"key": "title", "direction": "desc"}]
    assert sort_to_wire(Sort("updatedAt", "asc"), allowed) == [{"key": "updatedAt", "direction": "asc"}]
    assert sort_to_wire(None, allowed) is None


def test_older_daemons_get_no_request_for_a_plain_directory() -> None:
    with pytest.raises(ValueError, match="the worktree request of older daemons creates worktrees only"):
        worktrees.create_message("/repo", None, None, newest=False)


def test_a_tool_calls_detail_type_is_read_only_when_it_is_a_string() -> None:
    assert timeline.ToolCall("c1", detail={"type": "shell"}).detail_type == "shell"
    assert timeline.ToolCall("c1", detail={"type": 3}).detail_type is None
    assert timeline.ToolCall("c1").detail_type is None


def test_a_timeline_entry_that_is_not_an_object_is_skipped_with_a_warning(caplog) -> None:
    page = timeline.parse_page(
        {"entries": ["junk", {"item": {"type": "assistant_message", "text": "hi"}, "seq": 1}], "hasOlder": False}
    )
    assert [entry.item for entry in page.entries] == [timeline.AssistantMessage("hi")]
    assert any(
        r.levelno == logging.WARNING and r.getMessage().startswith("skipped TimelineEntry at entries[0]")
        for r in caplog.records
    )


def test_nested_patch_keys_the_host_lacks_are_named_by_their_dotted_path() -> None:
    current = {"agents": {"defaults": {"model": "m"}}, "theme": "dark"}
    patch = {"agents": {"defaults": {"model": "n", "effort": "high"}, "limits": {"x": 1}}, "theme": "light"}
    assert config.unknown_patch_keys(patch, current) == ("agents.defaults.effort", "agents.limits")


def test_an_assistant_message_with_an_unusable_message_id_keeps_its_text() -> None:
    item = timeline.parse_item({"type": "assistant_message", "text": "hi", "messageId": 5})
    assert item == timeline.AssistantMessage("hi", None)


def test_messages_are_joined_from_timeline_events_too() -> None:
    items = [
        timeline.TimelineEvent(timeline.AssistantMessage("Hel")),
        timeline.TimelineEvent(timeline.AssistantMessage("lo")),
        timeline.Reasoning("thinking"),
        timeline.AssistantMessage("again"),
    ]
    assert timeline.join_messages(items) == ["Hello", "again"]


def test_a_known_item_without_its_identity_is_kept_as_an_unknown_item() -> None:
    raw = {"type": "tool_call", "name": "shell", "status": "running"}
    item = timeline.parse_item(raw)
    assert item == timeline.UnknownItem(type="tool_call", raw=raw)


_ABSENT = object()
_odd_values = st.sampled_from([None, True, 7, 1.5, [], {}, "s"])


def _maybe(strategy: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    """A field's value: absent, of its type, or of another."""
    return st.one_of(st.just(_ABSENT), strategy, _odd_values)


def _put(target: dict[str, object], key: str, value: object) -> None:
    if value is not _ABSENT:
        target[key] = value


@given(
    text=_maybe(st.text(max_size=5)), message_id=_maybe(st.text(max_size=3)), item_type=_maybe(st.sampled_from(
        ["assistant_message", "reasoning", "tool_call"])), provider=_maybe(st.text(max_size=3)),
    turn_id=_maybe(st.text(max_size=3)), event_type=_maybe(st.sampled_from(["timeline", "turn_started"])),
    agent_id=_maybe(st.text(max_size=3)), timestamp=_maybe(st.text(max_size=3)), seq=_maybe(st.integers(0, 9)),
    epoch=_maybe(st.text(max_size=3)), item_is_object=st.booleans(), event_is_object=st.booleans(),
)  # fmt: skip
@example(text="chunk", message_id=_ABSENT, item_type="assistant_message", provider="claude", turn_id=_ABSENT,
         event_type="timeline", agent_id="a1", timestamp="t", seq=3, epoch="e", item_is_object=True,
         event_is_object=True)  # fmt: skip
@example(text="chunk", message_id="m1", item_type="assistant_message", provider="claude", turn_id="t1",
         event_type="timeline", agent_id="a1", timestamp="t", seq=3, epoch="e", item_is_object=True,
         event_is_object=True)  # fmt: skip
def test_a_stream_payload_of_any_shape_reads_as_its_fields_say(  # noqa: PLR0917 - one per field
    text: object, message_id: object, item_type: object, provider: object, turn_id: object, event_type: object,
    agent_id: object, timestamp: object, seq: object, epoch: object, item_is_object: bool, event_is_object: bool,
) -> None:  # fmt: skip
    """Whatever shape a frame has, the one-step reading of a text chunk and the field-by-field
    reading agree: the model is the one its fields describe, a field of the wrong type reads
    as absent (its default), an identity of the wrong type as text."""
    item: dict[str, object] = {}
    for key, value in (("type", item_type), ("text", text), ("messageId", message_id)):
        _put(item, key, value)
    event: dict[str, object] = {}
    for key, value in (("type", event_type), ("provider", provider), ("turnId", turn_id)):
        _put(event, key, value)
    _put(event, "item", item if item_is_object else "not an object")
    payload: dict[str, object] = {}
    for key, value in (("agentId", agent_id), ("timestamp", timestamp), ("seq", seq), ("epoch", epoch)):
        _put(payload, key, value)
    _put(payload, "event", event if event_is_object else ["not", "an", "object"])

    update = timeline.parse_stream_payload(payload, "sub-1")

    def text_of(value: object, default: str = "") -> str:
        return default if value is _ABSENT else value if type(value) is str else str(value)

    def optional(value: object, kind: type) -> object:
        return value if type(value) is kind else None

    assert update.agent_id == text_of(agent_id)
    assert update.subscription_id == "sub-1"
    assert (update.timestamp, update.seq, update.epoch) == (optional(timestamp, str), optional(seq, int),
                                                           optional(epoch, str))  # fmt: skip
    if not event_is_object:
        assert update.event == timeline.UnknownEvent(type="", raw={"value": ["not", "an", "object"]})
        return
    if event_type != "timeline":
        assert update.type == ("turn_started" if event_type == "turn_started" else text_of(event_type))
        return
    assert isinstance(update.event, timeline.TimelineEvent)
    assert update.event.provider == text_of(provider)
    assert update.event.turn_id == optional(turn_id, str)
    chunk = update.event.item
    if item_is_object and item_type == "assistant_message":
        assert chunk == timeline.AssistantMessage(optional(text, str) or "", optional(message_id, str))
    elif item_is_object and item_type == "reasoning":
        assert chunk == timeline.Reasoning(optional(text, str) or "")
    else:
        assert not isinstance(chunk, timeline.AssistantMessage | timeline.Reasoning)
