"""Feature gates of calls that only newer daemons answer (protocol.md 12.1).

Where the TypeScript SDK refuses a call locally because ``server_info.features`` lacks a flag,
this client raises :class:`~daemon_client.errors.UnsupportedByHost` naming the flag and the
first Paseo version that has it, before anything is sent. Pure functions on the caller's thread.
"""

from __future__ import annotations

from daemon_client.errors import NotConnected, UnsupportedByHost
from daemon_client.protocol.models import ServerInfo


def require_feature(info: ServerInfo | None, flag: str, what: str, version: str) -> ServerInfo:
    """``info`` if it reports ``features.<flag>``; else ``UnsupportedByHost`` (``NotConnected``
    while there is no connection to ask)."""
    if info is None:
        raise NotConnected(f"not connected: cannot tell whether the daemon supports {what}")
    if not info.feature(flag):
        running = f"Paseo {info.version}" if info.version else "this daemon"
        raise UnsupportedByHost(
            f"Update the host to {what}: this needs features.{flag} (Paseo {version} or newer); "
            f"{running} does not report it.",
            feature=flag,
            version=version,
        )
    return info
