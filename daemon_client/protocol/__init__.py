"""Wire models, codec and host capabilities of the Paseo daemon protocol.

The connection machinery's own frame models (:mod:`daemon_client.protocol.frame_models`) are
imported on first use, here as in :mod:`daemon_client.protocol.models`.
"""

from typing import TYPE_CHECKING, Any

from daemon_client.protocol.codec import (
    MalformedFrame,
    converter,
    decode_frame,
    encode,
    encode_hello,
    encode_session,
    parse_server_info,
    parse_status,
    structure,
    unstructure,
)
from daemon_client.protocol.hosts import CLIENT_CAPABILITIES, HostKind, decide_host_kind
from daemon_client.protocol.lenient import MissingIdentity, skipped_entries
from daemon_client.protocol.models import LAZY_NAMES, ServerInfo, SessionMessage, SessionPong, UnknownMessage
from daemon_client.protocol.replies import ReplyMatcher, default_timeout_for, reply_for

__all__ = [
    "CLIENT_CAPABILITIES",
    "Hello",
    "HelloRejected",
    "HostKind",
    "InboundFrame",
    "MalformedFrame",
    "MissingIdentity",
    "PasswordAuth",
    "Ping",
    "Pong",
    "ReplyMatcher",
    "RpcErrorPayload",
    "ServerInfo",
    "SessionMessage",
    "SessionPing",
    "SessionPong",
    "StatusPayload",
    "UnknownMessage",
    "converter",
    "decide_host_kind",
    "decode_frame",
    "default_timeout_for",
    "encode",
    "encode_hello",
    "encode_session",
    "parse_server_info",
    "parse_status",
    "reply_for",
    "skipped_entries",
    "structure",
    "unstructure",
]

if TYPE_CHECKING:
    from daemon_client.protocol.models import Hello as Hello
    from daemon_client.protocol.models import HelloRejected as HelloRejected
    from daemon_client.protocol.models import InboundFrame as InboundFrame
    from daemon_client.protocol.models import PasswordAuth as PasswordAuth
    from daemon_client.protocol.models import Ping as Ping
    from daemon_client.protocol.models import Pong as Pong
    from daemon_client.protocol.models import RpcErrorPayload as RpcErrorPayload
    from daemon_client.protocol.models import SessionPing as SessionPing
    from daemon_client.protocol.models import StatusPayload as StatusPayload


def __getattr__(name: str) -> Any:
    if name in LAZY_NAMES:
        from daemon_client.protocol import models

        value = getattr(models, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
