"""How the command line renders values: JSON of models and of unknown timeline items and events,
and the live agent table ignoring an update it cannot show."""

from __future__ import annotations

import io
import json

from daemon_client.cli.json_render import model_json, update_json
from daemon_client.cli.live import LiveAgents, TextTail
from daemon_client.cli.printer import JsonLinesPrinter, MessagePrinter
from daemon_client.cli.render import to_json
from daemon_client.protocol.timeline import (
    Replacement,
    SubscriptionError,
    TimelineCursor,
    TimelineUpdate,
    TurnCanceled,
    TurnFailed,
    UnknownEvent,
    UnknownItem,
)


def test_unknown_items_and_events_are_written_as_received() -> None:
    assert model_json(UnknownItem("widget", {"type": "widget", "size": 3})) == {"type": "widget", "size": 3}
    assert model_json(UnknownEvent("novelty")) == {"type": "novelty"}


def test_lists_of_models_are_written_item_by_item() -> None:
    assert model_json([TimelineCursor("e1", 4), "plain"]) == [{"epoch": "e1", "seq": 4}, "plain"]
    assert model_json(("a", 1)) == ["a", 1]


def test_a_subscription_error_update_carries_its_message() -> None:
    update = TimelineUpdate("agent-1", SubscriptionError("refused"))
    assert update_json(update) == {
        "agentId": "agent-1",
        "type": "error",
        "event": {"type": "error", "error": "refused"},
    }


def test_to_json_writes_one_model_or_plain_data() -> None:
    assert json.loads(to_json(TimelineCursor("e1", 4))) == {"epoch": "e1", "seq": 4}
    assert to_json({"b": 1, "a": [1]}) == '{\n  "a": [\n    1\n  ],\n  "b": 1\n}'


def test_an_upsert_without_an_agent_and_an_unknown_kind_are_ignored() -> None:
    out = io.StringIO()
    live = LiveAgents(out, line_mode=True, json_lines=True)
    live.update("upsert", "agent-1", None)
    live.update("renamed", "agent-1", None)
    assert out.getvalue() == ""


def _printed(*events: object) -> str:
    out = io.StringIO()
    printer = MessagePrinter(out)
    for event in events:
        printer(TimelineUpdate("agent-1", event))  # type: ignore[arg-type]
    printer.end()
    return out.getvalue()


def test_the_printer_marks_failed_and_canceled_turns_and_replaced_history() -> None:
    assert _printed(TurnFailed(error="Simulated failure")) == "-- turn failed: Simulated failure\n"
    assert _printed(TurnCanceled(reason="Interrupted")) == "-- turn canceled: Interrupted\n"
    assert _printed(Replacement("epoch-2")) == "-- history replaced (epoch epoch-2)\n"
    assert _printed(SubscriptionError("refused")) == ""


def test_json_lines_leave_out_subscription_errors() -> None:
    out = io.StringIO()
    printer = JsonLinesPrinter(out)
    printer(TimelineUpdate("agent-1", SubscriptionError("refused")))
    printer(TimelineUpdate("agent-1", TurnCanceled(reason="Interrupted")))
    printer.end()
    (line,) = out.getvalue().splitlines()
    assert json.loads(line)["event"] == {"type": "turn_canceled", "reason": "Interrupted", "provider": ""}


def test_the_screen_mode_writes_nothing_itself_and_keeps_the_last_lines() -> None:
    out = io.StringIO()
    live = LiveAgents(out, line_mode=False)
    live.update("remove", "agent-1", None)
    assert out.getvalue() == ""
    assert live.render().split() == ["STATUS", "TITLE", "PROVIDER", "ID"]
    tail = TextTail(lines=2)
    assert tail.write("first\nsecond\n") == len("first\nsecond\n")
    tail.write("third")
    tail.flush()
    assert tail.render() == "second\nthird"
