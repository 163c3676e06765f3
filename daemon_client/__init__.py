"""daemon_client: a synchronous, threaded Python client for the Paseo daemon.

>>> import daemon_client as dc
>>> with dc.connect("ws://127.0.0.1:6767/ws") as client:   # doctest: +SKIP
...     print(client.server_info)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    COMPILED: bool
    """True when the compiled build (mypyc) is running, False for the pure-Python package."""
    from daemon_client.api.agents.controls import AgentControls as AgentControls
    from daemon_client.api.agents.create import AgentConfig as AgentConfig
    from daemon_client.api.agents.handle import AgentHandle as AgentHandle
    from daemon_client.api.agents.handle import RunResult as RunResult
    from daemon_client.api.agents.timeline import AgentTimeline as AgentTimeline
    from daemon_client.api.agents.timeline import TimelineStream as TimelineStream
    from daemon_client.api.projects import ProjectCache as ProjectCache
    from daemon_client.api.projects import ProjectChange as ProjectChange
    from daemon_client.api.terminals.handle import TerminalHandle as TerminalHandle
    from daemon_client.api.terminals.namespace import WorkspaceTerminals as WorkspaceTerminals
    from daemon_client.api.workspaces.namespace import WorkspaceHandle as WorkspaceHandle
    from daemon_client.api.workspaces.workspace_agents import WorkspaceAgents as WorkspaceAgents
    from daemon_client.client import Client as Client
    from daemon_client.client import connect as connect
    from daemon_client.client import probe_host as probe_host
    from daemon_client.config import DEFAULT_APP_VERSION as DEFAULT_APP_VERSION
    from daemon_client.config import DEFAULT_URL as DEFAULT_URL
    from daemon_client.config import Heartbeat as Heartbeat
    from daemon_client.config import ReconnectPolicy as ReconnectPolicy
    from daemon_client.discovery import DaemonTarget as DaemonTarget
    from daemon_client.discovery import RelayTarget as RelayTarget
    from daemon_client.discovery import Resolution as Resolution
    from daemon_client.discovery import TargetKind as TargetKind
    from daemon_client.discovery.failover import Probe as Probe
    from daemon_client.discovery.profiles import Host as Host
    from daemon_client.discovery.profiles import HostConnection as HostConnection
    from daemon_client.discovery.store import HostConflict as HostConflict
    from daemon_client.discovery.store import HostStore as HostStore
    from daemon_client.discovery.store import HostStoreError as HostStoreError
    from daemon_client.discovery.store import UnknownHost as UnknownHost
    from daemon_client.errors import AgentCreateError as AgentCreateError
    from daemon_client.errors import AuthenticationError as AuthenticationError
    from daemon_client.errors import CallbackError as CallbackError
    from daemon_client.errors import ClientClosed as ClientClosed
    from daemon_client.errors import ConnectionLost as ConnectionLost
    from daemon_client.errors import ConnectionUnavailable as ConnectionUnavailable
    from daemon_client.errors import ConnectTimeout as ConnectTimeout
    from daemon_client.errors import DaemonClientError as DaemonClientError
    from daemon_client.errors import ExpectTimeout as ExpectTimeout
    from daemon_client.errors import InsecureCredentials as InsecureCredentials
    from daemon_client.errors import MissingExtra as MissingExtra
    from daemon_client.errors import NotConnected as NotConnected
    from daemon_client.errors import PairingError as PairingError
    from daemon_client.errors import ProtocolError as ProtocolError
    from daemon_client.errors import ProtocolVersionError as ProtocolVersionError
    from daemon_client.errors import ProvidersNotReady as ProvidersNotReady
    from daemon_client.errors import RequestTimeout as RequestTimeout
    from daemon_client.errors import RpcError as RpcError
    from daemon_client.errors import ServerMismatch as ServerMismatch
    from daemon_client.errors import SubscriptionReleased as SubscriptionReleased
    from daemon_client.errors import TerminalExited as TerminalExited
    from daemon_client.errors import UnknownConfigKeys as UnknownConfigKeys
    from daemon_client.errors import UnsupportedByHost as UnsupportedByHost
    from daemon_client.errors import WouldDeadlock as WouldDeadlock
    from daemon_client.errors import check_reply as check_reply
    from daemon_client.fleet import Fleet as Fleet
    from daemon_client.fleet import FleetDirectory as FleetDirectory
    from daemon_client.fleet import FleetEntry as FleetEntry
    from daemon_client.fleet import FleetEvent as FleetEvent
    from daemon_client.fleet import FleetListing as FleetListing
    from daemon_client.protocol.agent_settings import AgentCommand as AgentCommand
    from daemon_client.protocol.agent_settings import ForkAttachment as ForkAttachment
    from daemon_client.protocol.agent_settings import ForkContext as ForkContext
    from daemon_client.protocol.agent_settings import SettingNotice as SettingNotice
    from daemon_client.protocol.agent_settings import SettingResult as SettingResult
    from daemon_client.protocol.agents import AgentEntry as AgentEntry
    from daemon_client.protocol.agents import AgentSnapshot as AgentSnapshot
    from daemon_client.protocol.agents import Checkout as Checkout
    from daemon_client.protocol.agents import ProjectPlacement as ProjectPlacement
    from daemon_client.protocol.attachments import Attachment as Attachment
    from daemon_client.protocol.attachments import ChangeRequestAttachment as ChangeRequestAttachment
    from daemon_client.protocol.attachments import IssueAttachment as IssueAttachment
    from daemon_client.protocol.attachments import TextAttachment as TextAttachment
    from daemon_client.protocol.attachments import UploadedFile as UploadedFile
    from daemon_client.protocol.config import AgentProfile as AgentProfile
    from daemon_client.protocol.config import DaemonConfig as DaemonConfig
    from daemon_client.protocol.directory import AgentFilter as AgentFilter
    from daemon_client.protocol.directory import AgentListResult as AgentListResult
    from daemon_client.protocol.directory import AgentUpdate as AgentUpdate
    from daemon_client.protocol.directory import DirectoryMessage as DirectoryMessage
    from daemon_client.protocol.directory import Page as Page
    from daemon_client.protocol.directory import PageInfo as PageInfo
    from daemon_client.protocol.directory import Sort as Sort
    from daemon_client.protocol.directory import SubscribeOptions as SubscribeOptions
    from daemon_client.protocol.hosts import HostKind as HostKind
    from daemon_client.protocol.models import ServerInfo as ServerInfo
    from daemon_client.protocol.models import SessionMessage as SessionMessage
    from daemon_client.protocol.models import SessionPong as SessionPong
    from daemon_client.protocol.models import UnknownMessage as UnknownMessage
    from daemon_client.protocol.projects import ProjectList as ProjectList
    from daemon_client.protocol.projects import ProjectSync as ProjectSync
    from daemon_client.protocol.projects import ProjectUpdate as ProjectUpdate
    from daemon_client.protocol.provider_usage import ProviderUsage as ProviderUsage
    from daemon_client.protocol.provider_usage import ProviderUsageList as ProviderUsageList
    from daemon_client.protocol.provider_usage import UsageWindow as UsageWindow
    from daemon_client.protocol.providers import AvailableProvider as AvailableProvider
    from daemon_client.protocol.providers import ProviderEntry as ProviderEntry
    from daemon_client.protocol.providers import ProviderModel as ProviderModel
    from daemon_client.protocol.providers import ProviderSnapshot as ProviderSnapshot
    from daemon_client.protocol.providers import ProviderSnapshotUpdate as ProviderSnapshotUpdate
    from daemon_client.protocol.providers import ThinkingOption as ThinkingOption
    from daemon_client.protocol.terminals import TerminalCapture as TerminalCapture
    from daemon_client.protocol.terminals import TerminalCell as TerminalCell
    from daemon_client.protocol.terminals import TerminalCursor as TerminalCursor
    from daemon_client.protocol.terminals import TerminalInfo as TerminalInfo
    from daemon_client.protocol.terminals import TerminalList as TerminalList
    from daemon_client.protocol.terminals import TerminalsChanged as TerminalsChanged
    from daemon_client.protocol.terminals import TerminalState as TerminalState
    from daemon_client.protocol.timeline import AssistantMessage as AssistantMessage
    from daemon_client.protocol.timeline import AttentionRequired as AttentionRequired
    from daemon_client.protocol.timeline import Compaction as Compaction
    from daemon_client.protocol.timeline import ErrorItem as ErrorItem
    from daemon_client.protocol.timeline import Lagged as Lagged
    from daemon_client.protocol.timeline import Notification as Notification
    from daemon_client.protocol.timeline import PermissionRequested as PermissionRequested
    from daemon_client.protocol.timeline import PermissionResolved as PermissionResolved
    from daemon_client.protocol.timeline import Reasoning as Reasoning
    from daemon_client.protocol.timeline import Replacement as Replacement
    from daemon_client.protocol.timeline import SubscriptionError as SubscriptionError
    from daemon_client.protocol.timeline import SubscriptionRestored as SubscriptionRestored
    from daemon_client.protocol.timeline import ThreadStarted as ThreadStarted
    from daemon_client.protocol.timeline import TimelineCursor as TimelineCursor
    from daemon_client.protocol.timeline import TimelineEntry as TimelineEntry
    from daemon_client.protocol.timeline import TimelineEvent as TimelineEvent
    from daemon_client.protocol.timeline import TimelinePage as TimelinePage
    from daemon_client.protocol.timeline import TimelineUpdate as TimelineUpdate
    from daemon_client.protocol.timeline import Todo as Todo
    from daemon_client.protocol.timeline import ToolCall as ToolCall
    from daemon_client.protocol.timeline import TurnCanceled as TurnCanceled
    from daemon_client.protocol.timeline import TurnCompleted as TurnCompleted
    from daemon_client.protocol.timeline import TurnFailed as TurnFailed
    from daemon_client.protocol.timeline import TurnStarted as TurnStarted
    from daemon_client.protocol.timeline import UnknownEvent as UnknownEvent
    from daemon_client.protocol.timeline import UnknownItem as UnknownItem
    from daemon_client.protocol.timeline import UserMessage as UserMessage
    from daemon_client.protocol.timeline import join_messages as join_messages
    from daemon_client.protocol.workspace_directory import WorkspaceFilter as WorkspaceFilter
    from daemon_client.protocol.workspace_directory import WorkspaceListResult as WorkspaceListResult
    from daemon_client.protocol.workspace_directory import WorkspaceUpdate as WorkspaceUpdate
    from daemon_client.protocol.workspace_labels import WorkspaceLabel as WorkspaceLabel
    from daemon_client.protocol.workspace_labels import WorkspaceLabelAssignment as WorkspaceLabelAssignment
    from daemon_client.protocol.workspace_labels import WorkspaceLabelCatalog as WorkspaceLabelCatalog
    from daemon_client.protocol.workspaces import WorkspaceDescriptor as WorkspaceDescriptor
    from daemon_client.protocol.workspaces import WorkspaceProjectDescriptor as WorkspaceProjectDescriptor
    from daemon_client.protocol.worktrees import Worktree as Worktree
    from daemon_client.protocol.worktrees import WorktreeArchive as WorktreeArchive
    from daemon_client.protocol.worktrees import WorktreeCheckout as WorktreeCheckout
    from daemon_client.protocol.worktrees import WorktreeInfo as WorktreeInfo
    from daemon_client.runtime.flow_limits import FlowControl as FlowControl
    from daemon_client.state import ConnectionState as ConnectionState
    from daemon_client.subscriptions.config import ConfigSubscription as ConfigSubscription
    from daemon_client.subscriptions.directory import DirectoryObservation as DirectoryObservation
    from daemon_client.subscriptions.events import EventSubscription as EventSubscription
    from daemon_client.subscriptions.flow import ClientStats as ClientStats
    from daemon_client.subscriptions.terminal_directory import (
        TerminalDirectorySubscription as TerminalDirectorySubscription,
    )
    from daemon_client.subscriptions.terminal_streams import TerminalStream as TerminalStream
    from daemon_client.subscriptions.timeline import TimelineAck as TimelineAck
    from daemon_client.subscriptions.timeline import TimelineSubscription as TimelineSubscription
    from daemon_client.transport.relay import RelayStats as RelayStats

_LAZY: dict[str, str] = {
    "AgentCommand": "daemon_client.protocol.agent_settings",
    "AgentConfig": "daemon_client.api.agents.create",
    "AgentControls": "daemon_client.api.agents.controls",
    "AgentCreateError": "daemon_client.errors",
    "AgentEntry": "daemon_client.protocol.agents",
    "AgentFilter": "daemon_client.protocol.directory",
    "AgentHandle": "daemon_client.api.agents.handle",
    "AgentListResult": "daemon_client.protocol.directory",
    "AgentProfile": "daemon_client.protocol.config",
    "AgentSnapshot": "daemon_client.protocol.agents",
    "AgentTimeline": "daemon_client.api.agents.timeline",
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
    "ConfigSubscription": "daemon_client.subscriptions.config",
    "ConnectTimeout": "daemon_client.errors",
    "ConnectionLost": "daemon_client.errors",
    "ConnectionUnavailable": "daemon_client.errors",
    "ConnectionState": "daemon_client.state",
    "DEFAULT_APP_VERSION": "daemon_client.config",
    "DEFAULT_URL": "daemon_client.config",
    "DaemonClientError": "daemon_client.errors",
    "DaemonConfig": "daemon_client.protocol.config",
    "DaemonTarget": "daemon_client.discovery",
    "MissingExtra": "daemon_client.errors",
    "DirectoryMessage": "daemon_client.protocol.directory",
    "DirectoryObservation": "daemon_client.subscriptions.directory",
    "ErrorItem": "daemon_client.protocol.timeline",
    "EventSubscription": "daemon_client.subscriptions.events",
    "ForkAttachment": "daemon_client.protocol.agent_settings",
    "ForkContext": "daemon_client.protocol.agent_settings",
    "ExpectTimeout": "daemon_client.errors",
    "Heartbeat": "daemon_client.config",
    "FlowControl": "daemon_client.runtime.flow_limits",
    "ClientStats": "daemon_client.subscriptions.flow",
    "Lagged": "daemon_client.protocol.timeline",
    "HostKind": "daemon_client.protocol.hosts",
    "InsecureCredentials": "daemon_client.errors",
    "NotConnected": "daemon_client.errors",
    "PairingError": "daemon_client.errors",
    "ServerMismatch": "daemon_client.errors",
    "Notification": "daemon_client.protocol.timeline",
    "Page": "daemon_client.protocol.directory",
    "PageInfo": "daemon_client.protocol.directory",
    "PermissionRequested": "daemon_client.protocol.timeline",
    "PermissionResolved": "daemon_client.protocol.timeline",
    "ProjectCache": "daemon_client.api.projects",
    "ProjectChange": "daemon_client.api.projects",
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
    "ProviderUsage": "daemon_client.protocol.provider_usage",
    "ProviderUsageList": "daemon_client.protocol.provider_usage",
    "ProvidersNotReady": "daemon_client.errors",
    "Reasoning": "daemon_client.protocol.timeline",
    "ReconnectPolicy": "daemon_client.config",
    "RelayStats": "daemon_client.transport.relay",
    "RelayTarget": "daemon_client.discovery",
    "Host": "daemon_client.discovery.profiles",
    "HostConnection": "daemon_client.discovery.profiles",
    "Probe": "daemon_client.discovery.failover",
    "HostStore": "daemon_client.discovery.store",
    "HostStoreError": "daemon_client.discovery.store",
    "HostConflict": "daemon_client.discovery.store",
    "UnknownHost": "daemon_client.discovery.store",
    "probe_host": "daemon_client.client",
    "Fleet": "daemon_client.fleet",
    "FleetDirectory": "daemon_client.fleet",
    "FleetEntry": "daemon_client.fleet",
    "FleetEvent": "daemon_client.fleet",
    "FleetListing": "daemon_client.fleet",
    "Replacement": "daemon_client.protocol.timeline",
    "RequestTimeout": "daemon_client.errors",
    "Resolution": "daemon_client.discovery",
    "RpcError": "daemon_client.errors",
    "RunResult": "daemon_client.api.agents.handle",
    "ServerInfo": "daemon_client.protocol.models",
    "SessionMessage": "daemon_client.protocol.models",
    "SessionPong": "daemon_client.protocol.models",
    "SettingNotice": "daemon_client.protocol.agent_settings",
    "SettingResult": "daemon_client.protocol.agent_settings",
    "Sort": "daemon_client.protocol.directory",
    "SubscribeOptions": "daemon_client.protocol.directory",
    "SubscriptionError": "daemon_client.protocol.timeline",
    "SubscriptionReleased": "daemon_client.errors",
    "SubscriptionRestored": "daemon_client.protocol.timeline",
    "TargetKind": "daemon_client.discovery",
    "TerminalCapture": "daemon_client.protocol.terminals",
    "TerminalCell": "daemon_client.protocol.terminals",
    "TerminalCursor": "daemon_client.protocol.terminals",
    "TerminalDirectorySubscription": "daemon_client.subscriptions.terminal_directory",
    "TerminalExited": "daemon_client.errors",
    "TerminalHandle": "daemon_client.api.terminals.handle",
    "TerminalInfo": "daemon_client.protocol.terminals",
    "TerminalList": "daemon_client.protocol.terminals",
    "TerminalState": "daemon_client.protocol.terminals",
    "TerminalStream": "daemon_client.subscriptions.terminal_streams",
    "TerminalsChanged": "daemon_client.protocol.terminals",
    "ThinkingOption": "daemon_client.protocol.providers",
    "ThreadStarted": "daemon_client.protocol.timeline",
    "TimelineAck": "daemon_client.subscriptions.timeline",
    "TimelineCursor": "daemon_client.protocol.timeline",
    "TimelineEntry": "daemon_client.protocol.timeline",
    "TimelineEvent": "daemon_client.protocol.timeline",
    "TimelinePage": "daemon_client.protocol.timeline",
    "TimelineStream": "daemon_client.api.agents.timeline",
    "TimelineSubscription": "daemon_client.subscriptions.timeline",
    "TimelineUpdate": "daemon_client.protocol.timeline",
    "Todo": "daemon_client.protocol.timeline",
    "ToolCall": "daemon_client.protocol.timeline",
    "TurnCanceled": "daemon_client.protocol.timeline",
    "TurnCompleted": "daemon_client.protocol.timeline",
    "TurnFailed": "daemon_client.protocol.timeline",
    "TurnStarted": "daemon_client.protocol.timeline",
    "UnknownConfigKeys": "daemon_client.errors",
    "UnknownEvent": "daemon_client.protocol.timeline",
    "UnknownItem": "daemon_client.protocol.timeline",
    "UnknownMessage": "daemon_client.protocol.models",
    "UnsupportedByHost": "daemon_client.errors",
    "UsageWindow": "daemon_client.protocol.provider_usage",
    "UserMessage": "daemon_client.protocol.timeline",
    "WorkspaceAgents": "daemon_client.api.workspaces.workspace_agents",
    "WorkspaceDescriptor": "daemon_client.protocol.workspaces",
    "WorkspaceFilter": "daemon_client.protocol.workspace_directory",
    "WorkspaceHandle": "daemon_client.api.workspaces.namespace",
    "WorkspaceLabel": "daemon_client.protocol.workspace_labels",
    "WorkspaceLabelAssignment": "daemon_client.protocol.workspace_labels",
    "WorkspaceLabelCatalog": "daemon_client.protocol.workspace_labels",
    "WorkspaceListResult": "daemon_client.protocol.workspace_directory",
    "WorkspaceProjectDescriptor": "daemon_client.protocol.workspaces",
    "WorkspaceTerminals": "daemon_client.api.terminals.namespace",
    "WorkspaceUpdate": "daemon_client.protocol.workspace_directory",
    "UploadedFile": "daemon_client.protocol.attachments",
    "TextAttachment": "daemon_client.protocol.attachments",
    "ChangeRequestAttachment": "daemon_client.protocol.attachments",
    "IssueAttachment": "daemon_client.protocol.attachments",
    "Attachment": "daemon_client.protocol.attachments",
    "Worktree": "daemon_client.protocol.worktrees",
    "WorktreeArchive": "daemon_client.protocol.worktrees",
    "WorktreeCheckout": "daemon_client.protocol.worktrees",
    "WorktreeInfo": "daemon_client.protocol.worktrees",
    "WouldDeadlock": "daemon_client.errors",
    "check_reply": "daemon_client.errors",
    "connect": "daemon_client.client",
    "join_messages": "daemon_client.protocol.timeline",
}


def __getattr__(name: str) -> Any:
    """Import public names (and ``daemon_client.testing``) on first use: importing the
    package stays cheap, and a name costs only the modules behind it."""
    if name == "testing":
        return importlib.import_module("daemon_client.testing")
    if name == "COMPILED":  # which build is running, without importing the modules it names
        from daemon_client._compiled import COMPILED_MODULES, compiled_modules

        globals()[name] = compiled = compiled_modules() == COMPILED_MODULES
        return compiled
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'daemon_client' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY, "testing", "COMPILED"])


__version__ = "0.1.0"

__all__ = sorted(["COMPILED", "__version__", *_LAZY])  # noqa: PLE0605 - one source: the lazy table
