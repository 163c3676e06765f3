"""Directory queries and results: filters, sort, paging, list results and update messages
of the agent directory, and what the workspace directory shares with it (protocol.md 4.1-4.3,
4.8); the workspace directory's own are in :mod:`daemon_client.protocol.workspace_directory`
(a listing of agents never creates the workspace models).

Query objects validate themselves on construction (``ValueError`` before anything is
sent) and render their wire form. Parsers turn reply and update payloads into models;
they run on whichever thread first needs the typed value. Pure data and functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

import attrs

from daemon_client.errors import ProtocolError
from daemon_client.protocol.agents import AgentEntry, AgentSnapshot, ProjectPlacement
from daemon_client.protocol.codec import structure
from daemon_client.protocol.lenient import structure_each, structure_optional, unknown_fields

P = TypeVar("P")

MAX_PAGE_LIMIT = 200
AGENT_SORT_KEYS = frozenset({"status_priority", "created_at", "updated_at", "title"})


def drop_none(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` without the ``None`` values (a query's wire form)."""
    return {key: value for key, value in fields.items() if value is not None}


@attrs.frozen
class Page:
    """Which page to read: at most ``limit`` entries (1..200) after an opaque ``cursor``."""

    limit: int | None = None
    cursor: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.limit is not None and (
            isinstance(self.limit, bool) or not isinstance(self.limit, int) or not 1 <= self.limit <= MAX_PAGE_LIMIT
        ):
            raise ValueError(f"page limit must be an integer from 1 to {MAX_PAGE_LIMIT}, got {self.limit!r}")
        if self.cursor is not None and (not isinstance(self.cursor, str) or not self.cursor):
            raise ValueError("page cursor must be a non-empty string (a nextCursor from an earlier page)")

    def to_wire(self) -> dict[str, Any]:
        return drop_none({"limit": self.limit, "cursor": self.cursor})


@attrs.frozen
class Sort:
    """One sort key and its direction (``"asc"`` or ``"desc"``)."""

    key: str
    direction: str = "desc"

    def __attrs_post_init__(self) -> None:
        if self.direction not in ("asc", "desc"):
            raise ValueError(f"sort direction must be 'asc' or 'desc', got {self.direction!r}")


SortLike = Sort | tuple[str, str] | str


def sort_to_wire(sort: Sequence[SortLike] | None, allowed: frozenset[str]) -> list[dict[str, str]] | None:
    """Validate ``sort`` (``Sort``, ``(key, direction)`` or ``"key"`` for descending) and render it."""
    if sort is None:
        return None
    if isinstance(sort, str | Sort):
        sort = [sort]
    rendered = []
    for item in sort:
        spec = item if isinstance(item, Sort) else Sort(item) if isinstance(item, str) else Sort(*item)
        if spec.key not in allowed:
            raise ValueError(f"unknown sort key {spec.key!r}; use one of {', '.join(sorted(allowed))}")
        rendered.append({"key": spec.key, "direction": spec.direction})
    return rendered


@attrs.frozen
class AgentFilter:
    """Which agents a directory read or observation covers (every given field must match)."""

    labels: Mapping[str, str] | None = None
    project_keys: Sequence[str] | None = None
    statuses: Sequence[str] | None = None
    include_archived: bool | None = None
    requires_attention: bool | None = None
    thinking_option_id: str | None = None
    include_internal: bool | None = None
    include_background: bool | None = None

    def to_wire(self) -> dict[str, Any]:
        return drop_none(
            {
                "labels": dict(self.labels) if self.labels is not None else None,
                "projectKeys": list(self.project_keys) if self.project_keys is not None else None,
                "statuses": list(self.statuses) if self.statuses is not None else None,
                "includeArchived": self.include_archived,
                "requiresAttention": self.requires_attention,
                "thinkingOptionId": self.thinking_option_id,
                "includeInternal": self.include_internal,
                "includeBackground": self.include_background,
            }
        )


@attrs.frozen
class SubscribeOptions:
    """Options of a subscribing ``list()``; none exist yet. The daemon (or, on older daemons,
    this client) issues the subscription ID: callers never supply one."""


@attrs.frozen
class PageInfo:
    """Where a page sits: ``next_cursor`` reads on, ``prev_cursor`` echoes the request's cursor."""

    next_cursor: str | None = None
    prev_cursor: str | None = None
    has_more: bool = False


@attrs.frozen
class AgentListResult:
    """A page of the agent directory; with ``subscribe`` also the live observation."""

    entries: tuple[AgentEntry, ...]
    page_info: PageInfo = PageInfo()
    subscription_id: str | None = None
    subscription: Any = attrs.field(default=None, repr=False, eq=False)
    sync: Mapping[str, Any] | None = None


@attrs.frozen
class AgentUpdate:
    """``agent_update`` payload: ``kind`` is ``"upsert"`` (``agent`` set) or ``"remove"``."""

    kind: str
    agent_id: str
    agent: AgentSnapshot | None = None
    project: ProjectPlacement | None = None
    subscription_id: str | None = None
    generation: Any = None
    seq: int | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class DirectoryMessage(Generic[P]):
    """A whole update message as delivered to ``update`` callbacks: ``type`` and typed ``payload``."""

    type: str
    payload: P


def list_at(payload: Mapping[str, Any], key: str) -> list[Any]:
    """``payload[key]`` as a list (absent or null: empty); ``ProtocolError`` for anything else."""
    value = payload.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ProtocolError(f"{key} is {type(value).__name__}, not a list")
    return value


def optional_at(payload: Mapping[str, Any], key: str, cls: type[P]) -> P | None:
    """The object at ``key``, or ``None`` (absent, not an object, or without its identity)."""
    return structure_optional(payload.get(key), cls, key)


def page_info_of(payload: Mapping[str, Any]) -> PageInfo:
    """The reply's ``pageInfo`` (an empty one when absent)."""
    return optional_at(payload, "pageInfo", PageInfo) or PageInfo()


def sync_of(payload: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The reply's ``sync`` object, if any."""
    value = payload.get("sync")
    return value if isinstance(value, Mapping) else None


def parse_agent_list(payload: Mapping[str, Any]) -> AgentListResult:
    """``fetch_agents_response`` payload → :class:`AgentListResult` (no subscription attached)."""
    return AgentListResult(
        entries=structure_each(list_at(payload, "entries"), AgentEntry, "entries"),
        page_info=page_info_of(payload),
        sync=sync_of(payload),
    )


def seq_of(payload: Mapping[str, Any]) -> int | None:
    """The update's integer ``seq``, if any."""
    seq = payload.get("seq")
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else None


def entry_at(payload: Mapping[str, Any], key: str, cls: type[P]) -> P | None:
    """The updated object at ``key``: ``None`` when absent; :class:`ProtocolError` when it has
    no usable identity (the update cannot be applied, so it is skipped)."""
    value = payload.get(key)
    return structure(value, cls) if isinstance(value, Mapping) else None


def text_at(payload: Mapping[str, Any], key: str) -> str | None:
    """``payload[key]`` when it is a string."""
    value = payload.get(key)
    return value if isinstance(value, str) else None


_AGENT_UPDATE_KEYS = ("kind", "agentId", "agent", "project", "subscriptionId", "generation", "seq")


def parse_agent_update(payload: Mapping[str, Any]) -> DirectoryMessage[AgentUpdate]:
    """``agent_update`` payload → the typed message handed to ``update`` callbacks."""
    agent = entry_at(payload, "agent", AgentSnapshot)
    agent_id = agent.id if agent is not None else str(payload.get("agentId") or "")
    project = payload.get("project")
    placement = optional_at(payload, "project", ProjectPlacement)
    extra = unknown_fields(payload, _AGENT_UPDATE_KEYS)
    if placement is None and project is not None:
        extra["project"] = project
    update = AgentUpdate(
        kind=str(payload.get("kind") or ""),
        agent_id=agent_id,
        agent=agent,
        project=placement,
        subscription_id=text_at(payload, "subscriptionId"),
        generation=payload.get("generation"),
        seq=seq_of(payload),
        extra_fields=extra,
    )
    return DirectoryMessage("agent_update", update)
