"""Reading a ``server_info`` payload (protocol 1.5): strict about what is required, lenient about the rest.

``serverId`` is the only required field: missing, or not a non-empty string, it makes the
payload unusable and the error names it. Every other field is optional and informational:
absent or ``null`` means empty (``features``, ``capabilities`` and ``permissions`` become
``{}``/``()``, the others ``None``); a value of the wrong type is also read as empty, and
:func:`read_server_info` says which fields it ignored so that the caller can log them.

``protocolVersion`` is an integer when present: an integral number (``1``, ``2.0``) is kept as an
``int``; anything else (``2.5``, ``"1"``, ``true``) is ignored, never truncated, because the
daemon already accepted this client's ``protocolVersion: 1`` by answering its hello at all.

Pure functions; the reader thread calls them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from daemon_client._values import Record
from daemon_client.errors import ProtocolError
from daemon_client.protocol.models import ServerInfo

_KNOWN = frozenset(
    {
        "serverId",
        "status",
        "hostname",
        "version",
        "protocolVersion",
        "permissions",
        "desktopManaged",
        "capabilities",
        "features",
        "requestId",
    }
)


class ServerInfoReading(Record):
    """A read ``server_info`` and the optional fields that were present but unusable (never
    changed once built)."""

    __slots__ = ("ignored", "info")

    info: ServerInfo
    ignored: tuple[str, ...]
    """One ``"field (value)"`` per ignored field, values shortened."""

    def __init__(self, info: ServerInfo, ignored: tuple[str, ...] = ()) -> None:
        self.info = info
        self.ignored = ignored


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "…"


def _text(payload: Mapping[str, Any], key: str, ignored: list[str]) -> str | None:
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        ignored.append(f"{key} ({_shown(value)})")
        return None
    return value if value.strip() else None


def _protocol_version(payload: Mapping[str, Any], ignored: list[str]) -> int | None:
    value = payload.get("protocolVersion")
    if value is None:
        return None
    integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not integral:
        ignored.append(f"protocolVersion ({_shown(value)}: not an integer)")
        return None
    return int(value)


def read_server_info(payload: Mapping[str, Any]) -> ServerInfoReading:
    """``server_info`` payload → :class:`ServerInfoReading`; ``ProtocolError`` names a bad ``serverId``."""
    server_id = payload.get("serverId")
    if server_id is None:
        raise ProtocolError("server_info has no serverId (the one required field)")
    if not isinstance(server_id, str) or not server_id.strip():
        raise ProtocolError(
            f"server_info has an unusable serverId ({_shown(server_id)}): a non-empty string is required"
        )
    ignored: list[str] = []
    features = payload.get("features")
    if features is not None and not isinstance(features, Mapping):
        ignored.append(f"features ({_shown(features)})")
    capabilities = payload.get("capabilities")
    if capabilities is not None and not isinstance(capabilities, Mapping):
        ignored.append(f"capabilities ({_shown(capabilities)})")
    permissions = payload.get("permissions")
    if permissions is not None and not isinstance(permissions, list):
        ignored.append(f"permissions ({_shown(permissions)})")
    desktop_managed = payload.get("desktopManaged")
    if desktop_managed is not None and not isinstance(desktop_managed, bool):
        ignored.append(f"desktopManaged ({_shown(desktop_managed)})")
        desktop_managed = None
    status = payload.get("status")
    # kept raw, as on every model of a daemon object: unknown fields and the values ignored above
    extra = {key: value for key, value in payload.items() if key not in _KNOWN}
    extra.update({key: payload[key] for key in (entry.split(" ", 1)[0] for entry in ignored)})
    info = ServerInfo(
        server_id=server_id,
        status=status if isinstance(status, str) else "server_info",
        hostname=_text(payload, "hostname", ignored),
        version=_text(payload, "version", ignored),
        protocol_version=_protocol_version(payload, ignored),
        permissions=tuple(p for p in permissions if isinstance(p, str)) if isinstance(permissions, list) else (),
        desktop_managed=desktop_managed,
        capabilities=dict(capabilities) if isinstance(capabilities, Mapping) else {},
        features=dict(features) if isinstance(features, Mapping) else {},
        extra_fields=extra,
    )
    return ServerInfoReading(info, tuple(ignored))
