"""``client.config``: read, patch and follow the daemon's mutable configuration (protocol.md 12.3).

``get`` and ``patch`` block the caller's thread with a timeout (15 s by default). ``subscribe``
handlers run on the callback thread (see :mod:`daemon_client.subscriptions.config`).

Writing a key the host does not know must not look like success: 0.1.65 keeps such keys in
memory and echoes them back without saving them. So ``patch`` first reads the configuration
and refuses (:class:`~daemon_client.errors.UnknownConfigKeys`, nothing sent) a key the host does
not report, unless ``allow_unknown_keys=True``; and it checks that the reply shows every
patched value, raising ``RpcError`` (code ``config_not_applied``) when it does not.
``add_agent_profiles`` is a patch-only operation of newer daemons: gated on
``features.agentProfileWorkflows``, it sends one patch and reads nothing before.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from daemon_client.api.common.feature_gates import require_feature
from daemon_client.errors import RpcError, UnknownConfigKeys, check_reply
from daemon_client.protocol.config import (
    ADD_PROFILES,
    AgentProfile,
    DaemonConfig,
    parse_config,
    profile_wire,
    unapplied_patch_keys,
    unknown_patch_keys,
)
from daemon_client.protocol.requests import config as config_requests
from daemon_client.subscriptions.config import ConfigManager, ConfigSubscription

if TYPE_CHECKING:
    from daemon_client.runtime.context import ClientContext

GET = config_requests.GET.type
SET = config_requests.SET.type
NOT_APPLIED = "config_not_applied"


class ConfigNamespace:
    """``client.config``."""

    def __init__(self, context: ClientContext, manager: ConfigManager[DaemonConfig]) -> None:
        self._context = context
        self._manager = manager

    def get(self, *, timeout: float | None = None) -> DaemonConfig:
        """The daemon's configuration (``get_daemon_config_request``)."""
        payload = self._context.request({"type": GET}, timeout=timeout)
        check_reply(payload, GET, required_field="config", missing="the daemon sent no configuration")
        return parse_config(payload["config"])

    def patch(
        self, patch: Mapping[str, Any], *, allow_unknown_keys: bool = False, timeout: float | None = None
    ) -> DaemonConfig:
        """Deep-merge ``patch`` into the configuration (objects merge key by key, arrays and
        scalars replace; the daemon validates, saves and applies it) and return the result.

        Wire names are camelCase: ``{"mcp": {"injectIntoAgents": True}}``. Raises
        ``UnknownConfigKeys`` before sending when a key is not in the host's configuration
        (pass ``allow_unknown_keys=True`` for keys a newer daemon knows without reporting them,
        or for ``removeProviders``; on 0.1.65 such a key is then kept only until the daemon
        restarts), ``RpcError`` with ``code="unknown_schema"`` for a value of the wrong type,
        and ``RpcError`` with ``code="config_not_applied"`` when the reply does not show a
        patched value. A patch that changes something is also pushed to every client
        (``subscribe``); on 0.1.65 it re-probes every provider.
        """
        body = _json_object(patch)
        if not allow_unknown_keys:
            current = self.get(timeout=timeout)
            info = self._context.server_info
            unknown = unknown_patch_keys(body, current.raw, info.features if info is not None else None)
            if unknown:
                raise UnknownConfigKeys(
                    f"the daemon does not report the config key(s) {', '.join(unknown)}: an older daemon would "
                    "echo them without saving them (pass allow_unknown_keys=True to send them anyway)",
                    unknown,
                )
        return self._send_patch(body, timeout)

    def add_agent_profiles(
        self, profiles: Iterable[AgentProfile | Mapping[str, Any]], *, timeout: float | None = None
    ) -> DaemonConfig:
        """Add agent profiles whose ID the daemon does not have yet, keeping every existing one
        as it is (the daemon's ``addAgentProfilesIfMissing`` patch), and return the result.

        ``profiles`` are :class:`~daemon_client.protocol.config.AgentProfile` values or profiles
        in wire form (entries of ``DaemonConfig.agent_profiles``). Needs
        ``features.agentProfileWorkflows``: other hosts raise ``UnsupportedByHost`` and nothing
        is sent (``NotConnected`` while there is no connection to ask). Unlike :meth:`patch`
        it sends exactly one ``set_daemon_config_request`` and reads nothing before; an
        invalid profile raises ``ValueError``/``TypeError`` before sending. Raises ``RpcError``
        with ``code="config_not_applied"`` when the reply lists a profile ID under none of its
        ``agentProfiles``, and the daemon's ``RpcError`` for a profile it refuses.
        """
        if isinstance(profiles, (str, bytes, Mapping, AgentProfile)):
            raise TypeError("profiles is a list of agent profiles, not a single one")
        wire = [profile_wire(profile) for profile in profiles]
        ids = [entry["id"] for entry in wire]
        duplicated = sorted({name for name in ids if ids.count(name) > 1})
        if duplicated:
            raise ValueError(f"agent profile IDs must be unique: {', '.join(duplicated)} given twice")
        try:
            json.dumps(wire, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"agent profiles must be plain JSON: {exc}") from None
        gate = config_requests.AGENT_PROFILE_WORKFLOWS
        require_feature(self._context.server_info, gate.flag, gate.what, gate.version)
        return self._send_patch({ADD_PROFILES: wire}, timeout)

    def _send_patch(self, body: dict[str, Any], timeout: float | None) -> DaemonConfig:
        """Send one ``set_daemon_config_request`` and check that its reply shows ``body``."""
        payload = self._context.request({"type": SET, "config": body}, timeout=timeout)
        check_reply(payload, SET, required_field="config", missing="the daemon sent no configuration")
        result = parse_config(payload["config"])
        missing = unapplied_patch_keys(body, result.raw)
        if missing:
            request_id = payload.get("requestId")
            raise RpcError(
                f"the daemon did not apply {', '.join(missing)} (its reply shows other values)",
                code=NOT_APPLIED,
                request_type=SET,
                request_id=request_id if isinstance(request_id, str) else None,
            )
        return result

    def subscribe(
        self,
        handler: Callable[[DaemonConfig], object],
        *,
        on_restored: Callable[[], object] | None = None,
        on_error: Callable[[BaseException], object] | None = None,
    ) -> ConfigSubscription[DaemonConfig]:
        """Follow configuration changes: ``handler(config)`` runs on the callback thread with the
        whole new configuration after every change any client makes.

        ``ready`` resolves with the configuration read when the subscription became live.
        After a reconnect the configuration is read again; if it changed meanwhile the handler
        gets it, then ``on_restored()`` runs. ``on_error(exc)`` when that first read fails (the
        subscription is then released) or the client closes. Returns at once; calling the
        result or ``release()`` stops it; also a context manager.
        """
        return self._manager.subscribe(handler, on_restored=on_restored, on_error=on_error)


def _json_object(patch: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of ``patch`` that is a JSON object; ``ValueError`` before sending otherwise."""
    if not isinstance(patch, Mapping):
        raise ValueError(f"a config patch is an object of wire keys, got {type(patch).__name__}")
    try:
        json.dumps(patch, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"a config patch must be plain JSON: {exc}") from None
    if not all(isinstance(key, str) for key in patch):
        raise ValueError("config patch keys must be strings (camelCase wire names)")
    return copy.deepcopy(dict(patch))
