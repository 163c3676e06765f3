"""What one request is, declared once (protocol.md 2.2, 2.6, 3 and 12.1): :class:`RequestSpec`.

A declaration names the wire type, the reply that answers it, its timeout class, the parser
of its reply, the ``server_info.features`` flag it needs and the host kinds it exists on. The
API, the request path, the fake daemon's registrations and the docs' request table all read
it. Pure values, built at import and never changed; read from any thread.
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Callable, Mapping
from typing import Any

from daemon_client._values import Record
from daemon_client.errors import NotConnected, UnsupportedByHost
from daemon_client.protocol.hosts import HostKind

__all__ = [
    "ALL_HOSTS",
    "NEWER_HOSTS",
    "FeatureGate",
    "ReplyMatcher",
    "RequestSpec",
    "TimeoutClass",
    "reply_by_rule",
]


class ReplyMatcher(Record):
    """The reply a request waits for: a message type, and for ``status`` replies the statuses.

    A plain slotted class, never changed once built.
    """

    __slots__ = ("statuses", "type")

    type: str
    statuses: frozenset[str] | None

    def __init__(self, type: str, statuses: frozenset[str] | None = None) -> None:
        self.type = type
        self.statuses = statuses

    def matches(self, message_type: str, payload: dict[str, object]) -> bool:
        if message_type != self.type:
            return False
        if self.statuses is None:
            return True
        status = payload.get("status")
        return isinstance(status, str) and status in self.statuses


def reply_by_rule(request_type: str) -> ReplyMatcher:
    """The naming rule of protocol.md 2.2: ``X_request`` -> ``X_response``, ``X.request`` ->
    ``X.response``, ``a/b`` -> ``a/b/response``, anything else -> ``X_response``."""
    if request_type.endswith("_request"):
        return ReplyMatcher(request_type[: -len("_request")] + "_response")
    if request_type.endswith(".request"):
        return ReplyMatcher(request_type[: -len(".request")] + ".response")
    if "/" in request_type:
        return ReplyMatcher(request_type + "/response")
    return ReplyMatcher(request_type + "_response")


class TimeoutClass(enum.Enum):
    """The default timeout families of protocol.md 2.6, in seconds."""

    LIVENESS = 5.0
    TERMINAL = 10.0
    READ = 15.0
    SLOW_READ = 30.0
    WORK = 60.0
    PROVIDER_LISTING = 90.0
    LONG_WORK = 120.0
    DIAGNOSTIC = 180.0

    @property
    def seconds(self) -> float:
        return float(self.value)


ALL_HOSTS: frozenset[HostKind] = frozenset(HostKind)
NEWER_HOSTS: frozenset[HostKind] = frozenset({HostKind.CAPABLE, HostKind.SELECTIVE})


class FeatureGate(Record):
    """A ``server_info.features`` flag a request needs, what it lets users do, and the first
    Paseo version that has it (for the update-host message)."""

    __slots__ = ("flag", "version", "what")

    flag: str
    what: str
    version: str

    def __init__(self, flag: str, what: str, version: str) -> None:
        self.flag = flag
        self.what = what
        self.version = version


class RequestSpec(Record):
    """One request, declared once. Slotted and never changed once built.

    ``timeout`` ``None`` means the client's ``request_timeout``; ``parse`` names
    (``"module:function"``) the function that turns a checked reply payload into the API's
    result (``None``: the API method reads the payload itself), imported on first use so that
    declaring a request loads none of its models;
    ``required`` lists the fields besides ``requestId`` the daemon insists on;
    ``api`` names the public calls that send it, separated by ``", "`` (for the request table).
    """

    __slots__ = (
        "_gated",
        "_parser",
        "api",
        "family",
        "feature",
        "hosts",
        "parse",
        "reply",
        "request_id_optional",
        "required",
        "timeout",
        "type",
    )

    _unshown = frozenset({"_gated", "_parser"})

    _gated: bool
    _parser: Callable[[dict[str, Any]], Any] | None
    type: str
    family: str
    reply: ReplyMatcher
    timeout: TimeoutClass | None
    parse: str | None
    feature: FeatureGate | None
    hosts: frozenset[HostKind]
    required: tuple[str, ...]
    request_id_optional: bool
    api: str

    def __init__(
        self,
        type: str,
        family: str,
        *,
        reply: ReplyMatcher | None = None,
        timeout: TimeoutClass | None = None,
        parse: str | None = None,
        feature: FeatureGate | None = None,
        hosts: frozenset[HostKind] = ALL_HOSTS,
        required: tuple[str, ...] = (),
        request_id_optional: bool = False,
        api: str = "",
    ) -> None:
        self.type = type
        self.family = family
        self.reply = reply if reply is not None else reply_by_rule(type)
        self.timeout = timeout
        self.parse = parse
        self.feature = feature
        self.hosts = hosts
        self.required = required
        self.request_id_optional = request_id_optional
        self.api = api
        self._gated = feature is not None or hosts != ALL_HOSTS
        self._parser = None

    def parser(self) -> Callable[[dict[str, Any]], Any] | None:
        """The reply parser :attr:`parse` names, imported once (``None``: no parser)."""
        parser = self._parser
        if parser is None and self.parse is not None:
            module, _, name = self.parse.partition(":")
            parser = self._parser = getattr(importlib.import_module(module), name)
        return parser

    def message(self, **fields: Any) -> dict[str, Any]:
        """The session message of this request: ``type`` and ``fields`` (``None`` values left out)."""
        return {"type": self.type, **{key: value for key, value in fields.items() if value is not None}}

    def exists_on(self, kind: HostKind, features: Mapping[str, object]) -> bool:
        """Whether a host of ``kind`` reporting ``features`` answers this request."""
        if kind not in self.hosts:
            return False
        return self.feature is None or features.get(self.feature.flag) is True

    def check_host(self, kind: HostKind | None, features: Mapping[str, object] | None, version: str | None) -> None:
        """Raise :class:`UnsupportedByHost` when the connected host lacks this request (its
        kind is not among :attr:`hosts`, or it does not report :attr:`feature`), before
        anything is sent; :class:`NotConnected` when there is no connection to ask and the
        request is gated at all."""
        if not self._gated:
            return
        what = self.feature.what if self.feature is not None else f"send {self.type}"
        if features is None:
            raise NotConnected(f"not connected: cannot tell whether the daemon supports {what}")
        running = f"Paseo {version}" if version else "this daemon"
        gate = self.feature
        if kind is not None and kind not in self.hosts:
            kinds = ", ".join(sorted(host.value for host in self.hosts))
            raise UnsupportedByHost(
                f"Update the host to {what}: {self.type} exists on {kinds} hosts only; "
                f"{running} is a {kind.value} host.",
                feature=gate.flag if gate is not None else None,
                version=gate.version if gate is not None else None,
            )
        if gate is not None and features.get(gate.flag) is not True:
            raise UnsupportedByHost(
                f"Update the host to {what}: this needs features.{gate.flag} (Paseo {gate.version} or newer); "
                f"{running} does not report it.",
                feature=gate.flag,
                version=gate.version,
            )
