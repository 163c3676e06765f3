"""daemon_client: a synchronous, threaded Python client for the Paseo daemon.

>>> import daemon_client as dc
>>> with dc.connect("ws://127.0.0.1:6767/ws") as client:   # doctest: +SKIP
...     print(client.server_info)
"""

from daemon_client.agents import AgentHandle
from daemon_client.client import Client, connect
from daemon_client.config import DEFAULT_APP_VERSION, DEFAULT_URL, Heartbeat, ReconnectPolicy
from daemon_client.connection import ConnectionState
from daemon_client.errors import (
    AgentCreateError,
    AuthenticationError,
    CallbackError,
    ClientClosed,
    ConnectionLost,
    ConnectTimeout,
    DaemonClientError,
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
from daemon_client.observations import DirectoryObservation
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
from daemon_client.protocol.workspaces import WorkspaceDescriptor, WorkspaceProjectDescriptor
from daemon_client.workspaces import WorkspaceHandle

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_APP_VERSION",
    "DEFAULT_URL",
    "AgentCreateError",
    "AgentEntry",
    "AgentFilter",
    "AgentHandle",
    "AgentListResult",
    "AgentSnapshot",
    "AgentUpdate",
    "AuthenticationError",
    "CallbackError",
    "Checkout",
    "Client",
    "ClientClosed",
    "ConnectTimeout",
    "ConnectionLost",
    "ConnectionState",
    "DaemonClientError",
    "DirectoryMessage",
    "DirectoryObservation",
    "Heartbeat",
    "HostKind",
    "NotConnected",
    "Page",
    "PageInfo",
    "ProjectPlacement",
    "ProtocolError",
    "ProtocolVersionError",
    "ProvidersNotReady",
    "ReconnectPolicy",
    "RequestTimeout",
    "RpcError",
    "ServerInfo",
    "SessionMessage",
    "SessionPong",
    "Sort",
    "SubscribeOptions",
    "SubscriptionReleased",
    "UnknownMessage",
    "UnsupportedByHost",
    "WorkspaceDescriptor",
    "WorkspaceFilter",
    "WorkspaceHandle",
    "WorkspaceListResult",
    "WorkspaceProjectDescriptor",
    "WorkspaceUpdate",
    "WouldDeadlock",
    "__version__",
    "connect",
]
