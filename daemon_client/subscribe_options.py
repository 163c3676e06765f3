"""The ``subscribe=`` argument of directory reads: ``True``/``False`` or ``SubscribeOptions()``.

Pure validation, on the caller's thread, before anything is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from daemon_client.protocol.directory import SubscribeOptions

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
