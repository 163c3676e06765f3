"""attrs models of the provider catalog (protocol.md 7.1-7.4).

``status`` is one of ``ready``, ``loading``, ``error``, ``unavailable`` on known daemons;
other values are kept. Unknown fields, and values of a shape a field cannot take, land in
``extra_fields``; an entry without its identity is skipped alone. Pure data and parsers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from daemon_client.errors import ProtocolError
from daemon_client.protocol.agents import AgentMode, FeatureOption
from daemon_client.protocol.lenient import structure_each

ThinkingOption = FeatureOption
"""A thinking option of a model: the same choice shape as a ``select`` feature's."""


@attrs.frozen
class ProviderModel:
    """A model a provider offers.

    ``default_thinking_option_id`` is the daemon's ``defaultThinkingOptionId`` or, when the
    daemon sends none, the first thinking option marked ``is_default`` (as the TypeScript
    SDK reports it); ``None`` when neither names one.
    """

    id: str
    provider: str = ""
    label: str = ""
    description: str | None = None
    is_default: bool | None = None
    metadata: Mapping[str, Any] | None = None
    thinking_options: tuple[ThinkingOption, ...] | None = None
    default_thinking_option_id: str | None = None
    aliases: tuple[str, ...] | None = None
    is_selectable: bool | None = None
    context_window_max_tokens: int | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.default_thinking_option_id is None and self.thinking_options:
            marked = next((option.id for option in self.thinking_options if option.is_default is True), None)
            object.__setattr__(self, "default_thinking_option_id", marked)


@attrs.frozen
class ProviderEntry:
    """One provider of the catalog (``ProviderSnapshotEntry``)."""

    provider: str
    status: str = ""
    enabled: bool = True
    source: str | None = None
    error: str | None = None
    models: tuple[ProviderModel, ...] | None = None
    modes: tuple[AgentMode, ...] | None = None
    fetched_at: str | None = None
    label: str | None = None
    description: str | None = None
    icon_svg: str | None = None
    default_mode_id: str | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)

    @property
    def loading(self) -> bool:
        return self.status == "loading"


@attrs.frozen
class ProviderSnapshot:
    """The catalog as read with ``providers.snapshot()`` or awaited by ``wait_for_ready()``."""

    entries: tuple[ProviderEntry, ...]
    generated_at: str | None = None
    cwd: str | None = None

    def entry(self, provider: str) -> ProviderEntry | None:
        return next((e for e in self.entries if e.provider == provider), None)

    @property
    def loading(self) -> tuple[str, ...]:
        """The providers still loading."""
        return tuple(e.provider for e in self.entries if e.loading)


@attrs.frozen
class ProviderSnapshotUpdate:
    """``providers_snapshot_update``: the whole catalog again (never a diff)."""

    entries: tuple[ProviderEntry, ...]
    cwd: str | None = None
    generated_at: str | None = None
    subscription_id: str | None = None

    @property
    def loading(self) -> tuple[str, ...]:
        return tuple(e.provider for e in self.entries if e.loading)


@attrs.frozen
class AvailableProvider:
    provider: str
    available: bool = False
    error: str | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


def _entries(payload: Mapping[str, Any]) -> tuple[ProviderEntry, ...]:
    entries = payload.get("entries")
    if entries is not None and not isinstance(entries, list):
        raise ProtocolError(f"entries is {type(entries).__name__}, not a list")
    return structure_each(entries, ProviderEntry, "entries")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def parse_snapshot(payload: Mapping[str, Any]) -> ProviderSnapshot:
    return ProviderSnapshot(
        entries=_entries(payload), generated_at=_text(payload.get("generatedAt")), cwd=_text(payload.get("cwd"))
    )


def parse_update(payload: Mapping[str, Any]) -> ProviderSnapshotUpdate:
    return ProviderSnapshotUpdate(
        entries=_entries(payload),
        cwd=_text(payload.get("cwd")),
        generated_at=_text(payload.get("generatedAt")),
        subscription_id=_text(payload.get("subscriptionId")),
    )
