"""Small reading and writing rules of the protocol models that the scenarios do not reach:
project lists of the wrong shape, sort specs, the legacy worktree request, tool-call detail
types, skipped timeline entries and nested configuration patches."""

from __future__ import annotations

import logging

import pytest

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
