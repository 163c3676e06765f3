"""Subscription control requests (protocol.md 3, 6.4, 8): timeline memberships, session events,
release, and the terminal directory and stream subscriptions.

Declarations only (see :mod:`daemon_client.protocol.requests.spec`); read from any thread.
"""

from __future__ import annotations

from daemon_client.protocol.requests.spec import ReplyMatcher, RequestSpec, TimeoutClass

_F = "subscriptions"

TIMELINE_MEMBERSHIP = RequestSpec(
    "agent.timeline.set_subscription.request", _F, timeout=TimeoutClass.READ, required=("agentIds",)
)
SESSION_EVENTS = RequestSpec(
    "session.events.set_subscription.request", _F, timeout=TimeoutClass.READ, required=("events",)
)
RELEASE = RequestSpec("subscription.release.request", _F, timeout=TimeoutClass.READ, required=("subscriptionId",))
TERMINAL_DIRECTORY = RequestSpec(
    "subscribe_terminals_request", _F, reply=ReplyMatcher("terminals_changed"), api="client.terminals.subscribe()"
)
TERMINAL_STREAM = RequestSpec("subscribe_terminal_request", _F, timeout=TimeoutClass.TERMINAL, api="terminal.stream()")

REQUESTS = (TIMELINE_MEMBERSHIP, SESSION_EVENTS, RELEASE, TERMINAL_DIRECTORY, TERMINAL_STREAM)
