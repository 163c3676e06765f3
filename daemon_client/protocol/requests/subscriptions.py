"""Subscription control requests (protocol.md 3, 6.4, 8): timeline memberships, session events,
release, and the terminal directory and stream subscriptions.

Declarations only (see :mod:`daemon_client.protocol.requests.spec`); read from any thread.
"""

from __future__ import annotations

from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.requests.spec import NEWER_HOSTS, FeatureGate, ReplyMatcher, RequestSpec, TimeoutClass

_F = "subscriptions"

TIMELINE_MEMBERSHIP = RequestSpec(
    "agent.timeline.set_subscription.request", _F, timeout=TimeoutClass.READ, required=("agentIds",),
    feature=FeatureGate("selectiveAgentTimeline", "subscribe to agent timelines", "0.1.106"), hosts=NEWER_HOSTS,
)  # fmt: skip
"""Capable hosts (one membership per handle) and selective ones with the flag (the union), protocol.md 6.6."""
SESSION_EVENTS = RequestSpec(
    "session.events.set_subscription.request", _F, timeout=TimeoutClass.READ, required=("events",),
    feature=FeatureGate("explicitEventSubscriptions", "subscribe to session events", "0.1.108"), hosts=NEWER_HOSTS,
)  # fmt: skip
"""Capable hosts and selective ones with the flag (protocol.md 3.2); 0.1.108 is the oldest version
known to report it (the selective example of protocol.md 11.1)."""
RELEASE = RequestSpec(
    "subscription.release.request", _F, timeout=TimeoutClass.READ, required=("subscriptionId",),
    hosts=frozenset({HostKind.CAPABLE}),
)  # fmt: skip
"""Owned subscriptions only: legacy hosts release locally, nothing is sent (protocol.md 4.6)."""
TERMINAL_DIRECTORY = RequestSpec(
    "subscribe_terminals_request", _F, reply=ReplyMatcher("terminals_changed"), required=("cwd",),
    request_id_optional=True, api="client.terminals.subscribe()",
)  # fmt: skip
"""No ``requestId`` and no direct reply: the first ``terminals_changed`` answers (protocol-surface.md 12.2.9)."""
TERMINAL_STREAM = RequestSpec(
    "subscribe_terminal_request", _F, timeout=TimeoutClass.TERMINAL, required=("terminalId",), api="terminal.stream()"
)

REQUESTS = (TIMELINE_MEMBERSHIP, SESSION_EVENTS, RELEASE, TERMINAL_DIRECTORY, TERMINAL_STREAM)
