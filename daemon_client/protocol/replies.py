"""Which daemon message answers which request (protocol.md 2.2), and default timeouts (2.6).

Pure lookups, called on the caller's thread when a request is made and on the reader
thread when a reply is matched.
"""

from __future__ import annotations

from daemon_client._values import Record


class ReplyMatcher(Record):
    """The reply a request waits for: a message type, and for ``status`` replies the statuses.

    Built once per request: a plain slotted class, never changed once built.
    """

    __slots__ = ("statuses", "type")

    type: str
    statuses: frozenset[str] | None

    def __init__(self, type: str, statuses: frozenset[str] | None = None) -> None:
        self.type = type
        self.statuses = statuses

    def matches(self, message_type: str, payload: dict[str, object]) -> bool:
        if message_type != self.type:
            return False
        if self.statuses is None:
            return True
        status = payload.get("status")
        return isinstance(status, str) and status in self.statuses


_EXCEPTIONS: dict[str, ReplyMatcher] = {
    "ping": ReplyMatcher("pong"),
    "create_agent_request": ReplyMatcher("status", frozenset({"agent_created", "agent_create_failed"})),
    "import_agent_request": ReplyMatcher("status", frozenset({"agent_resumed", "agent_create_failed"})),
    "resume_agent_request": ReplyMatcher("status", frozenset({"agent_resumed"})),
    "refresh_agent_request": ReplyMatcher("status", frozenset({"agent_refreshed"})),
    "restart_server_request": ReplyMatcher("status", frozenset({"restart_requested"})),
    "shutdown_server_request": ReplyMatcher("status", frozenset({"shutdown_requested"})),
    "archive_agent_request": ReplyMatcher("agent_archived"),
    "delete_agent_request": ReplyMatcher("agent_deleted"),
    "subscribe_terminals_request": ReplyMatcher("terminals_changed"),
}


def reply_for(request_type: str) -> ReplyMatcher:
    """The reply matcher of ``request_type`` by the naming rule and its exceptions."""
    known = _EXCEPTIONS.get(request_type)
    if known is not None:
        return known
    if request_type.endswith("_request"):
        return ReplyMatcher(request_type[: -len("_request")] + "_response")
    if request_type.endswith(".request"):
        return ReplyMatcher(request_type[: -len(".request")] + ".response")
    if "/" in request_type:
        return ReplyMatcher(request_type + "/response")
    return ReplyMatcher(request_type + "_response")


_TIMEOUTS: dict[str, float] = {
    "ping": 5.0,
    "fetch_agents_request": 15.0,
    "fetch_workspaces_request": 15.0,
    "project.list.request": 15.0,
    "fetch_agent_request": 15.0,
    "fetch_agent_history_request": 15.0,
    "agent.timeline.set_subscription.request": 15.0,
    "session.events.set_subscription.request": 15.0,
    "subscription.release.request": 15.0,
    "fetch_agent_timeline_request": 30.0,
    "cancel_agent_request": 15.0,
    "archive_agent_request": 15.0,
    "update_agent_request": 15.0,
    "send_agent_message_request": 30.0,
    "create_agent_request": 60.0,
    "agent.create.request": 120.0,
    "open_project_request": 15.0,
    "archive_workspace_request": 30.0,
    "get_providers_snapshot_request": 15.0,
    "list_available_providers_request": 30.0,
    "list_provider_models_request": 90.0,
    "list_provider_modes_request": 90.0,
    "refresh_providers_snapshot_request": 120.0,
    "provider_diagnostic_request": 180.0,
    # protocol.md 12.8: configuration, agent settings, workspace creation, provider extras
    "get_daemon_config_request": 15.0,
    "set_daemon_config_request": 15.0,
    "list_commands_request": 30.0,
    "clear_agent_attention": 15.0,
    "delete_agent_request": 15.0,
    "refresh_agent_request": 60.0,
    "agent.detach.request": 15.0,
    "agent.fork_context.request": 60.0,
    "workspace.create.request": 120.0,
    "create_paseo_worktree_request": 120.0,
    "paseo_worktree_archive_request": 120.0,
    "paseo_worktree_list_request": 30.0,
    "workspace.title.set.request": 15.0,
    "list_provider_features_request": 90.0,
    "provider.usage.list.request": 60.0,
    "create_terminal_request": 10.0,
    "list_terminals_request": 10.0,
    "capture_terminal_request": 10.0,
    "kill_terminal_request": 10.0,
    "subscribe_terminal_request": 10.0,
}


CLOSE_RELEASE_TIMEOUT = 2.0
"""How long ``close()`` gives the daemon to confirm the release of live subscriptions."""


def default_timeout_for(request_type: str, fallback: float) -> float:
    """The default timeout of a request type (protocol 2.6), else ``fallback``."""
    if request_type.startswith("set_agent_") and request_type.endswith("_request"):
        return 15.0
    return _TIMEOUTS.get(request_type, fallback)


_REPLY_STATUSES = frozenset(
    status for matcher in _EXCEPTIONS.values() if matcher.statuses is not None for status in matcher.statuses
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
