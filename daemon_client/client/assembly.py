"""The layers of one :class:`~daemon_client.client.composition.Client`, built and wired when
the client is constructed.

Part of the composition root: :func:`assemble` checks the options the layers are given, plans
the dialing (:mod:`daemon_client.client.dialing`), and builds the callback dispatcher, the
timer thread, the request table, the push registry, the wire trace, the connection, the request
context, the namespaces and the connection switches, each wired to the others. This module
(and the connection machinery, the codec, the transport and websocket-client behind it) is
imported when the first client is built, not when ``daemon_client.Client`` is imported: a
program that only names the class, or a command that only prints its help, pays nothing for
it. Runs on the constructing thread; it starts no thread except the trace's writer (last).
"""

from __future__ import annotations

import functools
import logging
import os
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from daemon_client._values import Record
from daemon_client.client.credentials import check_auth_header
from daemon_client.client.dialing import (
    PROBE_TIMEOUT,
    Dialing,
    connect_limit,
    plan_dialing,
    probe_lazily,
    traced_routes,
)
from daemon_client.client.namespaces import Namespaces
from daemon_client.client.switches import ConnectionSwitches
from daemon_client.config import TRACE_ENV, Heartbeat, ReconnectPolicy, check_app_version
from daemon_client.runtime.affinity import check_cpu
from daemon_client.runtime.connection import Connection, ConnectionOptions
from daemon_client.runtime.context import ClientContext
from daemon_client.runtime.dispatch import CallbackExecutor, Dispatcher, next_name
from daemon_client.runtime.flow_limits import FlowControl
from daemon_client.runtime.pushes import PushRegistry
from daemon_client.runtime.requests import RequestTable
from daemon_client.runtime.timers import TimerThread
from daemon_client.transport.base import Transport
from daemon_client.transport.proxy import ProxySetting, proxy_policy
from daemon_client.transport.websocket import WebSocketTransport

if TYPE_CHECKING:
    import random
    import ssl

    from daemon_client.discovery import RelayTarget
    from daemon_client.discovery.profiles import Host
    from daemon_client.transport.trace import TraceTarget, WireTrace


class ClientParts(Record):
    """What :func:`assemble` built for one client."""

    __slots__ = ("client_id", "connect_limit", "connection", "context", "dialing", "dispatcher", "log", "name",
                 "namespaces", "pushes", "requests", "switches", "timers", "trace")  # fmt: skip

    log: logging.Logger
    name: str
    dialing: Dialing
    connect_limit: float | None
    client_id: str
    dispatcher: Dispatcher
    timers: TimerThread
    requests: RequestTable
    pushes: PushRegistry
    trace: WireTrace | None
    connection: Connection
    context: ClientContext
    namespaces: Namespaces
    switches: ConnectionSwitches

    def __init__(self, **fields: Any) -> None:
        for name in self._field_names:
            setattr(self, name, fields.pop(name))
        if fields:
            raise TypeError(f"ClientParts: unknown fields {sorted(fields)}")


def assemble(
    make_client: Callable[..., Any],
    url: str | RelayTarget | Host | None,
    *,
    password: str | None,
    client_id: str | None,
    app_version: str,
    connect_timeout: float,
    request_timeout: float,
    reconnect: ReconnectPolicy | None,
    heartbeat: Heartbeat | None,
    callback_executor: CallbackExecutor,
    flow_control: FlowControl | None,
    on_callback_error: Callable[[BaseException], None] | None,
    strict: bool,
    transport_factory: Callable[[], Transport] | None,
    ssl_context: ssl.SSLContext | None,
    max_frame_bytes: int,
    logger: logging.Logger | None,
    rng: random.Random | None,
    auth_header: str | None,
    allow_insecure_credentials: bool | None,
    trace: TraceTarget | None,
    trace_binary: bool | None,
    thread_cpu: int | None,
    proxy: ProxySetting,
) -> ClientParts:
    """Check the options and build the client's layers (see the module docstring).
    ``make_client`` builds the clients of a host's probes. Raises ``ValueError`` as
    :class:`~daemon_client.client.composition.Client` documents."""
    thread_cpu = check_cpu(thread_cpu)
    if isinstance(max_frame_bytes, bool) or not isinstance(max_frame_bytes, int) or max_frame_bytes < 4096:
        raise ValueError(f"max_frame_bytes must be an integer of at least 4096, got {max_frame_bytes!r}")
    log = logger or logging.getLogger("daemon_client")
    warning = check_app_version(app_version)
    if warning:
        log.warning("%s", warning)
    name = next_name("daemon-client")
    proxies = proxy_policy(proxy)
    auth_header = check_auth_header(auth_header)
    factory: Callable[[], Transport] = transport_factory or WebSocketTransport
    probe_options: dict[str, Any] = {
        "make_client": make_client,
        "password": password,
        "transport_factory": transport_factory,
        "ssl_context": ssl_context,
        "auth_header": auth_header,
        "allow_insecure_credentials": allow_insecure_credentials,
        "app_version": app_version,
        "max_frame_bytes": max_frame_bytes,
        "proxy": proxy,
    }
    dialing = plan_dialing(
        url,
        password=password,
        transport_factory=factory,
        ssl_context=ssl_context,
        auth_header=auth_header,
        allow_insecure_credentials=allow_insecure_credentials,
        logger=log,
        prober=functools.partial(probe_lazily, **probe_options),
        probe_timeout=min(connect_timeout, PROBE_TIMEOUT),
    )
    targets = dialing.targets
    client_id = client_id or f"daemon-client-{uuid.uuid4()}"
    dispatcher = Dispatcher(
        name=f"{name}-dispatch",
        executor=callback_executor,
        on_error=on_callback_error,
        strict=strict,
        logger=log.getChild("dispatch"),
        flow_control=flow_control,
        thread_cpu=thread_cpu,
    )
    timers = TimerThread(f"{name}-timer", thread_cpu=thread_cpu)
    requests = RequestTable(timers, dispatcher.post_or_run_now)
    pushes = PushRegistry(dispatcher.post_in_order, dispatcher.backlog)
    if dialing.password and auth_header:
        log.debug("a password is set: auth_header is not sent")
    wire_trace: WireTrace | None = None
    routes = dialing.routes
    if trace is not None or os.environ.get(TRACE_ENV):
        from daemon_client.transport.trace import open_trace

        wire_trace = open_trace(  # last: it starts a writer thread
            trace, secrets=dialing.secrets, binary_payloads=trace_binary
        )
    first = dialing.route
    factory = first.transport_factory
    if wire_trace is not None:
        factory = wire_trace.wrap(factory)
        routes = traced_routes(dialing, wire_trace.wrap)
    options = ConnectionOptions(
        targets=targets,
        client_id=client_id,
        app_version=app_version,
        password=first.password,
        connect_timeout=connect_timeout,
        reconnect=reconnect or ReconnectPolicy(),
        heartbeat=heartbeat or Heartbeat(),
        transport_factory=factory,
        ssl_context=ssl_context,
        max_frame_bytes=max_frame_bytes,
        rng=rng,
        auth_header=auth_header,
        insecure_refusal=first.insecure_refusal,
        thread_cpu=thread_cpu,
        proxy=proxies,
        routes=routes,
    )
    connection = Connection(
        options,
        requests=requests,
        dispatcher=dispatcher,
        timers=timers,
        on_push=pushes.route,
        name=name,
        logger=log.getChild("connection"),
    )
    context = ClientContext(
        connection=connection,
        requests=requests,
        dispatcher=dispatcher,
        pushes=pushes,
        request_timeout=request_timeout,
    )
    switches = ConnectionSwitches(targets, dispatcher.post_in_order, timers, connection.reset_transport,
                                  name=name, logger=log)  # fmt: skip
    return ClientParts(
        log=log,
        name=name,
        dialing=dialing,
        connect_limit=connect_limit(dialing, connect_timeout),  # a host's: a whole round
        client_id=client_id,
        dispatcher=dispatcher,
        timers=timers,
        requests=requests,
        pushes=pushes,
        trace=wire_trace,
        connection=connection,
        context=context,
        namespaces=Namespaces(context, connection, pushes),
        switches=switches,
    )
