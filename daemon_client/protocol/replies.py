"""Which daemon message answers which request (protocol.md 2.2), and default timeouts (2.6),
read from the request declarations (:mod:`daemon_client.protocol.requests`).

Pure lookups, one dict lookup each, called on the caller's thread when a request is made and
on the reader thread when a reply is matched. A type that is not declared falls back to the
naming rule of 2.2 and the caller's default timeout.
"""

from __future__ import annotations

from daemon_client.protocol.requests import CATALOG
from daemon_client.protocol.requests.spec import ReplyMatcher, reply_by_rule

__all__ = ["CLOSE_RELEASE_TIMEOUT", "ReplyMatcher", "default_timeout_for", "is_reply", "reply_for"]

_MATCHERS: dict[str, ReplyMatcher] = {spec.type: spec.reply for spec in CATALOG.values()}
_TIMEOUTS: dict[str, float] = {spec.type: spec.timeout.seconds for spec in CATALOG.values() if spec.timeout}


def reply_for(request_type: str) -> ReplyMatcher:
    """The reply matcher of ``request_type``: its declaration's, else the naming rule's."""
    known = _MATCHERS.get(request_type)
    return known if known is not None else reply_by_rule(request_type)


CLOSE_RELEASE_TIMEOUT = 2.0
"""How long ``close()`` gives the daemon to confirm the release of live subscriptions."""


def default_timeout_for(request_type: str, fallback: float) -> float:
    """The default timeout of a request type (its declaration's timeout class), else ``fallback``."""
    known = _TIMEOUTS.get(request_type)
    if known is not None:
        return known
    if request_type.startswith("set_agent_") and request_type.endswith("_request"):
        return 15.0
    return fallback


_REPLY_STATUSES = frozenset(
    status for matcher in _MATCHERS.values() if matcher.statuses is not None for status in matcher.statuses
)
"""The ``status`` values that answer a request; every other ``status`` is a push."""
_REPLY_TYPES = frozenset(
    {"rpc_error", "pong", "agent_archived", "agent_deleted", "terminals_changed", "set_voice_mode_response"}
)


def is_reply(message_type: str, payload: dict[str, object]) -> bool:
    """Whether a message carrying a ``requestId`` is a reply (rather than a push that happens to
    carry one, like ``agent_permission_resolved`` or a progress ``status``): replies to unknown
    requests are dropped, pushes are delivered."""
    if message_type in _REPLY_TYPES or message_type.endswith(("_response", ".response", "/response")):
        return True
    status = payload.get("status")
    return message_type == "status" and isinstance(status, str) and status in _REPLY_STATUSES
