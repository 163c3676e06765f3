"""attrs models of ``provider.usage.list.response`` (protocol.md 12.6; newer daemons only).

The reply's fields were not part of the recorded wire reference; these models follow the
protocol package's names (providers with usage windows, balances and details, and an optional
account list) and read everything leniently: what they do not model stays in ``extra_fields``,
and the whole reply in :attr:`ProviderUsageList.raw`. Pure data: no thread runs code here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import attrs

from daemon_client.protocol.lenient import structure_each


@attrs.frozen
class UsageWindow:
    """A subscription window of a provider (``"Weekly"``, ``"Session"``) and how much of it is used."""

    id: str
    label: str = ""
    used_pct: float | None = None
    resets_at: str | None = None
    tone: str | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class ProviderUsage:
    """The usage of one provider: windows, balances and free-form details."""

    provider_id: str
    display_name: str = ""
    status: str = ""
    plan_label: str | None = None
    windows: tuple[UsageWindow, ...] = ()
    balances: tuple[Mapping[str, Any], ...] = ()
    details: tuple[Mapping[str, Any], ...] = ()
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class ProviderUsageList:
    """``providers.list_usage()``: every provider's usage, and the reply as sent (``raw``)."""

    providers: tuple[ProviderUsage, ...] = ()
    fetched_at: str | None = None
    raw: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


def parse_usage(payload: Mapping[str, Any]) -> ProviderUsageList:
    """A ``provider.usage.list.response`` payload → :class:`ProviderUsageList`."""
    providers = payload.get("providers")
    fetched = payload.get("fetchedAt")
    return ProviderUsageList(
        providers=structure_each(providers if isinstance(providers, list) else None, ProviderUsage, "providers"),
        fetched_at=fetched if isinstance(fetched, str) else None,
        raw=copy.deepcopy(dict(payload)),
    )
