"""Host kinds and the capabilities this client advertises (protocol.md sections 1.4 and 3).

Pure functions and constants; called by the connection supervisor's reader thread when
a ``server_info`` completes a handshake.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

#: Capabilities sent in every ``hello``: only behaviour this client implements.
CLIENT_CAPABILITIES: Mapping[str, bool] = {
    "owned_subscriptions": True,
    "explicit_event_subscriptions": True,
    "selective_agent_timeline": True,
    "timeline_replacement_invalidation": True,
    "hello_rejection": True,
    "reasoning_merge_enum": True,
    "project_updates": True,
    "timeline_notifications": True,
    "all_providers": True,
}


class HostKind(enum.Enum):
    """How a daemon routes observations (protocol.md section 3)."""

    CAPABLE = "capable"
    """Owned subscriptions with server-issued IDs (current daemons)."""
    SELECTIVE = "selective"
    """Shared slots and union memberships (v0.1.106 up to owned subscriptions)."""
    BROADCAST = "broadcast"
    """Everything broadcast, shared slots, no membership RPCs (0.1.65 and older)."""


def decide_host_kind(features: Mapping[str, object], *, advertised_owned: bool = True) -> HostKind:
    """Decide the host kind from ``server_info.features`` (absent flags mean ``False``)."""
    if advertised_owned and features.get("ownedSubscriptions") is True:
        return HostKind.CAPABLE
    if features.get("selectiveAgentTimeline") is True or features.get("explicitEventSubscriptions") is True:
        return HostKind.SELECTIVE
    return HostKind.BROADCAST
