"""Session-level requests (protocol.md 2.5, 11): liveness and the daemon's own lifecycle.

Declarations only (see :mod:`daemon_client.protocol.requests.spec`); read from any thread.
"""

from __future__ import annotations

from daemon_client.protocol.requests.spec import ReplyMatcher, RequestSpec, TimeoutClass

PING = RequestSpec("ping", "session", reply=ReplyMatcher("pong"), timeout=TimeoutClass.LIVENESS, api="client.ping()")
RESTART_SERVER = RequestSpec(
    "restart_server_request", "session", reply=ReplyMatcher("status", frozenset({"restart_requested"}))
)
SHUTDOWN_SERVER = RequestSpec(
    "shutdown_server_request", "session", reply=ReplyMatcher("status", frozenset({"shutdown_requested"}))
)

REQUESTS = (PING, RESTART_SERVER, SHUTDOWN_SERVER)
