"""Daemon addresses: the host strings Paseo's CLI accepts, parsed into a :class:`DaemonTarget`.

Forms (surrounding whitespace ignored):

* ``ws://host:port/path`` and ``wss://…``: a WebSocket URL, used as given;
* ``host:port`` or ``[v6]:port``, and a bare port (``6767`` means ``127.0.0.1:6767``): TCP,
  upgraded at ``/ws``;
* ``tcp://host:port``, with the query keys ``ssl=true`` (TLS) and ``password=…`` only;
  userinfo (``user:pass@``) is refused, as Paseo's CLI does;
* ``/path``, ``~/path`` or ``unix:///path``: a unix socket;
* ``pipe://name`` or ``\\\\.\\pipe\\name``: a Windows named pipe (parsed, never dialled);
* a pairing-offer link (anything holding ``#offer=``): a daemon behind a Paseo relay
  (:mod:`~daemon_client.discovery.offer`).

Pure functions and frozen values; any thread may call them.
"""

from __future__ import annotations

import enum
import os
import re
import socket
from urllib.parse import parse_qs, urlsplit

import attrs

from daemon_client.discovery.offer import RelayTarget, is_offer, parse_offer, redact_offer

DEFAULT_PORT = 6767
PIPE_PREFIX = "\\\\.\\pipe\\"
_HOST_PORT = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.%\w]+)\]|(?P<host>[^\s/\\@\[\]?#:]+)):(?P<port>\d{1,5})$")
_WINDOWS_PATH = re.compile(r"^[A-Za-z]:[/\\]")
_TCP_QUERY_KEYS = frozenset({"ssl", "password"})
_WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1"}


class TargetKind(enum.Enum):
    """How the daemon is reached."""

    TCP = "tcp"
    UNIX = "unix"
    PIPE = "pipe"
    RELAY = "relay"


@attrs.frozen
class DaemonTarget:
    """Where one daemon listens, and how to reach it.

    ``url`` is what :attr:`Client.url <daemon_client.Client.url>` reports and is itself a
    valid address: ``ws://…``/``wss://…`` for TCP, ``unix:///path`` for a unix socket,
    ``pipe://name`` for a named pipe. A relay target's ``url`` is only a label,
    ``relay://endpoint/serverId``, and its ``relay`` holds the :class:`RelayTarget` (with the
    daemon key, never shown). ``ws_url`` is the URL of the WebSocket upgrade
    (``ws://localhost/ws`` over a socket, the relay URL through a relay), ``path`` the socket or
    pipe path, and ``password`` the one a ``tcp://…?password=`` address carries.
    """

    kind: TargetKind
    url: str
    ws_url: str
    path: str | None = None
    password: str | None = attrs.field(default=None, repr=False)
    relay: RelayTarget | None = attrs.field(default=None, repr=False)

    def describe(self) -> str:
        """How the daemon is reached, in a few words (no credentials)."""
        if self.relay is not None:
            tls = "TLS" if self.relay.uses_tls else "no TLS"
            return (
                f"through the relay {self.relay.endpoint} ({tls}), end-to-end encrypted, "
                f"to server {self.relay.server_id}"
            )
        if self.kind is TargetKind.UNIX:
            return f"directly, over the unix socket {self.path}"
        if self.kind is TargetKind.PIPE:
            return f"directly, over the named pipe {self.path}"
        return f"directly, WebSocket{' with TLS' if self.ws_url.lower().startswith('wss:') else ''} to {self.ws_url}"

    def unsupported(self) -> str | None:
        """Why this client cannot dial this target on this machine, or ``None`` if it can."""
        if self.kind is TargetKind.PIPE:
            return (
                f"{self.url} is a Windows named pipe, which this client cannot open; "
                "let the daemon listen on TCP as well (PASEO_LISTEN=127.0.0.1:6767) "
                "and connect with host 'localhost:6767'"
            )
        if self.kind is TargetKind.UNIX and not hasattr(socket, "AF_UNIX"):
            return (
                f"{self.url} is a unix socket, which Python cannot open on this platform; "
                "let the daemon listen on TCP and connect with host 'localhost:6767'"
            )
        return None


def _port(text: str, original: str) -> int:
    port = int(text)
    if not 1 <= port <= 65535:
        raise ValueError(f"{original!r}: the port must be between 1 and 65535")
    return port


def tcp_target(host: str, port: int, *, tls: bool = False, password: str | None = None) -> DaemonTarget:
    """The TCP target ``host:port`` (``host`` unbracketed), upgraded at ``/ws``; ``ValueError``
    for a port outside 1-65535."""
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"{host}:{port!r}: the port must be a number between 1 and 65535")
    netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    url = f"{'wss' if tls else 'ws'}://{netloc}/ws"
    return DaemonTarget(TargetKind.TCP, url, url, password=password)


def unix_target(path: str) -> DaemonTarget:
    """The unix socket at ``path`` (``~`` expanded)."""
    path = os.path.expanduser(path)
    return DaemonTarget(TargetKind.UNIX, f"unix://{path}", "ws://localhost/ws", path)


def pipe_target(name: str) -> DaemonTarget:
    """The Windows named pipe ``name`` (a bare name or a full ``\\\\.\\pipe\\…`` path)."""
    short = name[len(PIPE_PREFIX) :] if name.startswith(PIPE_PREFIX) else name
    if not short or "\\" in short or "/" in short:
        raise ValueError(f"{name!r} is not a pipe name (pipe://name or \\\\.\\pipe\\name)")
    return DaemonTarget(TargetKind.PIPE, f"pipe://{short}", "ws://localhost/ws", PIPE_PREFIX + short)


def relay_target(relay: RelayTarget) -> DaemonTarget:
    """The target of a daemon behind a relay (see :class:`RelayTarget`)."""
    return DaemonTarget(TargetKind.RELAY, relay.label, relay.ws_url, relay=relay)


def _parse_tcp_uri(text: str) -> DaemonTarget:
    parts = urlsplit(text)
    if "@" in parts.netloc:
        raise ValueError(f"{_redact(text)!r}: userinfo (user:password@) is not accepted; use ?password=…")
    if parts.path not in ("", "/") or parts.fragment:
        raise ValueError(f"{_redact(text)!r}: a tcp:// address has no path; write tcp://host:port")
    query = parse_qs(parts.query, keep_blank_values=True)
    unknown = sorted(set(query) - _TCP_QUERY_KEYS)
    if unknown:
        raise ValueError(f"{_redact(text)!r}: unknown query key(s) {', '.join(unknown)} (only ssl and password)")
    if any(len(values) > 1 for values in query.values()):
        raise ValueError(f"{_redact(text)!r}: a query key is repeated")
    ssl = query.get("ssl", ["false"])[0]
    if ssl not in ("true", "false"):
        raise ValueError(f"{_redact(text)!r}: ssl must be true or false, got {ssl!r}")
    match = _HOST_PORT.match(parts.netloc)
    if match is None:
        raise ValueError(f"{_redact(text)!r}: expected tcp://host:port")
    host = match.group("v6") or match.group("host")
    password = query.get("password", [""])[0] or None
    return tcp_target(host, _port(match.group("port"), _redact(text)), tls=ssl == "true", password=password)


def _parse_ws_url(raw: str) -> DaemonTarget:
    shown = _redact(raw)
    try:
        parts = urlsplit(raw)
        hostname = parts.hostname
    except ValueError:  # a bad IPv6 literal
        raise ValueError(f"{shown!r} is not a WebSocket URL (ws://host:port/path)") from None
    try:
        port = parts.port
    except ValueError:  # out of range, or not a number
        raise ValueError(f"{shown!r}: the port must be a number between 1 and 65535") from None
    if not hostname:
        raise ValueError(f"{shown!r}: the URL has no host")
    if parts.username or parts.password:
        raise ValueError(f"{shown!r}: userinfo (user:password@) is not accepted; use password=")
    if port is not None and not 1 <= port <= 65535:
        raise ValueError(f"{shown!r}: the port must be a number between 1 and 65535")
    return DaemonTarget(TargetKind.TCP, raw, raw)


def redact_address(text: str) -> str:
    """``text`` as it may be shown: a pairing offer's payload, a ``password=`` value, userinfo
    and any fragment hidden."""
    return _redact(redact_offer(text))


def _redact(text: str) -> str:
    """``text`` with a ``password=`` value, userinfo and any fragment hidden, for error messages."""
    text = re.sub(r"#.*", "#…", text)  # a fragment may be a mistyped pairing offer
    text = re.sub(r"(password=)[^&#]*", r"\1***", text)
    return re.sub(r"(://)[^/@]*@", r"\1***@", text)


def parse_target(text: str, *, listen: bool = False) -> DaemonTarget:
    """Parse one daemon address (see the module docstring); raise ``ValueError`` if it is none.

    ``listen``: the text is a daemon's *listen* address (``PASEO_LISTEN``, pid file, config),
    so a wildcard host (``0.0.0.0``, ``[::]``) means this machine's loopback address.
    """
    raw = text.strip()
    if not raw:
        raise ValueError("empty daemon address")
    if is_offer(raw):
        if listen:
            raise ValueError(f"{redact_offer(raw)!r}: a pairing offer is not a listen address")
        return relay_target(parse_offer(raw))
    lower = raw.lower()
    if lower.startswith(("ws://", "wss://")):
        return _parse_ws_url(raw)
    if lower.startswith("tcp://"):
        return _parse_tcp_uri(raw)
    if lower.startswith("unix://"):
        path = raw[len("unix://") :].strip()
        if not path.startswith(("/", "~")):
            raise ValueError(f"{raw!r}: expected unix:///absolute/path.sock")
        return unix_target(path)
    if lower.startswith("pipe://"):
        return pipe_target(raw[len("pipe://") :].strip())
    if raw.startswith(PIPE_PREFIX):
        return pipe_target(raw)
    if raw.startswith(("/", "~")):
        return unix_target(raw)
    if _WINDOWS_PATH.match(raw):
        raise ValueError(f"{raw!r} is a file path, not a daemon address")
    if raw.isdigit():
        return tcp_target("127.0.0.1", _port(raw, raw))
    if "://" in raw:
        scheme = raw.split("://", 1)[0]
        raise ValueError(
            f"{_redact(raw)!r}: unsupported scheme {scheme!r} "
            "(use ws://, wss://, tcp://, unix://, pipe:// or a pairing-offer link holding #offer=)"
        )
    match = _HOST_PORT.match(raw)
    if match is None:
        raise ValueError(
            f"{raw!r} is not a daemon address: expected host:port, a port, /path/to.sock, unix:///path, "
            "pipe://name, tcp://host:port, ws://host:port/ws or a pairing-offer link"
        )
    host = match.group("v6") or match.group("host")
    if listen:
        host = _WILDCARDS.get(host, host)
    return tcp_target(host, _port(match.group("port"), raw))
