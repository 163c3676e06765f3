"""Daemon configuration requests (protocol.md 12.3).

Declarations only (see :mod:`daemon_client.protocol.requests.spec`); read from any thread.
"""

from __future__ import annotations

from daemon_client.protocol.requests.spec import FeatureGate, RequestSpec, TimeoutClass

GET = RequestSpec("get_daemon_config_request", "config", timeout=TimeoutClass.READ, api="client.config.get()")
SET = RequestSpec(
    "set_daemon_config_request", "config", timeout=TimeoutClass.READ, required=("config",),
    api="client.config.patch(), client.config.add_agent_profiles()",
)  # fmt: skip
AGENT_PROFILE_WORKFLOWS = FeatureGate("agentProfileWorkflows", "add agent profiles", "0.11.0")
"""The flag :data:`SET` needs for its ``addAgentProfilesIfMissing`` operation
(``client.config.add_agent_profiles()``); plain patches need none."""

REQUESTS = (GET, SET)
