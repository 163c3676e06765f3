"""Client configuration: reconnect policy, heartbeat, and defaults from the environment.

Immutable values, read by the connection supervisor; no thread runs code here.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    import random

#: Where the client connects when no address is given and none is found (``localhost:6767``).
DEFAULT_URL = "ws://localhost:6767/ws"
#: Sent as ``hello.appVersion``: a Paseo version, never this package's. Daemons hide
#: non-builtin providers (and their agents) from clients announcing less than 0.1.45.
DEFAULT_APP_VERSION = "0.1.65"
MIN_APP_VERSION = (0, 1, 45)
#: Names a file every new client writes its wire trace to (see ``Client(trace=...)``).
TRACE_ENV = "DAEMON_CLIENT_TRACE"
TRACE_BINARY_ENV = "DAEMON_CLIENT_TRACE_BINARY"
"""Set to ``1`` to record binary frames in full in the wire trace (``Client(trace_binary=...)``)."""


def _positive(_instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value > 0:
        raise ValueError(f"{attribute.name} must be > 0, got {value!r}")


@attrs.frozen
class ReconnectPolicy:
    """How the client reconnects after losing an established connection.

    The delay before attempt ``n`` (0, 1, 2, …) is ``min(max_delay, base_delay * 2**n)``
    multiplied by a random factor in ``[1 - jitter, 1 + jitter]`` and capped at
    ``max_delay``. ``n`` goes back to 0 once a connection stayed up for
    ``stable_after`` seconds. ``retry_initial_connect`` makes a failed first
    ``connect()`` keep retrying in the background instead of raising.
    """

    enabled: bool = True
    base_delay: float = attrs.field(default=1.5, validator=_positive)
    max_delay: float = attrs.field(default=30.0, validator=_positive)
    jitter: float = 0.2
    stable_after: float = 5.0
    retry_initial_connect: bool = False

    def __attrs_post_init__(self) -> None:
        if not 0 <= self.jitter < 1:
            raise ValueError(f"jitter must be in [0, 1), got {self.jitter!r}")

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before reconnect attempt ``attempt`` (0-based)."""
        base = min(self.max_delay, self.base_delay * (2 ** min(attempt, 32)))
        import random  # here: a client that never reconnects never needs the module

        factor = (rng or random).uniform(1 - self.jitter, 1 + self.jitter) if self.jitter else 1.0
        return float(min(self.max_delay, base * factor))


@attrs.frozen
class Heartbeat:
    """The top-level JSON ping while connected (protocol 1.6).

    A ``ping`` every ``interval`` seconds, at most one outstanding; a probe with no
    ``pong`` within ``timeout`` seconds is a miss; ``max_misses`` consecutive misses
    close the socket (1001, "Heartbeat timeout") and reconnect.
    """

    interval: float = attrs.field(default=10.0, validator=_positive)
    timeout: float = attrs.field(default=15.0, validator=_positive)
    max_misses: int = 2
    enabled: bool = True


def version_tuple(version: str) -> tuple[int, ...] | None:
    """``"0.1.65-beta.5"`` → ``(0, 1, 65)`` (prerelease stripped, as the daemon compares)."""
    core = version.split("-", 1)[0].split("+", 1)[0]
    try:
        return tuple(int(part) for part in core.split("."))
    except ValueError:
        return None


def check_app_version(app_version: str) -> str | None:
    """A warning if ``app_version`` would make older daemons hide providers, else ``None``."""
    parsed = version_tuple(app_version)
    if parsed is None or parsed < MIN_APP_VERSION:
        return (
            f"app_version {app_version!r} is below 0.1.45 or not a version: older daemons then hide every "
            "provider but claude, codex and opencode (and their agents) from this client"
        )
    return None


def password_from_env(password: str | None) -> str | None:
    """The explicit password, else ``PASEO_PASSWORD`` (empty means none)."""
    if password is not None:
        return password or None
    return os.environ.get("PASEO_PASSWORD") or None


_TCHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def is_token_safe(password: str) -> bool:
    """True if ``password`` fits in an HTTP token (RFC 7230), hence in a subprotocol name."""
    return bool(password) and all(ch in _TCHARS for ch in password)
