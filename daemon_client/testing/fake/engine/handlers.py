"""Request handling of the fake daemon: validation, the handler registry, ``RequestContext``, built-ins.

Owns the validation and dispatch of session requests (:func:`dispatch_session_frame`), the
table of known request schemas (required fields, protocol.md sections 4-9), the
:class:`HandlerRegistry` keyed by request type, the reply naming rule (protocol.md 2.2) and
the built-in handlers. Other modules extend every new fake with :func:`register_extension`
or one fake with ``fake.registry.register(...)``; a declared request is installed with
``registry.serve(SPEC, handler, host_kind=..., features=...)``, so its declaration decides which
hosts have it and which fields it requires.

Handlers run on the reader thread of the connection that received the request (a
``fake-daemon-mem-*`` thread in memory, a websockets handler thread on loopback), never
while the fake's lock is held; the registry itself may be changed from any thread.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.requests import CATALOG, RequestSpec, reply_by_rule
from daemon_client.protocol.requests import session as session_requests
from daemon_client.testing.fake.engine.peer import Peer, Session

__all__ = [
    "KNOWN_REQUESTS",
    "BinaryHandler",
    "DaemonHandle",
    "DisconnectHook",
    "EngineCore",
    "Handler",
    "HandlerRegistry",
    "RequestContext",
    "RequestSchema",
    "default_registry",
    "dispatch_session_frame",
    "epoch_ms",
    "invalid_message",
    "register_extension",
    "reply_type_for",
    "zod_issue",
]

_log = logging.getLogger("daemon_client.testing.fake.daemon")

Handler = Callable[["RequestContext"], None]
"""A request handler: answers (or deliberately does not answer) one request."""

DisconnectHook = Callable[[Peer], None]
"""Called on the reader thread after a connection ended and left its session."""

BinaryHandler = Callable[[Peer, bytes], None]
"""Handles a binary frame received after ``hello`` (terminal input); runs on the reader thread."""


class DaemonHandle(Protocol):
    """What the engine knows of the daemon it serves (:class:`FakeDaemon` fits as is).

    Handlers that keep extension state on the daemon narrow :attr:`RequestContext.daemon` to
    their own type; the engine itself only pushes.
    """

    def push(self, message_type: str, payload: Mapping[str, Any], *, connection: Peer | None = None) -> int: ...


class EngineCore(Protocol):
    """What request handling needs of the daemon's core (:class:`~daemon_client.testing.fake.engine.core.DaemonCore`
    fits as is): passed in by the connection, so this module never names the core."""

    registry: HandlerRegistry
    daemon: DaemonHandle

    @property
    def host_kind(self) -> HostKind: ...

    def take_failure(self, request_type: str) -> tuple[str, str] | None: ...

    def is_ignored(self, request_type: str) -> bool: ...


@attrs.frozen
class RequestSchema:
    """What the fake validates before a handler runs (protocol.md 1.8)."""

    request_type: str
    required: tuple[str, ...] = ()
    """Fields besides ``requestId`` that must be present."""
    request_id_optional: bool = False
    """``True`` for requests such as ``cancel_agent_request`` whose ``requestId`` may be absent."""


def _schemas(*entries: RequestSchema) -> dict[str, RequestSchema]:
    return {entry.request_type: entry for entry in entries}


KNOWN_REQUESTS: Mapping[str, RequestSchema] = _schemas(
    *(RequestSchema(spec.type, spec.required, spec.request_id_optional) for spec in CATALOG.values()),
    RequestSchema("agent_permission_response", ("agentId", "response")),
)
"""Request types the fake knows the shape of. A known type without a handler is answered
like an unknown one (``rpc_error`` ``unknown_schema``), as an older daemon would."""


def reply_type_for(request_type: str) -> str:
    """The reply type of a request: its declaration's (``ping`` -> ``pong``, ``archive_agent_request``
    -> ``agent_archived``), else the naming rule of protocol.md 2.2 (``X_request`` ->
    ``X_response``, ``X.request`` -> ``X.response``); ``status`` replies name their type themselves."""
    spec = CATALOG.get(request_type)
    if spec is not None and spec.reply.statuses is None:
        return spec.reply.type
    return reply_by_rule(request_type).type


def epoch_ms() -> int:
    """Wall-clock time in epoch milliseconds, as the daemon's ``serverReceivedAt``."""
    return time.time_ns() // 1_000_000


class HandlerRegistry:
    """Handlers and schemas keyed by request type; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handlers: dict[str, Handler] = {}
        self._schemas: dict[str, RequestSchema] = dict(KNOWN_REQUESTS)
        self._disconnect_hooks: list[DisconnectHook] = []
        self._after_hooks: dict[str, tuple[Handler, ...]] = {}
        self._binary_handler: BinaryHandler | None = None

    def register(
        self,
        request_type: str,
        handler: Handler,
        *,
        required: Iterable[str] | None = None,
        request_id_optional: bool | None = None,
    ) -> None:
        """Install ``handler`` for ``request_type``, replacing any previous one.

        ``required``/``request_id_optional`` change the validation; ``None`` keeps the
        known schema (or, for a type the fake does not know, requires only ``requestId``).
        """
        with self._lock:
            old = self._schemas.get(request_type, RequestSchema(request_type))
            self._schemas[request_type] = RequestSchema(
                request_type,
                tuple(required) if required is not None else old.required,
                old.request_id_optional if request_id_optional is None else request_id_optional,
            )
            self._handlers[request_type] = handler

    def serve(
        self, spec: RequestSpec, handler: Handler, *, host_kind: HostKind, features: Mapping[str, object]
    ) -> bool:
        """Install ``handler`` for the declared request ``spec`` if the declaration says a host
        of ``host_kind`` reporting ``features`` has it (else the type stays unknown, as on such a
        host); validation follows the declaration. Returns whether it was installed."""
        if not spec.exists_on(host_kind, features):
            return False
        self.register(spec.type, handler, required=spec.required, request_id_optional=spec.request_id_optional)
        return True

    def serve_all(
        self, handlers: Iterable[tuple[RequestSpec, Handler]], *, host_kind: HostKind, features: Mapping[str, object]
    ) -> None:
        """:meth:`serve` each ``(spec, handler)`` pair for a host of ``host_kind`` reporting ``features``."""
        for spec, handler in handlers:
            self.serve(spec, handler, host_kind=host_kind, features=features)

    def handler(
        self, request_type: str, *, required: Iterable[str] | None = None, request_id_optional: bool | None = None
    ) -> Callable[[Handler], Handler]:
        """Decorator form of :meth:`register`."""

        def decorate(func: Handler) -> Handler:
            self.register(request_type, func, required=required, request_id_optional=request_id_optional)
            return func

        return decorate

    def unregister(self, request_type: str) -> None:
        """Remove the handler; the type is then answered as unknown (``unknown_schema``)."""
        with self._lock:
            self._handlers.pop(request_type, None)

    def handler_for(self, request_type: str) -> Handler | None:
        """The handler installed for ``request_type`` (``None``: answered as unknown).

        Wrap it to change one step of the default behaviour and keep the rest::

            default = fake.registry.handler_for("fetch_agents_request")
            fake.on_request("fetch_agents_request", lambda ctx: (before(ctx), default(ctx)))
        """
        with self._lock:
            return self._handlers.get(request_type)

    def add_after_hook(self, request_type: str, hook: Handler) -> Callable[[], None]:
        """Run ``hook(ctx)`` after the handler of every ``request_type`` request returned (see
        :meth:`FakeDaemon.after_request`); returns a function that removes it."""
        with self._lock:
            self._after_hooks[request_type] = (*self._after_hooks.get(request_type, ()), hook)

        def remove() -> None:
            with self._lock:
                hooks = tuple(item for item in self._after_hooks.get(request_type, ()) if item is not hook)
                if hooks:
                    self._after_hooks[request_type] = hooks
                else:
                    self._after_hooks.pop(request_type, None)

        return remove

    def after_hooks(self, request_type: str) -> tuple[Handler, ...]:
        """The after hooks of ``request_type``, in the order they were added."""
        with self._lock:
            return self._after_hooks.get(request_type, ())

    def schema_for(self, request_type: str) -> RequestSchema | None:
        """How requests of ``request_type`` are validated (``None``: a type the fake does not know)."""
        with self._lock:
            return self._schemas.get(request_type)

    @property
    def request_types(self) -> frozenset[str]:
        """Types that currently have a handler."""
        with self._lock:
            return frozenset(self._handlers)

    def add_disconnect_hook(self, hook: DisconnectHook) -> None:
        """Run ``hook(connection)`` whenever a connection ends (e.g. to release what it owned)."""
        with self._lock:
            self._disconnect_hooks.append(hook)

    @property
    def disconnect_hooks(self) -> tuple[DisconnectHook, ...]:
        """The disconnect hooks, in the order they were added."""
        with self._lock:
            return tuple(self._disconnect_hooks)

    def set_binary_handler(self, handler: BinaryHandler | None) -> None:
        """Handle binary frames received after ``hello`` (without one they are recorded and ignored)."""
        with self._lock:
            self._binary_handler = handler

    @property
    def binary_handler(self) -> BinaryHandler | None:
        with self._lock:
            return self._binary_handler


@attrs.define(eq=False)
class RequestContext:
    """One request being handled; passed to every :data:`Handler`."""

    message: dict[str, Any]
    """The inner session message, fields flat beside ``type`` (as the client sent it)."""
    request_type: str
    request_id: str | None
    connection: Peer
    core: EngineCore
    """The core of the daemon serving the request (its registry, fault injection and daemon)."""
    replied: bool = False

    @property
    def daemon(self) -> DaemonHandle:
        """The :class:`FakeDaemon` serving this request (for extension state)."""
        return self.core.daemon

    @property
    def session(self) -> Session | None:
        return self.connection.session

    @property
    def host_kind(self) -> HostKind:
        return self.core.host_kind

    def reply(self, payload: Mapping[str, Any], type: str | None = None) -> None:
        """Answer with a session message; ``requestId`` is added to the payload.

        The type defaults to the naming rule of protocol.md 2.2. Capable hosts send it to the
        requesting socket only, legacy hosts to every socket of the session.
        """
        body: dict[str, Any] = dict(payload)
        if self.request_id is not None and "requestId" not in body:
            body = {"requestId": self.request_id, **body}
        self.replied = True
        self.connection.send_session(type or reply_type_for(self.request_type), body)

    def rpc_error(self, error: str, code: str | None = None) -> None:
        """Answer with ``rpc_error {requestId, requestType, error, code?}``."""
        payload: dict[str, Any] = {"requestType": self.request_type, "error": error}
        if code is not None:
            payload["code"] = code
        self.reply(payload, type="rpc_error")

    def send(self, message_type: str, payload: Mapping[str, Any]) -> None:
        """Send a non-reply session message with the same routing as :meth:`reply`."""
        self.connection.send_session(message_type, dict(payload))


def _handle_session_ping(ctx: RequestContext) -> None:
    received_at = epoch_ms()
    payload: dict[str, Any] = {}
    if "clientSentAt" in ctx.message:
        payload["clientSentAt"] = ctx.message["clientSentAt"]
    payload["serverReceivedAt"] = received_at
    payload["serverSentAt"] = max(received_at, epoch_ms())
    ctx.reply(payload, type="pong")


def install_builtin_handlers(registry: HandlerRegistry, host_kind: HostKind, features: Mapping[str, object]) -> None:
    """The handlers every fake starts with: the session ``ping``."""
    registry.serve(session_requests.PING, _handle_session_ping, host_kind=host_kind, features=features)


def zod_issue(path: Sequence[str], expected: str) -> dict[str, Any]:
    """One validation issue in the shape the daemon prints (zod, transcript 09 L9)."""
    return {"code": "invalid_type", "expected": expected, "received": "undefined", "path": list(path),
            "message": "Required"}  # fmt: skip


def invalid_message(issues: list[dict[str, Any]]) -> str:
    return "Invalid message: " + json.dumps(issues, indent=2)


def iso_now() -> str:
    ms = epoch_ms()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def dispatch_session_frame(connection: Peer, core: EngineCore, frame: Mapping[str, Any]) -> None:
    """Validate a ``session`` frame (after hello) and run its handler (protocol.md 1.8, transcript 09).

    Order: malformed envelope, injected failure, ignored type, unknown type or missing field
    (``rpc_error`` ``unknown_schema`` with a ``requestId``, else a ``status`` error), handler.
    """
    message = frame.get("message")
    if not isinstance(message, dict):
        connection.send_status_error(invalid_message([zod_issue(["message"], "object")]))
        return
    message_type = message.get("type")
    raw_id = message.get("requestId")
    request_id = raw_id if isinstance(raw_id, str) else None
    if not isinstance(message_type, str):
        if request_id is not None:
            connection.send_rpc_error(request_id, None, "Unknown request schema", "unknown_schema", to_session=False)
        else:
            connection.send_status_error(invalid_message([zod_issue(["message", "type"], "string")]))
        return
    failure = core.take_failure(message_type) if request_id is not None else None
    if request_id is not None and failure is not None:
        connection.send_rpc_error(request_id, message_type, failure[0], failure[1])
        return
    if core.is_ignored(message_type):
        return
    schema = core.registry.schema_for(message_type)
    handler = core.registry.handler_for(message_type)
    missing = [] if schema is None else [name for name in schema.required if name not in message]
    if request_id is None and (schema is None or not schema.request_id_optional):
        missing.insert(0, "requestId")
    if missing or handler is None or schema is None:
        if request_id is not None:
            error, code = "Unknown request schema", "unknown_schema"
            connection.send_rpc_error(request_id, message_type, error, code, to_session=False)
            return
        unknown = {"code": "invalid_union_discriminator", "path": ["message", "type"],
                   "message": f"Unknown request type {message_type!r}"}  # fmt: skip
        issues = [zod_issue(["message", name], "string") for name in missing] or [unknown]
        connection.send_status_error(invalid_message(issues))
        return
    ctx = RequestContext(message, message_type, request_id, connection, core)
    _run_handler(handler, ctx, answer_failure=True)
    for hook in core.registry.after_hooks(message_type):
        _run_handler(hook, ctx, answer_failure=False)


def _run_handler(handler: Handler, ctx: RequestContext, *, answer_failure: bool) -> None:
    """Run a handler or an after hook; a failure is reported as the daemon reports one (an
    ``rpc_error`` answers the request only when a handler failed, not an after hook)."""
    try:
        handler(ctx)
    except Exception as exc:  # noqa: BLE001 - a failing handler is reported as the daemon does
        _log.debug("fake daemon: handler for %s failed", ctx.request_type, exc_info=True)
        detail = f"Request failed: {str(exc) or type(exc).__name__}"
        if ctx.request_id is not None and answer_failure:
            ctx.connection.send_rpc_error(ctx.request_id, ctx.request_type, detail, "handler_error")
        log = {"id": str(uuid.uuid4()), "timestamp": iso_now(), "type": "error", "content": detail}
        ctx.connection.send_session("activity_log", log)


_EXTENSIONS_LOCK = threading.Lock()
_EXTENSIONS: list[Callable[[HandlerRegistry], None]] = []


def register_extension(installer: Callable[[HandlerRegistry], None]) -> Callable[[HandlerRegistry], None]:
    """Add ``installer`` to the set applied to the registry of every fake created afterwards.

    Usable as a decorator by modules that add agents, timelines, workspaces and so on.
    """
    with _EXTENSIONS_LOCK:
        if installer not in _EXTENSIONS:
            _EXTENSIONS.append(installer)
    return installer


def default_registry(host_kind: HostKind, features: Mapping[str, object]) -> HandlerRegistry:
    """A new registry with the built-in handlers (as a host of ``host_kind`` reporting
    ``features`` has them) and every registered extension installed."""
    registry = HandlerRegistry()
    install_builtin_handlers(registry, host_kind, features)
    with _EXTENSIONS_LOCK:
        installers = list(_EXTENSIONS)
    for install in installers:
        install(registry)
    return registry
