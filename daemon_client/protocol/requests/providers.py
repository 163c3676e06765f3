"""Provider requests (protocol.md 7, 12.6): snapshots, listings, features, diagnostics, usage.

Declarations only (see :mod:`daemon_client.protocol.requests.spec`); read from any thread.
"""

from __future__ import annotations

from daemon_client.protocol.requests.spec import FeatureGate, RequestSpec, TimeoutClass

_F = "providers"
_LISTING = TimeoutClass.PROVIDER_LISTING

SNAPSHOT = RequestSpec(
    "get_providers_snapshot_request", _F, timeout=TimeoutClass.READ, api="client.providers.snapshot()"
)
REFRESH = RequestSpec(
    "refresh_providers_snapshot_request", _F, timeout=TimeoutClass.LONG_WORK, api="client.providers.refresh()"
)
LIST_AVAILABLE = RequestSpec(
    "list_available_providers_request", _F, timeout=TimeoutClass.SLOW_READ, api="client.providers.list_available()"
)
LIST_MODELS = RequestSpec(
    "list_provider_models_request", _F, timeout=_LISTING, required=("provider",), api="client.providers.list_models()"
)
LIST_MODES = RequestSpec(
    "list_provider_modes_request", _F, timeout=_LISTING, required=("provider",), api="client.providers.list_modes()"
)
LIST_FEATURES = RequestSpec(
    "list_provider_features_request", _F, timeout=_LISTING, required=("draftConfig",),
    api="client.providers.list_features()",
)  # fmt: skip
DIAGNOSTIC = RequestSpec(
    "provider_diagnostic_request", _F, timeout=TimeoutClass.DIAGNOSTIC, required=("provider",),
    api="client.providers.diagnostic()",
)  # fmt: skip
USAGE = RequestSpec(
    "provider.usage.list.request", _F, timeout=TimeoutClass.WORK,
    parse="daemon_client.protocol.provider_usage:parse_usage",
    feature=FeatureGate("providerUsageList", "list provider usage", "0.1.98"), api="client.providers.list_usage()",
)  # fmt: skip

REQUESTS = (SNAPSHOT, REFRESH, LIST_AVAILABLE, LIST_MODELS, LIST_MODES, LIST_FEATURES, DIAGNOSTIC, USAGE)
