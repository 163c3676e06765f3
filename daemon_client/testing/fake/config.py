"""The fake daemon's mutable configuration (``fake.daemon_config``; protocol.md 12.3, transcript 14).

Owns the ``MutableDaemonConfig`` of one fake and the handlers of ``get_daemon_config_request``
and ``set_daemon_config_request``:

- the configuration is shaped per host kind: 0.1.65-like broadcast hosts have only ``mcp`` and
  ``providers``; capable and selective hosts also ``browserTools``, ``metadataGeneration``,
  ``autoArchiveAfterMerge``, ``enableTerminalAgentHooks``, ``appendSystemPrompt`` (and
  ``relay`` with ``features.relayConfig``);
- a patch is deep-merged (objects merge, arrays and scalars replace); a known key with a value
  of the wrong type fails the request schema (``rpc_error unknown_schema``, 14 L30-L31);
- keys the host does not know: a broadcast host keeps them in memory and echoes them without
  saving them (:attr:`FakeDaemonConfig.persisted` never has them), newer hosts drop them;
  ``removeProviders`` deletes providers on newer hosts;
- ``agentProfiles`` is known (though absent until written) on newer hosts with
  ``features.agentProfiles`` or ``features.agentProfileWorkflows``; with
  ``agentProfileWorkflows`` the ``addAgentProfilesIfMissing`` operation appends each profile
  whose ID is not listed yet and keeps the listed ones (a profile without a string ``id``,
  ``name`` or ``provider`` fails the schema); elsewhere it is an unknown key like any other;
- a patch that changes something pushes ``status daemon_config_changed`` to every connection
  before the reply, and on broadcast hosts re-probes every provider (a ``loading`` update
  first, then one update per provider after the reply, 14 L7-L15); a patch that changes
  nothing pushes nothing (14 L28-L29).

Handlers run on connection reader threads, tests call :meth:`FakeDaemonConfig.patch` from their
own; one lock guards the configuration and is never held while sending.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.requests import config as config_requests

if TYPE_CHECKING:
    from daemon_client.testing.fake.engine.handlers import HandlerRegistry, RequestContext
    from daemon_client.testing.fake.ports import DaemonPort

__all__ = ["FakeDaemonConfig", "deep_merge"]

_ADD_PROFILES = "addAgentProfilesIfMissing"
_BOOL_PATHS = ("mcp.injectIntoAgents", "browserTools.enabled", "relay.enabled", "autoArchiveAfterMerge",
               "enableTerminalAgentHooks")  # fmt: skip
_STRING_PATHS = ("appendSystemPrompt",)
_SETTLED = ("ready", "error", "unavailable")


def deep_merge(base: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """``patch`` merged into a copy of ``base``: objects merge key by key, the rest replaces."""
    merged = copy.deepcopy(dict(base))
    for key, value in patch.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _default_config(kind: HostKind, features: Mapping[str, bool]) -> dict[str, Any]:
    config: dict[str, Any] = {"mcp": {"injectIntoAgents": False}, "providers": {}}
    if kind is HostKind.BROADCAST:
        return config
    config.update(
        browserTools={"enabled": False},
        metadataGeneration={"providers": []},
        autoArchiveAfterMerge=False,
        enableTerminalAgentHooks=False,
        appendSystemPrompt="",
    )
    if features.get("relayConfig"):
        config["relay"] = {"enabled": False}
    return config


def _known_keys(kind: HostKind, features: Mapping[str, bool], shape: Mapping[str, Any]) -> dict[str, Any]:
    """The keys a patch may write: the configuration's own, plus those the host knows while
    leaving them out until they are written."""
    known = copy.deepcopy(dict(shape))
    if kind is not HostKind.BROADCAST and (features.get("agentProfiles") or features.get("agentProfileWorkflows")):
        known.setdefault("agentProfiles", [])
    return known


def _profiles_valid(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(entry, Mapping) and all(isinstance(entry.get(key), str) for key in ("id", "name", "provider"))
        for entry in value
    )


def _add_missing_profiles(config: dict[str, Any], profiles: list[Mapping[str, Any]]) -> None:
    """``addAgentProfilesIfMissing``: append each profile whose ID ``config`` does not list."""
    listed = config.get("agentProfiles")
    current = list(listed) if isinstance(listed, list) else []
    taken = {entry.get("id") for entry in current if isinstance(entry, Mapping)}
    for profile in profiles:
        if profile["id"] not in taken:
            current.append(copy.deepcopy(dict(profile)))
            taken.add(profile["id"])
    config["agentProfiles"] = current


def _get(node: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _valid(patch: Mapping[str, Any], profile_workflows: bool = False) -> bool:
    """The daemon's request schema, for the keys the fake knows the type of."""
    if "agentProfiles" in patch and not _profiles_valid(patch["agentProfiles"]):
        return False
    if profile_workflows and _ADD_PROFILES in patch and not _profiles_valid(patch[_ADD_PROFILES]):
        return False
    for path in _BOOL_PATHS + _STRING_PATHS:
        present, value = _get(patch, path)
        expected = str if path in _STRING_PATHS else bool
        if present and type(value) is not expected:
            return False
    for key in ("mcp", "browserTools", "relay", "metadataGeneration"):
        if key in patch and not isinstance(patch[key], Mapping):
            return False
    providers = patch.get("providers")
    if providers is not None and not (
        isinstance(providers, Mapping) and all(isinstance(entry, Mapping) for entry in providers.values())
    ):
        return False
    return all(type(entry.get("enabled", True)) is bool for entry in (providers or {}).values())


def _known_only(patch: Mapping[str, Any], shape: Mapping[str, Any]) -> dict[str, Any]:
    """``patch`` without the keys ``shape`` lacks (objects compared key by key; provider entries
    pass through)."""
    kept: dict[str, Any] = {}
    for key, value in patch.items():
        if key not in shape:
            continue
        if key != "providers" and isinstance(value, Mapping) and isinstance(shape[key], Mapping):
            kept[key] = _known_only(value, shape[key])
        else:
            kept[key] = copy.deepcopy(value)
    return kept


class FakeDaemonConfig:
    """``fake.daemon_config``: see the module docstring."""

    def __init__(self, daemon: DaemonPort) -> None:
        self.daemon = daemon
        config = daemon.core.config
        self.host_kind: HostKind = config.host_kind
        self.lock = threading.Lock()
        features = config.effective_features
        initial = _default_config(config.host_kind, features)
        self._shape = _known_keys(config.host_kind, features, initial)
        self._current = copy.deepcopy(initial)
        self._persisted = copy.deepcopy(initial)
        self.profile_workflows: bool = config.host_kind is not HostKind.BROADCAST and bool(
            features.get("agentProfileWorkflows")
        )
        """Whether ``addAgentProfilesIfMissing`` is understood (``features.agentProfileWorkflows``)."""
        self.reprobe_providers: bool = config.host_kind is HostKind.BROADCAST
        """Whether every change re-probes the providers (0.1.65 rebuilds its provider registry)."""

    def install(self, registry: HandlerRegistry) -> None:
        config = self.daemon.core.config
        registry.serve_all(
            ((config_requests.GET, self._handle_get), (config_requests.SET, self._handle_set)),
            host_kind=config.host_kind,
            features=config.effective_features,
        )

    # -- test thread ---------------------------------------------------------------------------

    @property
    def current(self) -> dict[str, Any]:
        """The configuration the daemon answers with (a copy)."""
        with self.lock:
            return copy.deepcopy(self._current)

    @property
    def persisted(self) -> dict[str, Any]:
        """What the daemon wrote to its ``config.json`` (a copy): what survives a restart."""
        with self.lock:
            return copy.deepcopy(self._persisted)

    def patch(self, patch: Mapping[str, Any]) -> dict[str, Any]:
        """Change the configuration as another client would (pushes included); returns it."""
        changed, result = self._apply(patch)
        if changed:
            self._announce(result, reply=None)
        return result

    # -- handlers ------------------------------------------------------------------------------

    def _handle_get(self, ctx: RequestContext) -> None:
        ctx.reply({"config": self.current})

    def _handle_set(self, ctx: RequestContext) -> None:
        patch = ctx.message["config"]
        if not isinstance(patch, Mapping) or not _valid(patch, self.profile_workflows):
            ctx.rpc_error("Unknown request schema", "unknown_schema")
            return
        changed, result = self._apply(patch)
        if changed:
            self._announce(result, reply=ctx)
        else:
            ctx.reply({"config": result})

    # -- internals -----------------------------------------------------------------------------

    def _apply(self, patch: Mapping[str, Any]) -> tuple[bool, dict[str, Any]]:
        with self.lock:
            known = _known_only(patch, self._shape)
            if self.host_kind is HostKind.BROADCAST:
                merged = deep_merge(self._current, patch)  # unknown keys kept in memory, echoed
            else:
                merged = deep_merge(self._current, known)
                removed = patch.get("removeProviders")
                for name in removed if isinstance(removed, list) else []:
                    merged["providers"].pop(name, None)
                if self.profile_workflows and _ADD_PROFILES in patch:
                    _add_missing_profiles(merged, patch[_ADD_PROFILES])
            changed = merged != self._current
            self._current = merged
            persisted = deep_merge(self._persisted, known)
            if self.host_kind is not HostKind.BROADCAST:
                persisted["providers"] = copy.deepcopy(merged["providers"])
                if "agentProfiles" in merged:
                    persisted["agentProfiles"] = copy.deepcopy(merged["agentProfiles"])
            self._persisted = persisted
            return changed, copy.deepcopy(merged)

    def _announce(self, config: dict[str, Any], reply: RequestContext | None) -> None:
        """The frames of a change, in the order of transcript 14."""
        providers = self.daemon.providers
        before = {entry["provider"]: entry for entry in providers.entries()} if self.reprobe_providers else {}
        if before:
            providers.start_loading(keep_models=True)
        self.daemon.push("status", {"status": "daemon_config_changed", "config": config})
        if reply is not None:
            reply.reply({"config": config})
        for name, entry in before.items():
            status = entry.get("status")
            providers.resolve(name, status if status in _SETTLED else "ready", error=entry.get("error"))
