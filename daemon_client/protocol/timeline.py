"""attrs models of an agent's timeline: items, stream events, live updates, history pages
(protocol.md 6.1-6.8).

Every item and event class has a ``type`` equal to the wire's, so code can switch on
``event.type`` or use ``isinstance``/``match``. Unknown item and event types are kept as
:class:`UnknownItem` / :class:`UnknownEvent` with their raw dict. Parsers run on the
callback thread (live updates) or the caller's thread (history reads).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

from daemon_client.errors import ProtocolError
from daemon_client.protocol.agents import AgentSnapshot, AgentUsage, PermissionRequest
from daemon_client.protocol.assignable import assignable
from daemon_client.protocol.lenient import report_skipped, structure, structure_optional

T = TypeVar("T")


def _slot_constructor(cls: type[T]) -> Callable[..., T]:
    """A positional constructor of a frozen, slotted attrs class with plain fields (no
    defaults filled in, validators or converters): it builds an instance of the class's
    assignable subclass, assigns its slots and makes it the class's own
    (:mod:`daemon_client.protocol.assignable`), about three times as fast as the generated
    ``__init__``. For the field-by-field reading of stream events; the instances are the same."""
    fields = attrs.fields(cls)  # type: ignore[arg-type]  # an attrs class, checked by attrs
    subclass = assignable(cls)
    if subclass is None or getattr(cls, "__attrs_post_init__", None) or any(f.validator or f.converter for f in fields):
        raise TypeError(f"{cls.__name__} needs its __init__")
    names = [field.name for field in fields]
    namespace: dict[str, Any] = {"_subclass": subclass, "_cls": cls}
    body = "".join(f"    instance.{name} = {name}\n" for name in names)
    source = f"def make({', '.join(names)}):\n    instance = _subclass()\n{body}    instance.__class__ = _cls\n"
    exec(f"{source}    return instance\n", namespace)
    make: Callable[..., T] = namespace["make"]
    return make


# ----------------------------------------------------------------------------- items


@attrs.frozen
class UserMessage:
    text: str = ""
    message_id: str | None = None
    client_message_id: str | None = None
    type: str = "user_message"


@attrs.frozen
class AssistantMessage:
    """One chunk of an assistant message; consecutive chunks join without a separator."""

    text: str = ""
    message_id: str | None = None
    type: str = "assistant_message"


@attrs.frozen
class Reasoning:
    text: str = ""
    type: str = "reasoning"


@attrs.frozen
class ToolCall:
    """A tool call; several rows share a ``call_id`` (``running`` then a terminal status)."""

    call_id: str
    name: str = ""
    detail: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] | None = None
    status: str = "running"
    error: Any = None
    agent_message: str | None = None
    type: str = "tool_call"

    @property
    def detail_type(self) -> str | None:
        """``shell``, ``read``, ``edit``, ``write``, ``search``, ``fetch``, ``sub_agent``, … (protocol 6.4)."""
        value = self.detail.get("type") if self.detail else None
        return value if isinstance(value, str) else None


@attrs.frozen
class TodoEntry:
    text: str = ""
    completed: bool = False
    id: str | None = None
    status: str | None = None
    active_form: str | None = None


@attrs.frozen
class Todo:
    items: tuple[TodoEntry, ...] = ()
    type: str = "todo"


@attrs.frozen
class ErrorItem:
    message: str = ""
    type: str = "error"


@attrs.frozen
class Notification:
    level: str = "info"
    message: str = ""
    type: str = "notification"


@attrs.frozen
class Compaction:
    status: str = ""
    trigger: str | None = None
    pre_tokens: int | None = None
    type: str = "compaction"


@attrs.frozen
class PluginItem:
    id: str = ""
    plugin_id: str = ""
    kind: str = ""
    version: Any = None
    data: Any = None
    type: str = "plugin"


@attrs.frozen
class UnknownItem:
    """An item type this client does not know, passed through unchanged."""

    type: str
    raw: Mapping[str, Any] = attrs.field(factory=dict)


TimelineItem = (
    UserMessage
    | AssistantMessage
    | Reasoning
    | ToolCall
    | Todo
    | ErrorItem
    | Notification
    | Compaction
    | PluginItem
    | UnknownItem
)
_ITEMS: dict[str, type[Any]] = {
    "user_message": UserMessage,
    "assistant_message": AssistantMessage,
    "reasoning": Reasoning,
    "tool_call": ToolCall,
    "todo": Todo,
    "error": ErrorItem,
    "notification": Notification,
    "compaction": Compaction,
    "plugin": PluginItem,
}


def _text_item(raw: Mapping[str, Any], kind: str) -> TimelineItem | None:
    """Fast path for the chunk items that make up most of a stream (no converter call)."""
    text = raw.get("text", "")
    if type(text) is not str:
        return None
    if kind == "assistant_message":
        message_id = raw.get("messageId")
        if message_id is None or type(message_id) is str:
            return new_assistant_message(text, message_id, "assistant_message")
    elif kind == "reasoning":
        return new_reasoning(text, "reasoning")
    return None


def parse_item(raw: Any) -> TimelineItem:
    """A wire item → its model; unknown or unreadable items become :class:`UnknownItem`."""
    if type(raw) is not dict and not isinstance(raw, Mapping):
        return UnknownItem(type="", raw={"value": raw})
    kind = raw.get("type", "")
    if type(kind) is not str:
        kind = str(kind)
    if kind in {"assistant_message", "reasoning"}:
        fast = _text_item(raw, kind)
        if fast is not None:
            return fast
    cls = _ITEMS.get(kind)
    if cls is None:
        return UnknownItem(type=kind, raw=dict(raw))
    try:
        item: TimelineItem = structure(raw, cls)
    except ProtocolError:
        return UnknownItem(type=kind, raw=dict(raw))
    return item


# ----------------------------------------------------------------------------- events


@attrs.frozen
class TimelineEvent:
    """``timeline``: a row of the agent's timeline."""

    item: TimelineItem
    provider: str = ""
    turn_id: str | None = None
    type: str = "timeline"


@attrs.frozen
class ThreadStarted:
    session_id: str | None = None
    provider: str = ""
    type: str = "thread_started"


@attrs.frozen
class TurnStarted:
    provider: str = ""
    turn_id: str | None = None
    type: str = "turn_started"


@attrs.frozen
class TurnCompleted:
    provider: str = ""
    turn_id: str | None = None
    usage: AgentUsage | None = None
    type: str = "turn_completed"


@attrs.frozen
class TurnFailed:
    error: str = ""
    provider: str = ""
    turn_id: str | None = None
    code: str | None = None
    diagnostic: Any = None
    type: str = "turn_failed"


@attrs.frozen
class TurnCanceled:
    reason: str = ""
    provider: str = ""
    turn_id: str | None = None
    type: str = "turn_canceled"


@attrs.frozen
class PermissionRequested:
    request: PermissionRequest
    provider: str = ""
    type: str = "permission_requested"


@attrs.frozen
class PermissionResolved:
    request_id: str
    resolution: Mapping[str, Any] = attrs.field(factory=dict)
    provider: str = ""
    type: str = "permission_resolved"


@attrs.frozen
class AttentionRequired:
    reason: str = ""
    timestamp: str | None = None
    should_notify: bool = False
    notification: Mapping[str, Any] | None = None
    provider: str = ""
    type: str = "attention_required"


@attrs.frozen
class UnknownEvent:
    """An event type this client does not know, passed through unchanged."""

    type: str
    raw: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class SubscriptionRestored:
    """Local: the subscription was re-established after a reconnect. Nothing was replayed:
    read ``after`` a saved cursor to fill the gap."""

    type: str = "subscription_restored"


@attrs.frozen
class Replacement:
    """Local: the daemon replaced the agent's history under a new ``epoch``; refetch it."""

    epoch: str
    type: str = "replacement"


@attrs.frozen
class SubscriptionError:
    """Local: establishment failed (the subscription is released) or the client closed.

    ``error`` is the message; ``exception`` the error itself (e.g. ``ClientClosed``), so code
    can tell causes apart with ``isinstance`` instead of comparing texts.
    """

    error: str
    type: str = "error"
    exception: BaseException | None = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class Lagged:
    """Local: the callback queue was over its limit (``Client(flow_control=)``), so live
    events of this subscription were skipped; delivered once the backlog drained, before
    the next live event.

    ``dropped`` counts every skipped frame. ``first_seq``/``last_seq``/``epoch`` bound the
    skipped canonical rows (``None`` when only non-row events were skipped); those read
    back with ``agent.timeline.refetch(direction="after", cursor=(epoch, first_seq - 1))``.
    ``skipped_types`` names the non-row event types skipped (e.g. ``turn_completed``),
    each once, in the order first seen.
    """

    dropped: int
    first_seq: int | None = None
    last_seq: int | None = None
    epoch: str | None = None
    skipped_types: tuple[str, ...] = ()
    type: str = "lagged"


StreamEvent = (
    TimelineEvent
    | ThreadStarted
    | TurnStarted
    | TurnCompleted
    | TurnFailed
    | TurnCanceled
    | PermissionRequested
    | PermissionResolved
    | AttentionRequired
    | UnknownEvent
)
LocalEvent = SubscriptionRestored | Replacement | SubscriptionError | Lagged
_EVENTS: dict[str, type[Any]] = {
    "thread_started": ThreadStarted,
    "turn_started": TurnStarted,
    "turn_completed": TurnCompleted,
    "turn_failed": TurnFailed,
    "turn_canceled": TurnCanceled,
    "permission_requested": PermissionRequested,
    "permission_resolved": PermissionResolved,
    "attention_required": AttentionRequired,
}


def parse_event(raw: Any) -> StreamEvent:
    """A wire ``AgentStreamEvent`` → its model; unknown ones become :class:`UnknownEvent`."""
    if type(raw) is not dict and not isinstance(raw, Mapping):
        return UnknownEvent(type="", raw={"value": raw})
    kind = raw.get("type", "")
    if type(kind) is not str:
        kind = str(kind)
    if kind == "timeline":
        turn_id = raw.get("turnId")
        provider = raw.get("provider", "")
        return new_timeline_event(
            parse_item(raw.get("item")),
            provider if type(provider) is str else str(provider),
            turn_id if type(turn_id) is str else None,
            "timeline",
        )
    cls = _EVENTS.get(kind)
    if cls is None:
        return UnknownEvent(type=kind, raw=dict(raw))
    try:
        event: StreamEvent = structure(raw, cls)
    except ProtocolError:
        return UnknownEvent(type=kind, raw=dict(raw))
    return event


@attrs.frozen
class TimelineUpdate:
    """What a timeline handler receives: one ``agent_stream`` frame, or a local event.

    ``seq``/``epoch`` are set on canonical timeline rows only; turn, permission and
    attention events carry neither.
    """

    agent_id: str
    event: StreamEvent | LocalEvent
    subscription_id: str | None = None
    timestamp: str | None = None
    seq: int | None = None
    epoch: str | None = None

    @property
    def type(self) -> str:
        """The event's type: ``"timeline"``, ``"turn_completed"``, ``"subscription_restored"``, …"""
        return self.event.type


new_assistant_message = _slot_constructor(AssistantMessage)
new_reasoning = _slot_constructor(Reasoning)
new_timeline_event = _slot_constructor(TimelineEvent)
new_timeline_update = _slot_constructor(TimelineUpdate)
"""Positional constructors of the stream's values (see :func:`_slot_constructor`)."""


def parse_stream_fields(payload: Mapping[str, Any], subscription_id: str | None) -> TimelineUpdate:
    """An ``agent_stream`` payload of any shape → :class:`TimelineUpdate`, field by field (the
    stream's usual shape is read in one step by
    :func:`daemon_client.protocol.stream_payload.parse_stream_payload`)."""
    get = payload.get
    agent_id, seq, epoch, timestamp = get("agentId", ""), get("seq"), get("epoch"), get("timestamp")
    return new_timeline_update(
        agent_id if type(agent_id) is str else str(agent_id),
        parse_event(get("event")),
        subscription_id,
        timestamp if type(timestamp) is str else None,
        seq if type(seq) is int else None,  # exactly int: a JSON true is not a seq
        epoch if type(epoch) is str else None,
    )


# ----------------------------------------------------------------------------- history


@attrs.frozen
class TimelineCursor:
    """A position in a timeline: ``seq`` numbers are only comparable within one ``epoch``."""

    epoch: str
    seq: int

    def to_wire(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "seq": self.seq}


@attrs.frozen
class SeqRange:
    start_seq: int
    end_seq: int


@attrs.frozen
class TimelineEntry:
    """One entry of a history page (a row, or several merged rows in projected mode)."""

    item: TimelineItem
    provider: str = ""
    turn_id: str | None = None
    timestamp: str | None = None
    seq_start: int = 0
    seq_end: int = 0
    source_seq_ranges: tuple[SeqRange, ...] = ()
    collapsed: tuple[str, ...] = ()


@attrs.frozen
class TimelineWindow:
    """The whole in-memory timeline's range (0/0 when empty)."""

    min_seq: int = 0
    max_seq: int = 0
    next_seq: int = 0


@attrs.frozen
class TimelinePage:
    """A ``fetch_agent_timeline_response``. Page older with ``before`` + ``start_cursor``,
    newer with ``after`` + ``end_cursor``; honour ``reset`` (replace what you hold)."""

    entries: tuple[TimelineEntry, ...]
    epoch: str
    start_cursor: TimelineCursor | None = None
    end_cursor: TimelineCursor | None = None
    has_older: bool = False
    has_newer: bool = False
    reset: bool = False
    stale_cursor: bool = False
    gap: bool = False
    window: TimelineWindow = TimelineWindow()
    agent: AgentSnapshot | None = None
    direction: str | None = None
    projection: str | None = None
    agent_id: str = ""


def _cursor(value: Any, where: str) -> TimelineCursor | None:
    return structure_optional(value, TimelineCursor, where)


def parse_page(payload: Mapping[str, Any]) -> TimelinePage:
    """A successful ``fetch_agent_timeline_response`` payload → :class:`TimelinePage`."""
    entries = []
    raw_entries = payload.get("entries")
    for index, raw in enumerate(raw_entries if isinstance(raw_entries, list) else []):
        if not isinstance(raw, Mapping):
            report_skipped("TimelineEntry", None, (f"entries[{index}]",), raw)
            continue
        item = parse_item(raw.get("item"))  # the other fields read without it (the model ignores it)
        entries.append(structure(raw if type(raw) is dict else dict(raw), _EntryFields).to_entry(item))
    window = structure_optional(payload.get("window"), TimelineWindow, "window")
    return TimelinePage(
        entries=tuple(entries),
        epoch=_text(payload.get("epoch")) or "",
        start_cursor=_cursor(payload.get("startCursor"), "startCursor"),
        end_cursor=_cursor(payload.get("endCursor"), "endCursor"),
        has_older=bool(payload.get("hasOlder")),
        has_newer=bool(payload.get("hasNewer")),
        reset=bool(payload.get("reset")),
        stale_cursor=bool(payload.get("staleCursor")),
        gap=bool(payload.get("gap")),
        window=window if window is not None else TimelineWindow(),
        agent=structure_optional(payload.get("agent"), AgentSnapshot, "agent"),
        direction=_text(payload.get("direction")),
        projection=_text(payload.get("projection")),
        agent_id=_text(payload.get("agentId")) or "",
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@attrs.frozen
class _EntryFields:
    provider: str = ""
    turn_id: str | None = None
    timestamp: str | None = None
    seq_start: int = 0
    seq_end: int = 0
    source_seq_ranges: tuple[SeqRange, ...] = ()
    collapsed: tuple[str, ...] = ()

    def to_entry(self, item: TimelineItem) -> TimelineEntry:
        return TimelineEntry(
            item=item,
            provider=self.provider,
            turn_id=self.turn_id,
            timestamp=self.timestamp,
            seq_start=self.seq_start,
            seq_end=self.seq_end,
            source_seq_ranges=self.source_seq_ranges,
            collapsed=self.collapsed,
        )


def join_messages(items: Any) -> list[str]:
    """Whole assistant messages from timeline items, updates or entries, in order.

    Consecutive ``assistant_message`` chunks are joined with no separator; any other
    item type in between ends a message (protocol.md 6.5).
    """
    messages: list[str] = []
    current: list[str] | None = None
    for value in items:
        item = value.item if isinstance(value, TimelineEntry) else value
        if isinstance(item, TimelineUpdate):
            event = item.event
            if not isinstance(event, TimelineEvent):
                continue
            item = event.item
        elif isinstance(item, TimelineEvent):
            item = item.item
        if isinstance(item, AssistantMessage):
            if current is None:
                current = []
                messages.append("")
            current.append(item.text)
            messages[-1] = "".join(current)
        else:
            current = None
    return messages
