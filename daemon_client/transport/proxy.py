"""HTTP proxies: which connection goes through one, and the CONNECT tunnel through it.

This module owns three things:

* **The setting** (:func:`proxy_policy`): ``Client(proxy=None)`` (the default) reads
  ``https_proxy`` (for ``wss://``) or ``http_proxy`` (for ``ws://``), the lower-case form first,
  then the upper-case one; ``proxy="http://[user:password@]host[:port]"`` uses that proxy for
  both and ignores those variables; ``proxy=False`` never uses a proxy. ``no_proxy``/``NO_PROXY``
  is honoured in both of the first two cases. Only ``http://`` proxies are spoken to (a URL
  without a scheme is one); another scheme is refused with ``ValueError`` when given as
  ``proxy=``, and ignored with a WARNING when it comes from the environment. As in Python's
  ``urllib``, ``HTTP_PROXY`` is not read in a CGI request (``REQUEST_METHOD`` set).
* **The bypass rules** (:class:`NoProxy`): ``no_proxy`` entries separated by commas: ``*``
  (every host), a host name (that host and every name under it: ``example.com`` and
  ``.example.com`` both match ``api.example.com``), an IP address or network
  (``10.0.0.0/8``, ``::1``), each optionally with ``:port``. Loopback hosts and unix sockets
  never go through a proxy.
* **The tunnel** (:func:`open_tunnel`): ``CONNECT host:port`` on a socket to the proxy, with
  ``Proxy-Authorization: Basic`` when the proxy URL carries credentials, within the connect
  deadline; any answer but 2xx fails with :class:`ProxyError` naming the proxy (never its
  credentials) and the status. TLS to the daemon and the WebSocket upgrade then run inside the
  tunnel (:mod:`daemon_client.transport.upgrade`).

Credentials of a proxy URL are kept only in the ``Proxy-Authorization`` value; they are never
logged and never part of a repr or an error message. The setting is read on the thread that
builds the ``Client``; the tunnel is opened on the thread that connects (the reader thread).
"""

from __future__ import annotations

import base64
import ipaddress
import logging
import os
import socket
from collections.abc import Callable, Mapping
from typing import Literal
from urllib.parse import unquote, urlsplit

from daemon_client._values import Record
from daemon_client.transport.base import TransportError
from daemon_client.transport.handshake_policy import (
    HandshakeLimits,
    HandshakeRefused,
    HeadReader,
    Target,
    is_loopback_host,
)

ProxySetting = str | Literal[False] | None
"""``Client(proxy=...)``: a proxy URL, ``False`` for none, ``None`` for the environment's."""

_READ_SIZE = 4096
_ENV = {"ws": "http_proxy", "wss": "https_proxy"}
_log = logging.getLogger("daemon_client.transport.proxy")


class ProxyError(TransportError):
    """The proxy could not be reached, or refused the tunnel (the message names it, without credentials)."""


class Proxy(Record):
    """One ``http://`` proxy: where it is and, when its URL had credentials, the
    ``Proxy-Authorization`` value (never shown)."""

    __slots__ = ("authorization", "host", "port")
    _unshown = frozenset({"authorization"})

    host: str
    port: int
    authorization: str | None

    def __init__(self, host: str, port: int, authorization: str | None = None) -> None:
        self.host = host
        self.port = port
        self.authorization = authorization

    @property
    def display(self) -> str:
        """``http://host:port``: how the proxy is named in logs and errors."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def parse_proxy(url: str, *, source: str = "proxy=") -> Proxy:
    """Read a proxy URL; ``ValueError`` (naming ``source``, never the credentials) when unusable."""
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    scheme = text.split("://", 1)[0].lower()
    if scheme != "http":
        raise ValueError(
            f"the proxy of {source} is a {scheme}:// proxy; only http:// proxies (HTTP CONNECT) are supported"
        )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        expected = "http://[user:password@]host[:port]"
        raise ValueError(f"the proxy URL of {source} is malformed (expected {expected})") from None
    if not parts.hostname:
        raise ValueError(f"the proxy URL of {source} has no host")
    authorization = None
    if parts.username is not None or parts.password is not None:
        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    return Proxy(parts.hostname, port if port is not None else 80, authorization)


class NoProxy:
    """The ``no_proxy`` rules; see the module docstring. Pure, any thread."""

    def __init__(self, value: str = "") -> None:
        self._everything = False
        self._rules: list[tuple[str | ipaddress.IPv4Network | ipaddress.IPv6Network, int | None]] = []
        for raw in value.replace(" ", ",").split(","):
            entry = raw.strip().lower()
            if not entry:
                continue
            if entry == "*":
                self._everything = True
                continue
            self._rules.append(_rule(entry))

    def __repr__(self) -> str:
        return f"<NoProxy {'*' if self._everything else len(self._rules)} rules>"

    def bypasses(self, host: str, port: int) -> bool:
        """True when a connection to ``host:port`` must not use the proxy."""
        if self._everything:
            return True
        name = host.strip("[]").rstrip(".").lower()
        try:
            address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(name)
        except ValueError:
            address = None
        for match, rule_port in self._rules:
            if rule_port is not None and rule_port != port:
                continue
            if isinstance(match, str):
                if address is None and (name == match or name.endswith("." + match)):
                    return True
            elif address is not None and address.version == match.version and address in match:
                return True
        return False


def _rule(entry: str) -> tuple[str | ipaddress.IPv4Network | ipaddress.IPv6Network, int | None]:
    """One ``no_proxy`` entry: a host-name suffix or a network, and an optional port."""
    port: int | None = None
    body = entry
    if body.startswith("["):  # [v6]:port
        inside, _, after = body[1:].partition("]")
        body = inside
        if after.startswith(":") and after[1:].isdigit():
            port = int(after[1:])
    elif body.count(":") == 1:  # host:port (a bare IPv6 address has more colons)
        host, _, number = body.partition(":")
        if number.isdigit():
            body, port = host, int(number)
    try:
        return ipaddress.ip_network(body, strict=False), port
    except ValueError:
        return body.lstrip(".").lstrip("*").lstrip(".").rstrip("."), port


class ProxyPolicy:
    """Which proxy, if any, a connection uses: built once per ``Client``, asked per connection.

    ``proxies`` maps a scheme (``"ws"``, ``"wss"``) to its proxy.
    """

    def __init__(self, proxies: Mapping[str, Proxy], no_proxy: NoProxy) -> None:
        self._proxies = dict(proxies)
        self._no_proxy = no_proxy

    def __repr__(self) -> str:
        shown = ", ".join(f"{scheme}={proxy.display}" for scheme, proxy in sorted(self._proxies.items()))
        return f"<ProxyPolicy {shown or 'direct'}>"

    def for_target(self, target: Target) -> Proxy | None:
        """The proxy to reach ``target`` through, or ``None`` to connect directly."""
        proxy = self._proxies.get(target.scheme)
        if proxy is None or is_loopback_host(target.host) or self._no_proxy.bypasses(target.host, target.port):
            return None
        return proxy


def proxy_policy(setting: ProxySetting, environ: Mapping[str, str] | None = None) -> ProxyPolicy | None:
    """The policy of ``Client(proxy=setting)``; ``None`` when no connection can use a proxy.

    Raises ``ValueError`` for a ``setting`` that is not a usable proxy URL, ``False`` or ``None``.
    """
    env = os.environ if environ is None else environ
    if setting is False:
        return None
    if isinstance(setting, str):
        if not setting.strip():
            raise ValueError("proxy= must be a proxy URL (http://host:port), False for none, or None")
        proxy = parse_proxy(setting)
        return ProxyPolicy({"ws": proxy, "wss": proxy}, NoProxy(_env(env, "no_proxy") or ""))
    if setting is not None:
        raise ValueError(
            f"proxy= must be a proxy URL (http://host:port), False for none, or None, not {type(setting).__name__}"
        )
    proxies: dict[str, Proxy] = {}
    for scheme, name in _ENV.items():
        value = _env(env, name, cgi_safe=name == "http_proxy")
        if not value:
            continue
        try:
            proxies[scheme] = parse_proxy(value, source=name)
        except ValueError as exc:
            _log.warning("%s is ignored: %s", name, exc)
    if not proxies:
        return None
    return ProxyPolicy(proxies, NoProxy(_env(env, "no_proxy") or ""))


def _env(env: Mapping[str, str], name: str, *, cgi_safe: bool = False) -> str | None:
    """The lower-case variable, else the upper-case one (not ``HTTP_PROXY`` in a CGI request)."""
    value = env.get(name)
    if value is None and not (cgi_safe and "REQUEST_METHOD" in env):
        value = env.get(name.upper())
    return value.strip() if value is not None else None


def open_tunnel(
    sock: socket.socket,
    proxy: Proxy,
    target: Target,
    remaining: Callable[[], float],
    limits: HandshakeLimits | None = None,
) -> None:
    """Ask ``proxy`` (``sock`` is connected to it) for a tunnel to ``target``; return once it is open.

    ``remaining()`` gives the seconds left before the connect deadline (raising
    ``TimeoutError`` once none are). Raises :class:`ProxyError` for an answer but 2xx and
    ``OSError`` when the socket fails.
    """
    authority = f"[{target.host}]:{target.port}" if ":" in target.host else f"{target.host}:{target.port}"
    lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}"]
    if proxy.authorization is not None:
        lines.append(f"Proxy-Authorization: {proxy.authorization}")
    sock.settimeout(remaining())
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("utf-8"))
    reader = HeadReader(limits)
    while True:
        sock.settimeout(remaining())
        chunk = sock.recv(_READ_SIZE)
        if not chunk:
            raise ProxyError(f"the proxy {proxy.display} closed the connection before answering CONNECT {authority}")
        try:
            answer = reader.feed(chunk)
        except HandshakeRefused:
            raise ProxyError(f"the proxy {proxy.display} gave a malformed answer to CONNECT {authority}") from None
        if answer is not None:
            break
    if not 200 <= answer.status < 300:
        reason = f" {answer.reason[:80]}" if answer.reason.isprintable() and answer.reason else ""
        hint = (
            ": check the user and password of the proxy URL"
            if answer.status == 407 and proxy.authorization is not None
            else ": the proxy wants credentials (http://user:password@host:port)"
            if answer.status == 407
            else ""
        )
        raise ProxyError(f"the proxy {proxy.display} refused CONNECT {authority} (HTTP {answer.status}{reason}){hint}")
    if reader.rest:
        raise ProxyError(f"the proxy {proxy.display} sent data before the tunnel to {authority} was used")
