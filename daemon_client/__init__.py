"""daemon_client: a synchronous, threaded Python client for the Paseo daemon.

>>> import daemon_client as dc
>>> with dc.connect("ws://127.0.0.1:6767/ws") as client:   # doctest: +SKIP
...     print(client.server_info)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from daemon_client.agent_create import AgentConfig
    from daemon_client.agent_handle import AgentHandle, RunResult
    from daemon_client.client import Client, connect
    from daemon_client.config import DEFAULT_APP_VERSION, DEFAULT_URL, Heartbeat, ReconnectPolicy
    from daemon_client.errors import (
        AgentCreateError,
        AuthenticationError,
        CallbackError,
        ClientClosed,
        ConnectionLost,
        ConnectTimeout,
        DaemonClientError,
        InsecureCredentials,
        NotConnected,
        ProtocolError,
        ProtocolVersionError,
        ProvidersNotReady,
        RequestTimeout,
        RpcError,
        SubscriptionReleased,
        UnsupportedByHost,
        WouldDeadlock,
    )
    from daemon_client.events import EventSubscription
    from daemon_client.observations import DirectoryObservation
    from daemon_client.projects import ProjectCache, ProjectChange
    from daemon_client.protocol.agents import AgentEntry, AgentSnapshot, Checkout, ProjectPlacement
    from daemon_client.protocol.directory import (
        AgentFilter,
        AgentListResult,
        AgentUpdate,
        DirectoryMessage,
        Page,
        PageInfo,
        Sort,
        SubscribeOptions,
        WorkspaceFilter,
        WorkspaceListResult,
        WorkspaceUpdate,
    )
    from daemon_client.protocol.hosts import HostKind
    from daemon_client.protocol.models import ServerInfo, SessionMessage, SessionPong, UnknownMessage
    from daemon_client.protocol.projects import ProjectList, ProjectSync, ProjectUpdate
    from daemon_client.protocol.providers import (
        AvailableProvider,
        ProviderEntry,
        ProviderModel,
        ProviderSnapshot,
        ProviderSnapshotUpdate,
        ThinkingOption,
    )
    from daemon_client.protocol.timeline import (
        AssistantMessage,
        AttentionRequired,
        Compaction,
        ErrorItem,
        Notification,
        PermissionRequested,
        PermissionResolved,
        Reasoning,
        Replacement,
        SubscriptionError,
        SubscriptionRestored,
        ThreadStarted,
        TimelineCursor,
        TimelineEntry,
        TimelineEvent,
        TimelinePage,
        TimelineUpdate,
        Todo,
        ToolCall,
        TurnCanceled,
        TurnCompleted,
        TurnFailed,
        TurnStarted,
        UnknownEvent,
        UnknownItem,
        UserMessage,
        join_messages,
    )
    from daemon_client.protocol.workspaces import WorkspaceDescriptor, WorkspaceProjectDescriptor
    from daemon_client.state import ConnectionState
    from daemon_client.timeline import AgentTimeline, TimelineStream
    from daemon_client.timeline_routing import TimelineAck, TimelineSubscription
    from daemon_client.workspaces import WorkspaceHandle

_LAZY: dict[str, str] = {
    "AgentConfig": "daemon_client.agent_create",
    "AgentCreateError": "daemon_client.errors",
    "AgentEntry": "daemon_client.protocol.agents",
    "AgentFilter": "daemon_client.protocol.directory",
    "AgentHandle": "daemon_client.agent_handle",
    "AgentListResult": "daemon_client.protocol.directory",
    "AgentSnapshot": "daemon_client.protocol.agents",
    "AgentTimeline": "daemon_client.timeline",
    "AgentUpdate": "daemon_client.protocol.directory",
    "AssistantMessage": "daemon_client.protocol.timeline",
    "AttentionRequired": "daemon_client.protocol.timeline",
    "AuthenticationError": "daemon_client.errors",
    "AvailableProvider": "daemon_client.protocol.providers",
    "CallbackError": "daemon_client.errors",
    "Checkout": "daemon_client.protocol.agents",
    "Client": "daemon_client.client",
    "ClientClosed": "daemon_client.errors",
    "Compaction": "daemon_client.protocol.timeline",
    "ConnectTimeout": "daemon_client.errors",
    "ConnectionLost": "daemon_client.errors",
    "ConnectionState": "daemon_client.state",
    "DEFAULT_APP_VERSION": "daemon_client.config",
    "DEFAULT_URL": "daemon_client.config",
    "DaemonClientError": "daemon_client.errors",
    "DirectoryMessage": "daemon_client.protocol.directory",
    "DirectoryObservation": "daemon_client.observations",
    "ErrorItem": "daemon_client.protocol.timeline",
    "EventSubscription": "daemon_client.events",
    "Heartbeat": "daemon_client.config",
    "HostKind": "daemon_client.protocol.hosts",
    "InsecureCredentials": "daemon_client.errors",
    "NotConnected": "daemon_client.errors",
    "Notification": "daemon_client.protocol.timeline",
    "Page": "daemon_client.protocol.directory",
    "PageInfo": "daemon_client.protocol.directory",
    "PermissionRequested": "daemon_client.protocol.timeline",
    "PermissionResolved": "daemon_client.protocol.timeline",
    "ProjectCache": "daemon_client.projects",
    "ProjectChange": "daemon_client.projects",
    "ProjectList": "daemon_client.protocol.projects",
    "ProjectPlacement": "daemon_client.protocol.agents",
    "ProjectSync": "daemon_client.protocol.projects",
    "ProjectUpdate": "daemon_client.protocol.projects",
    "ProtocolError": "daemon_client.errors",
    "ProtocolVersionError": "daemon_client.errors",
    "ProviderEntry": "daemon_client.protocol.providers",
    "ProviderModel": "daemon_client.protocol.providers",
    "ProviderSnapshot": "daemon_client.protocol.providers",
    "ProviderSnapshotUpdate": "daemon_client.protocol.providers",
    "ProvidersNotReady": "daemon_client.errors",
    "Reasoning": "daemon_client.protocol.timeline",
    "ReconnectPolicy": "daemon_client.config",
    "Replacement": "daemon_client.protocol.timeline",
    "RequestTimeout": "daemon_client.errors",
    "RpcError": "daemon_client.errors",
    "RunResult": "daemon_client.agent_handle",
    "ServerInfo": "daemon_client.protocol.models",
    "SessionMessage": "daemon_client.protocol.models",
    "SessionPong": "daemon_client.protocol.models",
    "Sort": "daemon_client.protocol.directory",
    "SubscribeOptions": "daemon_client.protocol.directory",
    "SubscriptionError": "daemon_client.protocol.timeline",
    "SubscriptionReleased": "daemon_client.errors",
    "SubscriptionRestored": "daemon_client.protocol.timeline",
    "ThinkingOption": "daemon_client.protocol.providers",
    "ThreadStarted": "daemon_client.protocol.timeline",
    "TimelineAck": "daemon_client.timeline_routing",
    "TimelineCursor": "daemon_client.protocol.timeline",
    "TimelineEntry": "daemon_client.protocol.timeline",
    "TimelineEvent": "daemon_client.protocol.timeline",
    "TimelinePage": "daemon_client.protocol.timeline",
    "TimelineStream": "daemon_client.timeline",
    "TimelineSubscription": "daemon_client.timeline_routing",
    "TimelineUpdate": "daemon_client.protocol.timeline",
    "Todo": "daemon_client.protocol.timeline",
    "ToolCall": "daemon_client.protocol.timeline",
    "TurnCanceled": "daemon_client.protocol.timeline",
    "TurnCompleted": "daemon_client.protocol.timeline",
    "TurnFailed": "daemon_client.protocol.timeline",
    "TurnStarted": "daemon_client.protocol.timeline",
    "UnknownEvent": "daemon_client.protocol.timeline",
    "UnknownItem": "daemon_client.protocol.timeline",
    "UnknownMessage": "daemon_client.protocol.models",
    "UnsupportedByHost": "daemon_client.errors",
    "UserMessage": "daemon_client.protocol.timeline",
    "WorkspaceDescriptor": "daemon_client.protocol.workspaces",
    "WorkspaceFilter": "daemon_client.protocol.directory",
    "WorkspaceHandle": "daemon_client.workspaces",
    "WorkspaceListResult": "daemon_client.protocol.directory",
    "WorkspaceProjectDescriptor": "daemon_client.protocol.workspaces",
    "WorkspaceUpdate": "daemon_client.protocol.directory",
    "WouldDeadlock": "daemon_client.errors",
    "connect": "daemon_client.client",
    "join_messages": "daemon_client.protocol.timeline",
}


def __getattr__(name: str) -> Any:
    """Import public names (and ``daemon_client.testing``) on first use: importing the
    package stays cheap, and a name costs only the modules behind it."""
    if name == "testing":
        return importlib.import_module("daemon_client.testing")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'daemon_client' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY, "testing"])


__version__ = "0.1.0"

__all__ = [
    "DEFAULT_APP_VERSION",
    "DEFAULT_URL",
    "AgentConfig",
    "AgentCreateError",
    "AgentEntry",
    "AgentFilter",
    "AgentHandle",
    "AgentListResult",
    "AgentSnapshot",
    "AgentTimeline",
    "AgentUpdate",
    "AssistantMessage",
    "AttentionRequired",
    "AuthenticationError",
    "AvailableProvider",
    "CallbackError",
    "Checkout",
    "Client",
    "ClientClosed",
    "Compaction",
    "ConnectTimeout",
    "ConnectionLost",
    "ConnectionState",
    "DaemonClientError",
    "DirectoryMessage",
    "DirectoryObservation",
    "ErrorItem",
    "EventSubscription",
    "Heartbeat",
    "HostKind",
    "InsecureCredentials",
    "NotConnected",
    "Notification",
    "Page",
    "PageInfo",
    "PermissionRequested",
    "PermissionResolved",
    "ProjectCache",
    "ProjectChange",
    "ProjectList",
    "ProjectPlacement",
    "ProjectSync",
    "ProjectUpdate",
    "ProtocolError",
    "ProtocolVersionError",
    "ProviderEntry",
    "ProviderModel",
    "ProviderSnapshot",
    "ProviderSnapshotUpdate",
    "ProvidersNotReady",
    "Reasoning",
    "ReconnectPolicy",
    "Replacement",
    "RequestTimeout",
    "RpcError",
    "RunResult",
    "ServerInfo",
    "SessionMessage",
    "SessionPong",
    "Sort",
    "SubscribeOptions",
    "SubscriptionError",
    "SubscriptionReleased",
    "SubscriptionRestored",
    "ThinkingOption",
    "ThreadStarted",
    "TimelineAck",
    "TimelineCursor",
    "TimelineEntry",
    "TimelineEvent",
    "TimelinePage",
    "TimelineStream",
    "TimelineSubscription",
    "TimelineUpdate",
    "Todo",
    "ToolCall",
    "TurnCanceled",
    "TurnCompleted",
    "TurnFailed",
    "TurnStarted",
    "UnknownEvent",
    "UnknownItem",
    "UnknownMessage",
    "UnsupportedByHost",
    "UserMessage",
    "WorkspaceDescriptor",
    "WorkspaceFilter",
    "WorkspaceHandle",
    "WorkspaceListResult",
    "WorkspaceProjectDescriptor",
    "WorkspaceUpdate",
    "WouldDeadlock",
    "__version__",
    "connect",
    "join_messages",
]
