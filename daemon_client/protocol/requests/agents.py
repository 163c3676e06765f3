"""Agent requests (protocol.md 4-6, 12.4): reads, runs, actions, settings and creation.

Declarations only (see :mod:`daemon_client.protocol.requests.spec`); read from any thread.
"""

from __future__ import annotations

from daemon_client.protocol.requests.spec import FeatureGate, ReplyMatcher, RequestSpec, TimeoutClass

_F = "agents"
_R = TimeoutClass.READ


def _status(*statuses: str) -> ReplyMatcher:
    return ReplyMatcher("status", frozenset(statuses))


FETCH_AGENTS = RequestSpec("fetch_agents_request", _F, timeout=_R, api="client.agents.list()")
FETCH_AGENT = RequestSpec("fetch_agent_request", _F, timeout=_R, required=("agentId",), api="client.agents.fetch()")
FETCH_AGENT_HISTORY = RequestSpec("fetch_agent_history_request", _F, timeout=_R)
FETCH_TIMELINE = RequestSpec(
    "fetch_agent_timeline_request", _F, timeout=TimeoutClass.SLOW_READ, required=("agentId",),
    parse="daemon_client.protocol.timeline:parse_page", api="agent.timeline.fetch()",
)  # fmt: skip
CREATE_LEGACY = RequestSpec(
    "create_agent_request", _F, reply=_status("agent_created", "agent_create_failed"),
    timeout=TimeoutClass.WORK, required=("config",), api="client.agents.create()",
)  # fmt: skip
CREATION_LIFECYCLE = FeatureGate("creationLifecycle", "create agents through the creation lifecycle", "0.9.3")
"""The flag of the creation lifecycle (protocol.md 5.3). Its first version is not recorded: 0.9.3
is the oldest one known to report it (the capable example of protocol.md 11.1; 0.1.108 does not)."""
CREATE = RequestSpec(
    "agent.create.request", _F, timeout=TimeoutClass.LONG_WORK, required=("config",), feature=CREATION_LIFECYCLE,
    api="client.agents.create()",
)  # fmt: skip
CREATION_SUBSCRIBE = RequestSpec(
    "creation.subscribe.request", _F, required=("idempotencyKey",), feature=CREATION_LIFECYCLE
)
IMPORT = RequestSpec("import_agent_request", _F, reply=_status("agent_resumed", "agent_create_failed"))
RESUME = RequestSpec("resume_agent_request", _F, reply=_status("agent_resumed"))
REFRESH = RequestSpec(
    "refresh_agent_request", _F, reply=_status("agent_refreshed"), timeout=TimeoutClass.WORK, required=("agentId",)
)
SEND_MESSAGE = RequestSpec(
    "send_agent_message_request", _F, timeout=TimeoutClass.SLOW_READ, required=("agentId", "text"),
    api="agent.send()",
)  # fmt: skip
WAIT_FOR_FINISH = RequestSpec("wait_for_finish_request", _F, required=("agentId",), api="agent.wait_for_finish()")
"""Its timeout follows the wait it asks for (protocol.md 2.6): the caller always passes one."""
CANCEL = RequestSpec(
    "cancel_agent_request", _F, timeout=_R, required=("agentId",), request_id_optional=True, api="agent.cancel()"
)
ARCHIVE = RequestSpec(
    "archive_agent_request", _F, reply=ReplyMatcher("agent_archived"), timeout=_R, required=("agentId",),
    api="agent.archive()",
)  # fmt: skip
DELETE = RequestSpec(
    "delete_agent_request", _F, reply=ReplyMatcher("agent_deleted"), timeout=_R, required=("agentId",),
    api="agent.controls.delete()",
)  # fmt: skip
UPDATE = RequestSpec("update_agent_request", _F, timeout=_R, required=("agentId",), api="agent.controls.update()")
CLEAR_ATTENTION = RequestSpec(
    "clear_agent_attention", _F, timeout=_R, required=("agentId",), request_id_optional=True,
    api="agent.controls.clear_attention()",
)  # fmt: skip
LIST_COMMANDS = RequestSpec(
    "list_commands_request", _F, timeout=TimeoutClass.SLOW_READ, required=("agentId",),
    api="agent.controls.commands(), client.providers.commands()",
)  # fmt: skip
"""An agent's commands (``agentId``), or with a ``draftConfig`` and an ``agentId`` that names no
loaded agent those of a configuration (every host kind, 0.1.65 included)."""
SET_MODE = RequestSpec(
    "set_agent_mode_request", _F, timeout=_R, required=("agentId", "modeId"), api="agent.controls.set_mode()"
)
SET_MODEL = RequestSpec(
    "set_agent_model_request", _F, timeout=_R, required=("agentId", "modelId"), api="agent.controls.set_model()"
)
SET_THINKING = RequestSpec(
    "set_agent_thinking_request", _F, timeout=_R, required=("agentId", "thinkingOptionId"),
    api="agent.controls.set_thinking()",
)  # fmt: skip
SET_FEATURE = RequestSpec(
    "set_agent_feature_request", _F, timeout=_R, required=("agentId", "featureId"), api="agent.controls.set_feature()"
)
DETACH = RequestSpec(
    "agent.detach.request", _F, timeout=_R, required=("agentId",),
    feature=FeatureGate("agentDetach", "detach agents", "0.1.98"), api="agent.controls.detach()",
)  # fmt: skip
FORK_CONTEXT = RequestSpec(
    "agent.fork_context.request", _F, timeout=TimeoutClass.WORK, required=("agentId",),
    feature=FeatureGate("agentForkContext", "fork agent context", "0.1.102"), api="agent.controls.fork_context()",
)  # fmt: skip
FORK_CONTEXT_CURSOR = FeatureGate("agentForkContextCursor", "fork agent context at a cursor", "0.1.108")
"""The further flag :data:`FORK_CONTEXT` needs when a cursor is given."""

REQUESTS = (
    FETCH_AGENTS, FETCH_AGENT, FETCH_AGENT_HISTORY, FETCH_TIMELINE, CREATE_LEGACY, CREATE, CREATION_SUBSCRIBE,
    IMPORT, RESUME, REFRESH, SEND_MESSAGE, WAIT_FOR_FINISH, CANCEL, ARCHIVE, DELETE, UPDATE, CLEAR_ATTENTION,
    LIST_COMMANDS, SET_MODE, SET_MODEL, SET_THINKING, SET_FEATURE, DETACH, FORK_CONTEXT,
)  # fmt: skip
