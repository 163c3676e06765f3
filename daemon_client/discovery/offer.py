"""Relay pairing offers and relay targets (protocol-relay.md sections 2 and 3).

A daemon that is not reachable directly is reached through a Paseo relay: the pairing offer
(``https://app.paseo.sh/#offer=<base64url JSON>``, printed by ``paseo daemon pair``) names the
relay endpoint, the daemon's ``serverId`` and its X25519 public key. :func:`parse_offer` turns
the link into a :class:`RelayTarget`; :attr:`RelayTarget.ws_url` is the relay URL this client
dials. The offer is a credential: whoever holds it can reach the daemon. Nothing here puts the
daemon key or the offer text in a repr, an error message or a log line (:func:`redact_offer`
hides the payload of a link). Pure functions and frozen values; any thread may call them.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any
from urllib.parse import quote

import attrs

from daemon_client import _nesting as nesting

OFFER_MARKER = "#offer="
HOSTED_RELAY = "relay.paseo.sh:443"
"""The endpoint of Paseo's hosted relay: the only one dialled with TLS unless told otherwise."""
DEFAULT_APP_BASE_URL = "https://app.paseo.sh"
KEY_BYTES = 32
_ENDPOINT = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.%\w]+)\]|(?P<host>[^\s/\\@\[\]?#:]+)):(?P<port>\d{1,5})$")


def is_offer(text: str) -> bool:
    """True when ``text`` carries a pairing offer (the literal ``#offer=`` anywhere in it)."""
    return OFFER_MARKER in text


def redact_offer(text: str) -> str:
    """``text`` with the payload of a pairing offer replaced by ``<redacted>`` (for messages)."""
    index = text.find(OFFER_MARKER)
    if index < 0:
        return text
    return f"{text[:index].strip()}{OFFER_MARKER}<redacted>"


def decode_key(value: str | bytes) -> bytes:
    """A daemon public key as its 32 raw bytes: ``bytes`` as given, a ``str`` as base64
    (standard or URL-safe, padding optional). Raises ``ValueError`` without quoting the key."""
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
    elif isinstance(value, str):
        raw = _b64decode(value.strip(), "the daemon public key")
    else:
        raise TypeError(f"the daemon public key must be str (base64) or bytes, not {type(value).__name__}")
    if len(raw) != KEY_BYTES:
        raise ValueError(f"the daemon public key must be {KEY_BYTES} bytes, got {len(raw)}")
    return raw


def _b64decode(text: str, what: str) -> bytes:
    normal = text.replace("-", "+").replace("_", "/").rstrip("=")
    try:
        return base64.b64decode(normal + "=" * (-len(normal) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{what} is not base64") from None


def normalize_endpoint(endpoint: str) -> str:
    """``host:port`` (``[v6]:port``) with a lower-case host; ``ValueError`` if it is none."""
    if not isinstance(endpoint, str):
        raise TypeError(f"the relay endpoint must be a str, not {type(endpoint).__name__}")
    match = _ENDPOINT.match(endpoint.strip())
    if match is None:
        raise ValueError(f"the relay endpoint {endpoint.strip()!r} is not host:port (e.g. relay.paseo.sh:443)")
    port = int(match.group("port"))
    if not 1 <= port <= 65535:
        raise ValueError(f"the relay endpoint {endpoint.strip()!r}: the port must be between 1 and 65535")
    if match.group("v6"):
        return f"[{match.group('v6').lower()}]:{port}"
    return f"{match.group('host').lower()}:{port}"


def _server_id(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("the server id must be a non-empty string")
    return value


@attrs.frozen
class RelayTarget:
    """A daemon reached through a Paseo relay, end-to-end encrypted.

    ``endpoint`` is the relay's ``host:port``, ``server_id`` the daemon's ``serverId`` and
    ``daemon_public_key`` its X25519 public key (32 bytes, or their base64 as in the offer).
    ``tls``: ``None`` dials the hosted relay (``relay.paseo.sh:443``) with TLS and every other
    endpoint without, as Paseo's daemon does; ``True``/``False`` forces it. Pass it wherever an
    address is accepted (``Client(RelayTarget(...))``); a pairing-offer link is parsed into one.
    The key is a credential and never appears in the repr.
    """

    endpoint: str = attrs.field(converter=normalize_endpoint)
    server_id: str = attrs.field(converter=_server_id)
    daemon_public_key: bytes = attrs.field(converter=decode_key, repr=False)
    tls: bool | None = attrs.field(default=None, kw_only=False)

    def __attrs_post_init__(self) -> None:
        if self.tls is not None and not isinstance(self.tls, bool):
            raise TypeError(f"tls must be None, True or False, not {self.tls!r}")

    @property
    def uses_tls(self) -> bool:
        """Whether the relay is dialled with ``wss://`` (see ``tls``)."""
        return self.endpoint == HOSTED_RELAY if self.tls is None else self.tls

    @property
    def ws_url(self) -> str:
        """The relay URL of a client socket: ``{ws|wss}://endpoint/ws?serverId=…&role=client&v=2``."""
        scheme = "wss" if self.uses_tls else "ws"
        return f"{scheme}://{self.endpoint}/ws?serverId={quote(self.server_id, safe='')}&role=client&v=2"

    @property
    def label(self) -> str:
        """How this target is shown (``relay://endpoint/serverId``): no key, safe to log."""
        return f"relay://{self.endpoint}/{quote(self.server_id, safe='')}"

    def offer_link(self, base_url: str = DEFAULT_APP_BASE_URL) -> str:
        """The pairing-offer link of this target (a credential: hand it only to who may connect)."""
        relay: dict[str, Any] = {"endpoint": self.endpoint}
        if self.tls is not None:
            relay["useTls"] = self.tls
        payload = {
            "v": 2,
            "serverId": self.server_id,
            "daemonPublicKeyB64": base64.b64encode(self.daemon_public_key).decode("ascii"),
            "relay": relay,
        }
        data = json.dumps(payload, separators=(",", ":")).encode("utf-8")
        return f"{base_url.rstrip('/')}/{OFFER_MARKER}{base64.urlsafe_b64encode(data).decode('ascii').rstrip('=')}"


def parse_offer(text: str) -> RelayTarget:
    """The :class:`RelayTarget` of a pairing-offer link (or of anything holding ``#offer=…``).

    Accepts base64url or standard base64, with or without padding; the offer must be version
    2. A ``relay.useTls`` boolean (written by newer daemons) decides TLS. Raises ``ValueError``
    naming what is wrong, never quoting the offer.
    """
    index = text.find(OFFER_MARKER)
    if index < 0:
        raise ValueError("not a pairing offer: no '#offer=' in it")
    encoded = text[index + len(OFFER_MARKER) :].strip()
    if not encoded:
        raise ValueError("the pairing offer is empty after '#offer='")
    raw = _b64decode(encoded, "the pairing offer (was the link cut short?)")
    try:
        payload: Any = nesting.loads(raw.decode("utf-8"), "the pairing offer")
    except nesting.NestingTooDeep:
        raise
    except (UnicodeDecodeError, ValueError):
        raise ValueError("the pairing offer does not decode to JSON (was the link cut short?)") from None
    if not isinstance(payload, dict):
        raise ValueError("the pairing offer is not a JSON object")
    version = payload.get("v")
    if version != 2 or isinstance(version, bool):
        shown = f" (got v={version})" if isinstance(version, int) and not isinstance(version, bool) else ""
        raise ValueError(f"unsupported pairing offer version{shown}: this client reads version 2")
    relay = payload.get("relay")
    endpoint = relay.get("endpoint") if isinstance(relay, dict) else None
    if not isinstance(endpoint, str) or not endpoint.strip():
        raise ValueError("the pairing offer names no relay endpoint")
    use_tls = relay.get("useTls") if isinstance(relay, dict) else None
    if use_tls is not None and not isinstance(use_tls, bool):
        raise ValueError("the pairing offer's relay.useTls is not a boolean")
    key = payload.get("daemonPublicKeyB64")
    if not isinstance(key, str) or not key.strip():
        raise ValueError("the pairing offer has no daemonPublicKeyB64")
    try:
        return RelayTarget(endpoint, _server_id(payload.get("serverId")), key, use_tls)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"invalid pairing offer: {exc}") from None
