"""The one policy of the WebSocket opening handshake: where credentials may go, what is accepted.

This module owns every rule of the upgrade, so that none is left to a library default:

* **URLs**: ``ws://`` or ``wss://`` only; credentials in the URL's userinfo are refused (they
  belong in ``password=``); an ``ssl_context`` with a ``ws://`` URL is refused (the caller asked
  for TLS and would not get it).
* **Redirects** are never followed: a 3xx answer fails the attempt with an error naming its
  ``Location``, so that no credential is ever re-sent to another host, port or scheme.
* **Cookies** are neither stored nor sent: ``Set-Cookie`` in an answer is ignored, and the
  request carries no ``Cookie`` header.
* **Extensions**: the client offers none, so an answer that selects one (``permessage-deflate``)
  fails the connection (RFC 6455 4.1); so does a subprotocol the client did not offer.
* **Header limits**: the answer's head is read within 8 KiB per line, 64 KiB and 100 header
  fields in all; a longer one fails with a clear error instead of growing memory.
* **Loopback**: which hosts count as this machine (``127.0.0.0/8``, ``::1``, ``localhost``),
  for the clear-text credential warning and the fake daemon's bind check.

Pure functions and plain slotted values (:mod:`daemon_client._values`), never changed once
built. The reader thread of a connection calls them while it opens the socket
(:mod:`daemon_client.transport.upgrade`); ``Client``'s constructor calls :func:`parse_target`
and :func:`credentials_in_clear` on the caller's thread.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import os
import re
import ssl
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

from daemon_client._values import Record
from daemon_client.transport.base import TransportError

MAX_LINE_BYTES = 8 * 1024
MAX_HEAD_BYTES = 64 * 1024
MAX_HEADER_FIELDS = 100
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_REDIRECTS = frozenset((301, 302, 303, 307, 308))
_DEFAULT_PORTS = {"ws": 80, "wss": 443}
_RESERVED_HEADERS = frozenset(
    (
        "host",
        "upgrade",
        "connection",
        "cookie",
        "origin",
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-protocol",
        "sec-websocket-extensions",
    )
)


class HandshakeRefused(TransportError):
    """The server's answer to the upgrade breaks the handshake policy (no connection)."""


class HandshakeLimits(Record):
    """How large the server's answer to the upgrade may be (never changed once built)."""

    __slots__ = ("max_head_bytes", "max_header_fields", "max_line_bytes")

    max_line_bytes: int
    max_head_bytes: int
    max_header_fields: int

    def __init__(
        self,
        max_line_bytes: int = MAX_LINE_BYTES,
        max_head_bytes: int = MAX_HEAD_BYTES,
        max_header_fields: int = MAX_HEADER_FIELDS,
    ) -> None:
        self.max_line_bytes = max_line_bytes
        self.max_head_bytes = max_head_bytes
        self.max_header_fields = max_header_fields


class Target(Record):
    """Where a ``ws://``/``wss://`` URL points (never changed once built)."""

    __slots__ = ("host", "port", "resource", "scheme")

    scheme: str
    host: str
    port: int
    resource: str

    def __init__(self, scheme: str, host: str, port: int, resource: str) -> None:
        self.scheme = scheme
        self.host = host
        self.port = port
        self.resource = resource

    @property
    def secure(self) -> bool:
        return self.scheme == "wss"

    @property
    def host_header(self) -> str:
        """The ``Host`` header: IPv6 literals in brackets, the port only when not the default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == _DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"


def parse_target(url: str, *, ssl_context: ssl.SSLContext | None = None) -> Target:
    """Read a daemon URL by the policy above; ``ValueError`` says what is wrong and what to do.

    The message never repeats the URL's userinfo.
    """
    authority = url.split("://", 1)[1] if "://" in url else ""
    if "@" in re.split(r"[/?#]", authority, maxsplit=1)[0]:  # before parsing: no parser error may echo it
        raise ValueError(
            "the daemon URL carries credentials in its user-info part (user:password@host), which the "
            "client refuses to keep or send; pass password=... (or set PASEO_PASSWORD) and a URL without them"
        )
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"invalid daemon URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        shown = scheme or "no scheme"
        raise ValueError(f"the daemon URL must start with ws:// or wss:// (got {shown})")
    if not parts.hostname:
        raise ValueError("the daemon URL has no host")
    if ssl_context is not None and scheme != "wss":
        raise ValueError(
            "ssl_context was given with a ws:// URL, which would connect without TLS: use wss://, or drop ssl_context"
        )
    resource = parts.path or "/"
    if parts.query:
        resource += "?" + parts.query
    return Target(scheme, parts.hostname, port if port is not None else _DEFAULT_PORTS[scheme], resource)


def is_loopback_host(host: str) -> bool:
    """True for ``localhost``, ``*.localhost``, ``127.0.0.0/8`` and ``::1`` (names are not resolved)."""
    name = host.strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def credentials_in_clear(target: Target, has_credentials: bool) -> bool:
    """True when credentials would cross a network unencrypted: ``ws://`` to a non-loopback host."""
    return has_credentials and not target.secure and not is_loopback_host(target.host)


def new_key() -> str:
    """A fresh ``Sec-WebSocket-Key``."""
    return base64.b64encode(os.urandom(16)).decode("ascii")


def accept_for(key: str) -> str:
    """The ``Sec-WebSocket-Accept`` a server must answer to ``key``."""
    return base64.b64encode(hashlib.sha1(key.encode("ascii") + _GUID).digest()).decode("ascii")


def build_request(target: Target, key: str, headers: Mapping[str, str], subprotocols: Sequence[str]) -> bytes:
    """The upgrade request: no ``Origin``, no ``Cookie``, no extension offered."""
    lines = [
        f"GET {target.resource} HTTP/1.1",
        f"Host: {target.host_header}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
    ]
    for name, value in headers.items():
        if name.lower() in _RESERVED_HEADERS or "\r" in value or "\n" in value or "\r" in name or "\n" in name:
            raise ValueError(f"header {name!r} cannot be sent with the upgrade")
        lines.append(f"{name}: {value}")
    if subprotocols:  # one header, as offered: the bearer subprotocol carries the password
        lines.append(f"Sec-WebSocket-Protocol: {', '.join(subprotocols)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


class Answer(Record):
    """The head of the server's answer to the upgrade (never changed once built)."""

    __slots__ = ("headers", "reason", "status")

    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]

    def __init__(self, status: int, reason: str, headers: tuple[tuple[str, str], ...]) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers

    def get_all(self, name: str) -> list[str]:
        wanted = name.lower()
        return [value for key, value in self.headers if key.lower() == wanted]

    def get(self, name: str) -> str | None:
        values = self.get_all(name)
        return values[0] if values else None


class HeadReader:
    """Collects the answer's head from chunks, within the limits; keeps what follows it.

    ``feed`` returns the :class:`Answer` once the blank line arrives, else ``None``; it raises
    :class:`HandshakeRefused` as soon as a limit is crossed, so at most ``max_head_bytes`` plus
    one chunk is ever held.
    """

    def __init__(self, limits: HandshakeLimits | None = None) -> None:
        self._limits = limits or HandshakeLimits()
        self._buffer = bytearray()
        self.rest = b""
        """Bytes received after the head (frames the server sent right away)."""

    def feed(self, chunk: bytes) -> Answer | None:
        limits = self._limits
        searched = max(0, len(self._buffer) - 3)
        self._buffer += chunk
        end = self._buffer.find(b"\r\n\r\n", searched)
        if end < 0:
            if len(self._buffer) > limits.max_head_bytes:
                raise HandshakeRefused(_too_long(f"is over {limits.max_head_bytes} bytes without ending"))
            if len(self._buffer) - (self._buffer.rfind(b"\n") + 1) > limits.max_line_bytes:
                raise HandshakeRefused(_too_long(f"has a line over {limits.max_line_bytes} bytes"))
            return None
        if end > limits.max_head_bytes:
            raise HandshakeRefused(_too_long(f"is over {limits.max_head_bytes} bytes"))
        head = bytes(self._buffer[:end])
        self.rest = bytes(self._buffer[end + 4 :])
        self._buffer = bytearray()
        return _parse_head(head, limits)


def _too_long(what: str) -> str:
    return f"the server's answer to the WebSocket upgrade {what}: not a WebSocket server (or a hostile one); refused"


def _parse_head(head: bytes, limits: HandshakeLimits) -> Answer:
    lines = head.decode("iso-8859-1").split("\r\n")
    if any(len(line) > limits.max_line_bytes for line in lines):
        raise HandshakeRefused(_too_long(f"has a line over {limits.max_line_bytes} bytes"))
    if len(lines) - 1 > limits.max_header_fields:
        raise HandshakeRefused(_too_long(f"has over {limits.max_header_fields} header fields"))
    status_line = lines[0]
    version, _, rest = status_line.partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/") or len(code) != 3 or not code.isdigit():
        raise HandshakeRefused(f"the server did not answer the WebSocket upgrade with HTTP ({_shown(status_line)})")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip() or line[0] in " \t":
            raise HandshakeRefused(f"the server's answer to the upgrade has a malformed header line ({_shown(line)})")
        headers.append((name, value.strip()))
    return Answer(int(code), reason.strip(), tuple(headers))


def _shown(text: str, limit: int = 200) -> str:
    """``text`` made printable and short, for an error message."""
    clean = "".join(ch if ch.isprintable() else "?" for ch in text)
    return clean if len(clean) <= limit else clean[:limit] + "…"


def _redacted_location(location: str) -> str:
    """A ``Location`` for an error message, without any user-info it carries."""
    try:
        parts = urlsplit(location)
        if "@" in parts.netloc:
            location = parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]).geturl()
    except ValueError:
        pass
    return _shown(location)


def check_answer(answer: Answer, key: str, offered_subprotocols: Sequence[str]) -> str | None:
    """Accept the answer or raise :class:`HandshakeRefused`; return the selected subprotocol.

    Error messages never repeat an offered subprotocol (the bearer one carries the password).
    """
    if answer.status in _REDIRECTS:
        location = answer.get("location")
        where = f" to {_redacted_location(location)}" if location else " (without a Location)"
        raise HandshakeRefused(
            f"the server redirects the WebSocket upgrade (HTTP {answer.status}){where}; redirects are not "
            "followed, so that credentials never go to another host: connect to that URL directly if you trust it"
        )
    if answer.status != 101:
        reason = f" {_shown(answer.reason, 80)}" if answer.reason else ""
        raise HandshakeRefused(f"the server refused the WebSocket upgrade (HTTP {answer.status}{reason})")
    if (answer.get("upgrade") or "").strip().lower() != "websocket":
        raise HandshakeRefused("the server's answer to the upgrade lacks 'Upgrade: websocket'")
    tokens = {token.strip().lower() for value in answer.get_all("connection") for token in value.split(",")}
    if "upgrade" not in tokens:
        raise HandshakeRefused("the server's answer to the upgrade lacks 'Connection: Upgrade'")
    accepts = answer.get_all("sec-websocket-accept")
    if accepts != [accept_for(key)]:
        raise HandshakeRefused("the server's Sec-WebSocket-Accept does not match the key sent: not a WebSocket server")
    extensions = [e.strip() for value in answer.get_all("sec-websocket-extensions") for e in value.split(",")]
    extensions = [e for e in extensions if e]
    if extensions:
        names = ", ".join(_shown(e.split(";", 1)[0].strip(), 40) for e in extensions[:3])
        raise HandshakeRefused(
            f"the server selected the extension {names}, which the client did not offer (RFC 6455 9.1)"
        )
    selected = answer.get_all("sec-websocket-protocol")
    if not selected:
        return None  # a server may ignore the offer (the daemon with no password does)
    if len(selected) > 1 or selected[0] not in offered_subprotocols:
        raise HandshakeRefused("the server selected a subprotocol the client did not offer")
    return selected[0]
