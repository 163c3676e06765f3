"""The remaining provider calls (protocol.md 12.4.1, 12.6): features and slash commands of a
draft configuration, a provider's diagnostic, and usage (newer daemons).

Functions used by :class:`~daemon_client.api.providers.namespace.ProvidersNamespace`; they run on the caller's
thread and block with the request family's timeout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from daemon_client.errors import ProtocolError
from daemon_client.protocol.agent_settings import AgentCommand
from daemon_client.protocol.agents import AgentFeature
from daemon_client.protocol.lenient import structure_each
from daemon_client.protocol.provider_usage import ProviderUsageList
from daemon_client.protocol.requests import agents as agents_requests
from daemon_client.protocol.requests import providers as providers_requests

if TYPE_CHECKING:
    from daemon_client.api.agents.create import AgentConfig
    from daemon_client.runtime.context import ClientContext

FEATURES = providers_requests.LIST_FEATURES.type
DIAGNOSTIC = providers_requests.DIAGNOSTIC.type
USAGE = providers_requests.USAGE.type

DRAFT_AGENT_ID = "__new_agent__"
"""The ``agentId`` of a commands request for a draft configuration: it names no agent, so the
daemon asks the provider (the ID the TypeScript app sends for an agent not created yet)."""


def draft_config(config: AgentConfig, cwd: str | None, what: str = "features") -> dict[str, Any]:
    """The ``draftConfig`` of a features or commands request: ``provider`` split at the first
    ``/`` into provider and model (a model is optional here), plus the working directory."""
    provider, _, model = config.provider.partition("/")
    if not provider:
        raise ValueError(f'Expected config.provider as "provider" or "provider/model", got {config.provider!r}')
    directory = cwd or config.cwd
    if not directory:
        raise ValueError(f"{what} are read for a working directory: pass cwd=... or AgentConfig(cwd=...)")
    draft: dict[str, Any] = {"provider": provider, "cwd": directory}
    optional = {
        "model": model or config.model,
        "modeId": config.mode_id,
        "thinkingOptionId": config.thinking_option_id,
        "featureValues": dict(config.feature_values) if config.feature_values is not None else None,
    }
    draft.update({key: value for key, value in optional.items() if value is not None})
    return draft


def list_features(
    context: ClientContext, config: AgentConfig, cwd: str | None, timeout: float | None
) -> tuple[AgentFeature, ...]:
    """The features an agent with ``config`` would offer; ``RpcError`` when the daemon reports
    an error (it then sends no ``features`` at all)."""
    payload = context.call(providers_requests.LIST_FEATURES, {"draftConfig": draft_config(config, cwd)}, timeout)
    features = payload.get("features")
    return structure_each(features if isinstance(features, list) else None, AgentFeature, "features")


def list_commands(
    context: ClientContext, config: AgentConfig, cwd: str | None, timeout: float | None
) -> tuple[AgentCommand, ...]:
    """The slash commands and skills an agent with ``config`` would have
    (``list_commands_request`` with a ``draftConfig`` and an ``agentId`` that names no agent);
    ``RpcError`` when the daemon reports an error (a provider that cannot list commands)."""
    draft = draft_config(config, cwd, "commands")
    payload = context.call(agents_requests.LIST_COMMANDS, {"agentId": DRAFT_AGENT_ID, "draftConfig": draft}, timeout)
    commands = payload.get("commands")
    return structure_each(commands if isinstance(commands, list) else None, AgentCommand, "commands")


def diagnostic(context: ClientContext, provider: str, timeout: float | None) -> str:
    """A provider's diagnostic report: free text for humans (never parse it)."""
    if not isinstance(provider, str) or not provider:
        raise ValueError(f"provider must be a provider ID, got {provider!r}")
    payload = context.call(providers_requests.DIAGNOSTIC, {"provider": provider}, timeout)
    text = payload.get("diagnostic")
    if not isinstance(text, str):
        raise ProtocolError(f"{DIAGNOSTIC} answered without a diagnostic text: {text!r:.200}")
    return text


def list_usage(context: ClientContext, timeout: float | None) -> ProviderUsageList:
    """Every provider's subscription windows, balances and details (newer daemons)."""
    usage: ProviderUsageList = context.call(providers_requests.USAGE, timeout=timeout)
    return usage
