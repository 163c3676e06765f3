"""daemon_client: a synchronous, threaded Python client for the Paseo daemon.

>>> import daemon_client as dc
>>> with dc.connect("ws://127.0.0.1:6767/ws") as client:   # doctest: +SKIP
...     print(client.server_info)
"""

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
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.models import ServerInfo, SessionMessage, SessionPong, UnknownMessage

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_APP_VERSION",
    "DEFAULT_URL",
    "AgentCreateError",
    "AuthenticationError",
    "CallbackError",
    "Client",
    "ClientClosed",
    "ConnectTimeout",
    "ConnectionLost",
    "ConnectionState",
    "DaemonClientError",
    "Heartbeat",
    "HostKind",
    "NotConnected",
    "ProtocolError",
    "ProtocolVersionError",
    "ProvidersNotReady",
    "ReconnectPolicy",
    "RequestTimeout",
    "RpcError",
    "ServerInfo",
    "SessionMessage",
    "SessionPong",
    "SubscriptionReleased",
    "UnknownMessage",
    "UnsupportedByHost",
    "WouldDeadlock",
    "__version__",
    "connect",
]
