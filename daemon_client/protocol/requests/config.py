"""Daemon configuration requests (protocol.md 12.3).

Declarations only (see :mod:`daemon_client.protocol.requests.spec`); read from any thread.
"""

from __future__ import annotations

from daemon_client.protocol.requests.spec import RequestSpec, TimeoutClass

GET = RequestSpec("get_daemon_config_request", "config", timeout=TimeoutClass.READ, api="client.config.get()")
SET = RequestSpec(
    "set_daemon_config_request", "config", timeout=TimeoutClass.READ, required=("config",), api="client.config.patch()"
)

REQUESTS = (GET, SET)
