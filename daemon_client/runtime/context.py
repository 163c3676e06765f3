"""``ClientContext``: the one narrow object through which the user-facing API reaches the
machinery (requests, the callback thread, push watches, the connection's facts).

Namespaces and handles hold a context, never the :class:`~daemon_client.Client` or its
private parts. Its methods are thread-safe and run on the calling thread; the blocking ones
(:meth:`request`) always wait with a timeout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from daemon_client.errors import check_reply
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.models import ServerInfo, SessionMessage
from daemon_client.protocol.replies import default_timeout_for
from daemon_client.protocol.requests.spec import RequestSpec
from daemon_client.runtime.connection import Connection
from daemon_client.runtime.dispatch import Dispatcher
from daemon_client.runtime.pushes import PushRegistry
from daemon_client.runtime.requests import CallbackFuture, RequestTable

T = TypeVar("T")

RESULT_GRACE = 1.0
"""Added to a request's timeout when waiting for its future: the request's own deadline fails it first."""


class ClientContext:
    """The machinery of one client, as the API layer may use it."""

    def __init__(
        self,
        *,
        connection: Connection,
        requests: RequestTable,
        dispatcher: Dispatcher,
        pushes: PushRegistry,
        request_timeout: float,
    ) -> None:
        self._connection = connection
        self._requests = requests
        self._dispatcher = dispatcher
        self._pushes = pushes
        self._request_timeout = request_timeout

    # ------------------------------------------------------------------ requests
    def timeout_for(self, request_type: str, timeout: float | None) -> float:
        """``timeout`` if given, else the request family's default (one table for all)."""
        return timeout if timeout is not None else default_timeout_for(request_type, self._request_timeout)

    def request_async(self, message: Mapping[str, Any], timeout: float | None = None) -> Future[dict[str, Any]]:
        """Send a request; a future of its reply payload (see ``Client.request_async``)."""
        return self._connection.submit(message, self.timeout_for(str(message.get("type", "")), timeout))

    def request(self, message: Mapping[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send a request and block until its reply payload, at most its timeout."""
        wait = self.timeout_for(str(message.get("type", "")), timeout)
        if "requestId" not in message:
            message = {**message, "requestId": self._requests.new_request_id()}
        future = self._connection.submit(message, wait)
        try:
            return future.result(wait + RESULT_GRACE)
        except FutureTimeout:
            self._requests.expire(str(message["requestId"]))
            return future.result(0)

    def check_host(self, spec: RequestSpec) -> None:
        """Raise ``UnsupportedByHost`` when the connected host lacks ``spec`` (by its declaration:
        host kinds and feature flag), before anything is sent."""
        info = self._connection.server_info
        spec.check_host(
            self._connection.host_kind,
            info.features if info is not None else None,
            info.version if info is not None else None,
        )

    def call(self, spec: RequestSpec, fields: Mapping[str, Any] | None = None, timeout: float | None = None) -> Any:
        """Send the declared request ``spec`` with ``fields`` and return its reply: gated by
        :meth:`check_host`, checked for a reported error, then read by the declaration's
        parser (the checked payload itself when it has none)."""
        self.check_host(spec)
        message = {"type": spec.type, **fields} if fields else {"type": spec.type}
        payload = check_reply(self.request(message, timeout), spec.type)
        parse = spec.parser()
        return parse(payload) if parse is not None else payload

    def send_message(self, message: Mapping[str, Any]) -> None:
        """Send a session message that has no reply (fire and forget)."""
        self._connection.send_message(message)

    def send_binary(self, data: bytes) -> None:
        """Send one binary frame (terminal input and resize); no reply (fire and forget)."""
        self._connection.send_binary(data)

    def watch(
        self, message_types: Iterable[str], predicate: Callable[[SessionMessage], bool]
    ) -> tuple[Future[SessionMessage], Callable[[], None]]:
        """A future of the first push of ``message_types`` that ``predicate`` accepts, and its canceller."""
        return self._pushes.watch(message_types, predicate)

    # ------------------------------------------------------------------ connection facts
    @property
    def server_info(self) -> ServerInfo | None:
        """The current connection's ``server_info`` (``None`` while not connected)."""
        return self._connection.server_info

    @property
    def host_kind(self) -> HostKind | None:
        """The current connection's host kind (``None`` while not connected)."""
        return self._connection.host_kind

    # ------------------------------------------------------------------ callback thread
    @property
    def dispatcher(self) -> Dispatcher:
        """The callback thread (``post``, ``invoke``, ``check_can_wait``)."""
        return self._dispatcher

    def new_future(self) -> Future[Any]:
        """A future whose done-callbacks run on the callback thread."""
        return CallbackFuture(self._dispatcher.post_or_run_now)
