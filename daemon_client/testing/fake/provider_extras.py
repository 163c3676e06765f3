"""The remaining provider calls of the fake daemon (``fake.provider_extras``; protocol.md 12.6,
transcript 16).

- ``list_provider_features_request`` (every host): the features of a provider in
  :attr:`FakeProviderExtras.features` (``[]`` for a known provider without any); an unknown
  provider gets ``error:"No client registered for provider '…'"`` and **no** ``features`` key.
- ``provider_diagnostic_request``: an unknown provider fails with ``rpc_error``
  ``provider_diagnostic_failed`` (16 L15); known ones keep the catalog's handler.
- ``provider.usage.list.request`` (hosts with ``features.providerUsageList``): the rows of
  :attr:`FakeProviderExtras.usage`; elsewhere it is unknown (``unknown_schema``, 18 L4-L5).

Handlers run on connection reader threads and hold no lock while sending.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from daemon_client.protocol.requests.providers import DIAGNOSTIC, LIST_FEATURES, USAGE
from daemon_client.testing.fake.engine.handlers import iso_now

if TYPE_CHECKING:
    from daemon_client.testing.fake.engine.handlers import Handler, HandlerRegistry, RequestContext
    from daemon_client.testing.fake.ports import DaemonPort

__all__ = ["DEFAULT_FEATURES", "DEFAULT_USAGE", "FakeProviderExtras"]

DEFAULT_FEATURES: Mapping[str, list[dict[str, Any]]] = {
    "claude": [{"type": "toggle", "id": "web_search", "label": "Web search", "value": False}],
}
DEFAULT_USAGE: list[dict[str, Any]] = [
    {
        "providerId": "claude",
        "displayName": "Claude",
        "status": "available",
        "planLabel": "Max",
        "windows": [{"id": "session", "label": "Session", "usedPct": 75, "resetsAt": None, "tone": "warning"}],
        "balances": [],
        "details": [],
    }
]


class FakeProviderExtras:
    """``fake.provider_extras``: see the module docstring."""

    def __init__(self, daemon: DaemonPort) -> None:
        self.daemon = daemon
        config = daemon.core.config
        self.usage_enabled = USAGE.exists_on(config.host_kind, config.effective_features)
        """Whether this host answers ``provider.usage.list.request`` (by its declaration)."""
        self.features: dict[str, list[dict[str, Any]]] = copy.deepcopy(dict(DEFAULT_FEATURES))
        """Features per provider (``list_provider_features_request``)."""
        self.usage: list[dict[str, Any]] = copy.deepcopy(DEFAULT_USAGE)
        """The ``providers`` rows of ``provider.usage.list.response``."""
        self._diagnostic: Handler | None = None

    def install(self, registry: HandlerRegistry) -> None:
        self._diagnostic = registry.handler_for(DIAGNOSTIC.type)
        config = self.daemon.core.config
        registry.serve_all(
            (
                (LIST_FEATURES, self._handle_features),
                (DIAGNOSTIC, self._handle_diagnostic),
                (USAGE, self._handle_usage),
            ),
            host_kind=config.host_kind,
            features=config.effective_features,
        )

    def _known(self, provider: object) -> bool:
        return isinstance(provider, str) and any(e["provider"] == provider for e in self.daemon.providers.entries())

    def _handle_features(self, ctx: RequestContext) -> None:
        draft = ctx.message["draftConfig"]
        provider = draft.get("provider") if isinstance(draft, Mapping) else None
        if not isinstance(draft, Mapping) or not isinstance(draft.get("cwd"), str):
            ctx.rpc_error("Unknown request schema", "unknown_schema")
            return
        payload: dict[str, Any] = {"provider": provider}
        if self._known(provider):
            payload.update(features=copy.deepcopy(self.features.get(str(provider), [])), error=None)
        else:
            payload["error"] = f"No client registered for provider '{provider}'"
        payload["fetchedAt"] = iso_now()
        ctx.reply(payload)

    def _handle_diagnostic(self, ctx: RequestContext) -> None:
        provider = ctx.message["provider"]
        if not self._known(provider) or self._diagnostic is None:
            detail = "Cannot read properties of undefined (reading 'createClient')"
            ctx.rpc_error(f"Failed to get provider diagnostic: {detail}", "provider_diagnostic_failed")
            return
        self._diagnostic(ctx)

    def _handle_usage(self, ctx: RequestContext) -> None:
        ctx.reply({"providers": copy.deepcopy(self.usage), "fetchedAt": iso_now()})
