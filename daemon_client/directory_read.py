"""One read of a directory (agents or workspaces), plain or subscribing.

Validates the query on the caller's thread before anything is sent, then either reads a
page or establishes an observation through the family's
:class:`~daemon_client.subscriptions.directory.DirectoryManager`. Blocks the caller's thread up to
the request's timeout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from daemon_client.protocol.directory import Page, SubscribeOptions

if TYPE_CHECKING:
    from daemon_client.client import Client
    from daemon_client.subscriptions.directory import DirectoryManager

R = TypeVar("R")
SubscribeArg = bool | SubscribeOptions | Mapping[str, Any] | None


def wants_subscription(subscribe: SubscribeArg) -> bool:
    """True to observe; ``ValueError`` for anything that tries to choose a subscription ID."""
    if subscribe is None or isinstance(subscribe, bool):
        return bool(subscribe)
    if isinstance(subscribe, SubscribeOptions):
        return True
    if isinstance(subscribe, Mapping):
        if any("subscription" in str(key).lower() for key in subscribe):
            raise ValueError(
                "subscription IDs are issued by the daemon (or, on older daemons, by this client); do not pass one"
            )
        if subscribe:
            raise ValueError(f"unknown subscribe options: {', '.join(map(str, subscribe))}")
        return True
    raise TypeError(f"subscribe must be a bool or SubscribeOptions, not {type(subscribe).__name__}")


def read_directory(
    client: Client,
    manager: DirectoryManager[R, Any, Any],
    message: dict[str, Any],
    *,
    page: Page | None,
    include_background: bool | None,
    subscribe: SubscribeArg,
    subscription_id: object,
    timeout: float | None,
) -> R:
    """Send ``message`` (a ``fetch_*_request`` with its filter and sort) as a plain or a
    subscribing read and return the typed result (with ``subscription`` when observing)."""
    if subscription_id is not None:
        raise ValueError("subscription IDs are issued by the daemon (or this client); do not pass one")
    observe = wants_subscription(subscribe)
    if page is not None:
        message["page"] = page.to_wire()
    if include_background is not None:
        message["includeBackground"] = include_background
    wait = client._timeout_for(message["type"], timeout)
    if not observe:
        return manager.family.parse_list(client.request(message, timeout=wait))
    observation, result = manager.observe(message, wait)
    return attrs.evolve(result, subscription_id=observation.subscription_id, subscription=observation)  # type: ignore[misc]
