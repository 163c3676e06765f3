"""The daemon's mutable configuration (protocol.md 12.3): its model, and the checks of a patch.

``get_daemon_config_response``, ``set_daemon_config_response`` and the
``status daemon_config_changed`` push carry the whole ``MutableDaemonConfig``. It is read
leniently (:mod:`daemon_client.protocol.lenient`): keys this client does not model stay in
``extra_fields`` and the whole object stays in ``raw``, so nothing a newer daemon sends is lost.

A patch is deep-merged by the daemon: objects merge key by key, arrays and scalars replace.
0.1.65 keeps keys it does not know in memory and echoes them back without saving them, so
:func:`unknown_patch_keys` finds the keys of a patch that the host's own configuration does
not show, and :func:`unapplied_patch_keys` the values a reply does not reflect.
:class:`AgentProfile` is the typed input of ``addAgentProfilesIfMissing``. Pure data and
functions; no thread runs code here.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from daemon_client.errors import ProtocolError
from daemon_client.protocol.lenient import structure

RECORD_KEYS = frozenset({"providers"})
"""Top-level keys whose children are keyed by ID (provider IDs) and whose entries every
daemon generation passes through unchecked: their sub-keys are never reported as unknown."""

OPTIONAL_KEYS: Mapping[str, str] = {"relay": "relayConfig", "agentProfiles": "agentProfiles"}
"""Keys a daemon may omit from its configuration while knowing them: the ``server_info``
feature flag that says it knows them."""

OPERATION_KEYS = frozenset({"removeProviders", "addAgentProfilesIfMissing"})
"""Patch-only operations (never part of a configuration): ``removeProviders`` lists provider
IDs to delete, ``addAgentProfilesIfMissing`` agent profiles to add unless their ID is taken.
No daemon reports them: ``removeProviders`` is sent only with ``allow_unknown_keys``,
``addAgentProfilesIfMissing`` by ``client.config.add_agent_profiles()``."""

ADD_PROFILES = "addAgentProfilesIfMissing"


@attrs.frozen
class McpConfig:
    """``mcp``: ``inject_into_agents`` gives new agents the daemon's own MCP server."""

    inject_into_agents: bool | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class AdditionalModel:
    """An extra model entry of a provider (``providers.<id>.additionalModels[]``)."""

    id: str
    label: str = ""
    description: str | None = None
    is_default: bool | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class ProviderSettings:
    """``providers.<id>``: the enable switch and extra models (newer daemons add more keys,
    kept in ``extra_fields``)."""

    enabled: bool | None = None
    additional_models: tuple[AdditionalModel, ...] | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class Toggle:
    """An ``{enabled}`` switch (``relay``, ``browserTools``)."""

    enabled: bool | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class DaemonConfig:
    """``MutableDaemonConfig``: what a client may read and patch of the daemon's settings.

    0.1.65 has only ``mcp`` and ``providers``; the other fields are ``None`` there. ``raw`` is
    the whole object as the daemon sent it (:meth:`value` reads any path of it).
    """

    mcp: McpConfig | None = None
    providers: Mapping[str, ProviderSettings] = attrs.field(factory=dict)
    relay: Toggle | None = None
    browser_tools: Toggle | None = None
    metadata_generation: Mapping[str, Any] | None = None
    auto_archive_after_merge: bool | None = None
    enable_terminal_agent_hooks: bool | None = None
    append_system_prompt: str | None = None
    terminal_profiles: tuple[Mapping[str, Any], ...] | None = None
    agent_profiles: tuple[Mapping[str, Any], ...] | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)
    raw: Mapping[str, Any] = attrs.field(factory=dict, repr=False)

    def value(self, path: str, default: Any = None) -> Any:
        """The value at a dotted path of the raw configuration (``"mcp.injectIntoAgents"``),
        or ``default`` when absent."""
        node: Any = self.raw
        for part in path.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def to_wire(self) -> dict[str, Any]:
        """A deep copy of the configuration as the daemon sent it."""
        return copy.deepcopy(dict(self.raw))


_PROFILE_FIELDS: Mapping[str, str] = {
    "icon": "icon",
    "color": "color",
    "model": "model",
    "mode_id": "modeId",
    "thinking_option_id": "thinkingOptionId",
    "notes": "notes",
    "post_approval_mode_id": "postApprovalModeId",
}


def _text(value: object, name: str, *, optional: bool) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or (not optional and not value.strip()):
        raise ValueError(f"an agent profile's {name} must be a non-empty string, got {value!r:.100}")


@attrs.frozen
class AgentProfile:
    """A named launch bundle (``agentProfiles[]``): a provider plus the agent settings a
    client would otherwise choose one by one.

    ``id``, ``name`` and ``provider`` are required. ``icon`` is a key of the app's icon
    registry and ``color`` an identity colour name (unknown values draw the default);
    ``notes`` is free text that orchestrating agents see; ``post_approval_mode_id`` the mode
    an agent switches to once its plan is approved (newer daemons). ``extra_fields`` holds
    further keys under their wire names and is sent as it is. There is no system prompt:
    the daemon's profiles carry none.
    """

    id: str
    name: str
    provider: str
    icon: str | None = None
    color: str | None = None
    model: str | None = None
    mode_id: str | None = None
    thinking_option_id: str | None = None
    feature_values: Mapping[str, Any] | None = None
    notes: str | None = None
    post_approval_mode_id: str | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)

    def to_wire(self) -> dict[str, Any]:
        """The profile as the daemon stores it (camelCase; unset fields left out).
        ``ValueError`` when a required field is blank or a field has the wrong type."""
        _text(self.id, "id", optional=False)
        _text(self.name, "name", optional=False)
        _text(self.provider, "provider", optional=False)
        wire: dict[str, Any] = copy.deepcopy(dict(self.extra_fields))
        wire.update(id=self.id, name=self.name, provider=self.provider)
        for attribute, key in _PROFILE_FIELDS.items():
            value = getattr(self, attribute)
            _text(value, attribute, optional=True)
            if value is not None:
                wire[key] = value
        if self.feature_values is not None:
            if not isinstance(self.feature_values, Mapping) or not all(
                isinstance(key, str) for key in self.feature_values
            ):
                raise ValueError("an agent profile's feature_values must map feature IDs to values")
            wire["featureValues"] = copy.deepcopy(dict(self.feature_values))
        return wire


def profile_wire(profile: AgentProfile | Mapping[str, Any]) -> dict[str, Any]:
    """An :class:`AgentProfile`, or a profile already in wire form (as ``DaemonConfig.agent_profiles``
    holds them), as the daemon stores it; ``ValueError``/``TypeError`` before sending otherwise."""
    if isinstance(profile, AgentProfile):
        return profile.to_wire()
    if not isinstance(profile, Mapping):
        raise TypeError(f"an agent profile is an AgentProfile or a wire mapping, got {type(profile).__name__}")
    wire = copy.deepcopy(dict(profile))
    for key in ("id", "name", "provider"):
        _text(wire.get(key), key, optional=False)
    return wire


def parse_config(value: Any) -> DaemonConfig:
    """A ``config`` object of a reply or push → :class:`DaemonConfig`; ``ProtocolError`` if it is
    not an object."""
    if not isinstance(value, Mapping):
        raise ProtocolError(f"the daemon's configuration is not an object: {value!r:.200}")
    config = structure(dict(value), DaemonConfig)
    return attrs.evolve(config, raw=copy.deepcopy(dict(value)))


def _object_paths(patch: Mapping[str, Any], current: Mapping[str, Any], prefix: str) -> Iterator[str]:
    for key, value in patch.items():
        path = f"{prefix}{key}"
        if key not in current:
            yield path
        elif isinstance(value, Mapping) and isinstance(current[key], Mapping):
            yield from _object_paths(value, current[key], f"{path}.")


def unknown_patch_keys(
    patch: Mapping[str, Any], current: Mapping[str, Any], features: Mapping[str, bool] | None = None
) -> tuple[str, ...]:
    """The dotted paths of ``patch`` that the host's configuration ``current`` does not have.

    Objects are compared key by key where ``current`` has an object; the children of
    :data:`RECORD_KEYS` are IDs and never unknown; a top-level key of :data:`OPTIONAL_KEYS` is
    known when its feature flag is on; :data:`OPERATION_KEYS` are always reported.
    """
    flags = features or {}
    unknown: list[str] = []
    for key, value in patch.items():
        if key in OPERATION_KEYS:
            unknown.append(key)
        elif key in RECORD_KEYS and key in current:
            continue
        elif key not in current:
            flag = OPTIONAL_KEYS.get(key)
            if flag is None or flags.get(flag) is not True:
                unknown.append(key)
        elif isinstance(value, Mapping) and isinstance(current[key], Mapping):
            unknown.extend(_object_paths(value, current[key], f"{key}."))
    return tuple(unknown)


def _unapplied(patch: Mapping[str, Any], result: Mapping[str, Any], prefix: str) -> Iterator[str]:
    for key, value in patch.items():
        path = f"{prefix}{key}"
        if key not in result:
            yield path
        elif isinstance(value, Mapping) and isinstance(result[key], Mapping):
            yield from _unapplied(value, result[key], f"{path}.")
        elif result[key] != value:
            yield path


def unapplied_patch_keys(patch: Mapping[str, Any], result: Mapping[str, Any]) -> tuple[str, ...]:
    """The dotted paths whose value in the daemon's reply ``result`` is not the patched value
    (objects merge, arrays and scalars replace), plus each provider of ``removeProviders``
    the reply still lists and each profile of ``addAgentProfilesIfMissing`` it does not."""
    missing: list[str] = []
    for key, value in patch.items():
        if key == "removeProviders":
            providers = result.get("providers")
            still = providers if isinstance(providers, Mapping) else {}
            names = value if isinstance(value, list) else []
            missing.extend(f"removeProviders.{name}" for name in names if name in still)
        elif key == ADD_PROFILES:
            missing.extend(f"{ADD_PROFILES}.{name}" for name in missing_profiles(value, result))
        elif key not in OPERATION_KEYS:
            missing.extend(_unapplied({key: value}, result, ""))
    return tuple(missing)


def missing_profiles(profiles: Any, result: Mapping[str, Any]) -> tuple[str, ...]:
    """The IDs of ``profiles`` (wire objects) that the configuration ``result`` does not list
    in ``agentProfiles``: after ``addAgentProfilesIfMissing`` every one of them must be there
    (the one added, or the one that already had the ID)."""
    listed = result.get("agentProfiles")
    present = {entry.get("id") for entry in listed if isinstance(entry, Mapping)} if isinstance(listed, list) else set()
    wanted = [entry.get("id") for entry in profiles if isinstance(entry, Mapping)] if isinstance(profiles, list) else []
    return tuple(str(name) for name in wanted if name not in present)
