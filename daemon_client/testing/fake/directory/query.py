"""Pure query helpers of the fake daemon's directories: request parsing, filters, sorting, cursors.

Owns the interpretation of ``fetch_agents_request`` / ``fetch_workspaces_request`` fields
(protocol.md 4.1 and 4.8): filter matching, the sort orders (ties broken by id), page limits
and the opaque base64url cursors (``{"sort":[..],"values":{..},"id":..}``, the shape the
0.1.65 daemon uses, transcript 02). Nothing here holds state or a lock; the functions run on
whichever thread calls them (connection reader threads for requests, test threads for store
mutations).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

__all__ = [
    "AGENT_SORT_KEYS",
    "DEFAULT_AGENT_SORT",
    "DEFAULT_WORKSPACE_SORT",
    "MAX_PAGE_LIMIT",
    "WORKSPACE_SORT_KEYS",
    "Page",
    "PageRequest",
    "QueryError",
    "agent_matches",
    "agent_sort_value",
    "agent_status_priority",
    "camel_case",
    "iso_from_ms",
    "ms_from_iso",
    "paginate",
    "parse_filter",
    "parse_page",
    "parse_scope",
    "parse_sort",
    "parse_subscribe",
    "workspace_matches",
    "workspace_sort_value",
]

MAX_PAGE_LIMIT = 200
AGENT_SORT_KEYS = frozenset({"status_priority", "created_at", "updated_at", "title"})
WORKSPACE_SORT_KEYS = frozenset({"status_priority", "activity_at", "name", "project_id"})
DEFAULT_AGENT_SORT: tuple[tuple[str, str], ...] = (("updated_at", "desc"),)
DEFAULT_WORKSPACE_SORT: tuple[tuple[str, str], ...] = (("activity_at", "desc"),)

_WORKSPACE_STATUS_PRIORITY = {"needs_input": 0, "failed": 1, "running": 2, "attention": 3, "done": 4}


class QueryError(Exception):
    """A request the fake answers with ``rpc_error {error: message, code}``."""

    def __init__(self, message: str, code: str = "invalid_message") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def camel_case(name: str) -> str:
    """``"created_at"`` -> ``"createdAt"``; camelCase names are returned unchanged."""
    return re.sub(r"_([a-z0-9])", lambda match: match.group(1).upper(), name)


def ms_from_iso(value: object) -> int | None:
    """Epoch milliseconds of an ISO timestamp (``None`` for null or unparsable values)."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return round(parsed.timestamp() * 1000)


def iso_from_ms(ms: int) -> str:
    """``2026-05-03T10:15:02.310Z`` for epoch milliseconds (the daemon's format)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


# -- request parsing ---------------------------------------------------------------------------


def parse_filter(message: Mapping[str, Any]) -> dict[str, Any]:
    raw = message.get("filter")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise QueryError("Invalid filter: expected an object")
    return dict(raw)


def parse_sort(
    message: Mapping[str, Any], keys: frozenset[str], default: Sequence[tuple[str, str]]
) -> list[dict[str, str]]:
    raw = message.get("sort")
    if raw is None:
        return [{"key": key, "direction": direction} for key, direction in default]
    if not isinstance(raw, list):
        raise QueryError("Invalid sort: expected an array")
    sort: list[dict[str, str]] = []
    for entry in raw:
        if not isinstance(entry, dict) or entry.get("key") not in keys or entry.get("direction") not in ("asc", "desc"):
            raise QueryError(f"Invalid sort entry: {json.dumps(entry)}")
        sort.append({"key": entry["key"], "direction": entry["direction"]})
    return sort or [{"key": key, "direction": direction} for key, direction in default]


@attrs.frozen
class PageRequest:
    limit: int = MAX_PAGE_LIMIT
    cursor: str | None = None


def parse_page(message: Mapping[str, Any]) -> PageRequest:
    raw = message.get("page")
    if raw is None:
        return PageRequest()
    if not isinstance(raw, dict):
        raise QueryError("Invalid page: expected an object")
    limit = raw.get("limit", MAX_PAGE_LIMIT)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_PAGE_LIMIT:
        raise QueryError(f"Invalid page.limit: expected an integer from 1 to {MAX_PAGE_LIMIT}")
    cursor = raw.get("cursor")
    if cursor is not None and (not isinstance(cursor, str) or not cursor):
        raise QueryError("Invalid page.cursor: expected a non-empty string")
    return PageRequest(limit, cursor)


def parse_subscribe(message: Mapping[str, Any], *, capable: bool) -> bool:
    """Whether the fetch subscribes; capable hosts refuse a client-chosen ``subscriptionId``."""
    subscribe = message.get("subscribe")
    if subscribe is None:
        return False
    if not isinstance(subscribe, dict):
        raise QueryError("Invalid subscribe: expected an object")
    if capable and "subscriptionId" in subscribe:
        raise QueryError("Subscription IDs are assigned by the host", "invalid_message")
    return True


def parse_scope(message: Mapping[str, Any]) -> str | None:
    scope = message.get("scope")
    if scope is not None and scope != "active":
        raise QueryError(f"Invalid scope: {json.dumps(scope)}")
    return scope


# -- filters -----------------------------------------------------------------------------------


def agent_status_priority(agent: Mapping[str, Any]) -> int:
    """Protocol.md 4.1: pending permission or attention=permission 0, error 1, running 2, initializing 3, else 4."""
    if agent.get("pendingPermissions") or agent.get("attentionReason") == "permission":
        return 0
    return {"error": 1, "running": 2, "initializing": 3}.get(str(agent.get("status")), 4)


def _effective_thinking(agent: Mapping[str, Any]) -> Any:
    effective = agent.get("effectiveThinkingOptionId")
    return effective if effective is not None else agent.get("thinkingOptionId")


def agent_matches(
    agent: Mapping[str, Any], project: Mapping[str, Any], filter_: Mapping[str, Any], *, active_cwds: set[str] | None
) -> bool:
    """Whether the agent passes ``filter_``; ``active_cwds`` is not ``None`` for ``scope:"active"``."""
    if agent.get("internal") is True:
        return False  # internal agents are never listed
    archived = agent.get("archivedAt") is not None
    if archived and (active_cwds is not None or filter_.get("includeArchived") is not True):
        return False
    if active_cwds is not None and agent.get("cwd") not in active_cwds:
        return False
    labels = filter_.get("labels")
    if isinstance(labels, dict):
        own = agent.get("labels") or {}
        if any(own.get(key) != value for key, value in labels.items()):
            return False
    project_keys = filter_.get("projectKeys")
    if isinstance(project_keys, list) and project.get("projectKey") not in project_keys:
        return False
    statuses = filter_.get("statuses")
    if isinstance(statuses, list) and agent.get("status") not in statuses:
        return False
    attention = filter_.get("requiresAttention")
    if isinstance(attention, bool) and bool(agent.get("requiresAttention")) is not attention:
        return False
    return not ("thinkingOptionId" in filter_ and _effective_thinking(agent) != filter_["thinkingOptionId"])


def workspace_matches(
    workspace: Mapping[str, Any], filter_: Mapping[str, Any], *, include_background: bool, use_id_prefix: bool
) -> bool:
    """Protocol.md 4.8 filter; ``idPrefix`` only where ``use_id_prefix`` (current daemons ignore it)."""
    if workspace.get("internal") is True and filter_.get("includeInternal") is not True:
        return False
    if workspace.get("background") is True and not (include_background or filter_.get("includeBackground") is True):
        return False
    query = filter_.get("query")
    if isinstance(query, str) and query:
        needle = query.casefold()
        haystack = (workspace.get("name"), workspace.get("projectId"), workspace.get("id"))
        if not any(isinstance(text, str) and needle in text.casefold() for text in haystack):
            return False
    project_id = filter_.get("projectId")
    if isinstance(project_id, str) and workspace.get("projectId") != project_id:
        return False
    prefix = filter_.get("idPrefix")
    return not (use_id_prefix and isinstance(prefix, str) and not str(workspace.get("id", "")).startswith(prefix))


# -- sorting and paging ------------------------------------------------------------------------


def agent_sort_value(agent: Mapping[str, Any], key: str) -> Any:
    if key == "status_priority":
        return agent_status_priority(agent)
    if key == "created_at":
        return ms_from_iso(agent.get("createdAt"))
    if key == "updated_at":
        return ms_from_iso(agent.get("updatedAt"))
    title = agent.get("title")
    return title if isinstance(title, str) else None


def workspace_sort_value(workspace: Mapping[str, Any], key: str) -> Any:
    if key == "status_priority":
        return _WORKSPACE_STATUS_PRIORITY.get(str(workspace.get("status")), len(_WORKSPACE_STATUS_PRIORITY))
    if key == "activity_at":
        return ms_from_iso(workspace.get("activityAt"))
    value = workspace.get("name" if key == "name" else "projectId")
    return value if isinstance(value, str) else None


Position = tuple[dict[str, Any], str]
"""Sort values by key, and the id that breaks ties."""


def _compare_values(left: Any, right: Any) -> int:
    """``None`` sorts before everything; values of different types compare by type name."""
    if left is None or right is None:
        return (left is not None) - (right is not None)
    if type(left) is not type(right) and not (isinstance(left, int | float) and isinstance(right, int | float)):
        left, right = type(left).__name__, type(right).__name__
    return int(left > right) - int(left < right)


def _compare(sort: Sequence[Mapping[str, str]], left: Position, right: Position) -> int:
    for spec in sort:
        result = _compare_values(left[0].get(spec["key"]), right[0].get(spec["key"]))
        if result:
            return result if spec["direction"] == "asc" else -result
    return (left[1] > right[1]) - (left[1] < right[1])


def _encode_cursor(sort: Sequence[Mapping[str, str]], position: Position) -> str:
    body = json.dumps({"sort": list(sort), "values": position[0], "id": position[1]}, separators=(",", ":"))
    return base64.urlsafe_b64encode(body.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, sort: Sequence[Mapping[str, str]]) -> Position:
    invalid = QueryError("Invalid cursor", "invalid_cursor")
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True)
        decoded: Any = json.loads(raw)
    except (binascii.Error, ValueError):
        raise invalid from None
    if not isinstance(decoded, dict) or decoded.get("sort") != list(sort):
        raise invalid
    values, item_id = decoded.get("values"), decoded.get("id")
    if not isinstance(values, dict) or not isinstance(item_id, str) or any(s["key"] not in values for s in sort):
        raise invalid
    return values, item_id


@attrs.frozen
class Page:
    items: list[Any]
    page_info: dict[str, Any]


def paginate(
    items: Sequence[Any],
    *,
    sort: Sequence[Mapping[str, str]],
    page: PageRequest,
    value_of: Callable[[Any, str], Any],
    id_of: Callable[[Any], str],
) -> Page:
    """Sort ``items``, skip up to and including the cursor position, cut ``page.limit`` items.

    Raises :class:`QueryError` ``invalid_cursor`` for a cursor this fake cannot decode or that
    was made for another sort order.
    """

    def position(item: Any) -> Position:
        return {spec["key"]: value_of(item, spec["key"]) for spec in sort}, id_of(item)

    def order(left: tuple[Position, Any], right: tuple[Position, Any]) -> int:
        return _compare(sort, left[0], right[0])

    positioned = sorted(((position(item), item) for item in items), key=functools.cmp_to_key(order))
    if page.cursor is not None:
        after = _decode_cursor(page.cursor, sort)
        positioned = [entry for entry in positioned if _compare(sort, entry[0], after) > 0]
    chosen = positioned[: page.limit]
    has_more = len(positioned) > page.limit
    next_cursor = _encode_cursor(sort, chosen[-1][0]) if has_more and chosen else None
    info = {"nextCursor": next_cursor, "prevCursor": page.cursor, "hasMore": has_more}
    return Page([item for _, item in chosen], info)
