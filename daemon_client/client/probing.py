"""Probing one connection of a host: a handshake and a ping, within a bound, then closed.

:func:`probe_with` opens a short-lived client (``Client``, passed in: this module never
imports the client, which probes through it) on the connection (no reconnects, no
heartbeat), waits for ``server_info``, measures one ``ping`` and closes it. It never raises:
what went wrong is in the :class:`~daemon_client.discovery.Probe`. The caller's
``on_cancel`` hook gets a function that ends the probe at once (``close()`` of the client
being probed for); what its threads log from then on is dropped. The probing clients log
under ``daemon_client.hosts.probe``, at WARNING and up unless that logger's level is set.
Runs on the thread that calls it (a probe thread of
:class:`~daemon_client.discovery.HostTargets`, or :mod:`daemon_client.client.probe`'s).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from daemon_client.config import Heartbeat, ReconnectPolicy
from daemon_client.discovery.failover import Probe
from daemon_client.discovery.profiles import HostConnection
from daemon_client.errors import DaemonClientError

_log = logging.getLogger("daemon_client.hosts.probe")
if _log.level == logging.NOTSET:  # a probing client's state changes are noise: WARNING and up, unless set
    _log.setLevel(logging.WARNING)


class _EndedProbes(logging.Filter):
    """Drops what the threads of a probe ended on purpose log (a relay handshake cut short is
    no daemon missing). Any thread; the lock guards the set of client names only."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._names: set[str] = set()

    def add(self, name: str) -> None:
        with self._lock:
            self._names.add(name)

    def discard(self, name: str) -> None:
        with self._lock:
            self._names.discard(name)

    def filter(self, record: logging.LogRecord) -> bool:
        thread = record.threadName or ""
        with self._lock:
            return not any(thread == name or thread.startswith(f"{name}-") for name in self._names)


_ENDED = _EndedProbes()
for _child in ("", ".connection", ".relay"):  # where a probing client warns
    logging.getLogger(_log.name + _child).addFilter(_ENDED)


def probe_with(
    make_client: Callable[..., Any],
    connection: HostConnection,
    timeout: float = 3.0,
    on_cancel: Callable[[Callable[[], None]], None] | None = None,
    **client_options: Any,
) -> Probe:
    """Probe ``connection`` within ``timeout`` seconds with a client made by ``make_client``
    (``Client``; see the module docstring).

    ``client_options`` go to the probing client (``transport_factory``, ``ssl_context``,
    ``proxy``, ``password``, ...); its reconnects and heartbeat are always off.
    """
    started = time.monotonic()
    options = dict(client_options)
    options.update(
        reconnect=ReconnectPolicy(enabled=False),
        heartbeat=Heartbeat(enabled=False),
        connect_timeout=max(0.05, timeout),
        logger=_log,
    )
    if connection.effective_password is not None:
        options["password"] = connection.effective_password
    if not connection.target.ws_url.startswith("wss://"):
        options.pop("ssl_context", None)  # a host's TLS settings are for its wss:// connections
    try:
        client = make_client(connection.address, **options)
    except (ValueError, DaemonClientError, ImportError) as exc:
        return Probe(connection, False, error=_short(exc))
    name: str = getattr(client, "_name", "")

    def end() -> None:
        if name:
            _ENDED.add(name)
        client.close(0.5)

    if on_cancel is not None:
        on_cancel(end)
    try:
        info = client.connect(timeout=max(0.05, timeout))
        remaining = timeout - (time.monotonic() - started)
        pong = client.ping(timeout=max(0.05, remaining))
        return Probe(connection, True, latency=pong.round_trip, server_id=info.server_id)
    except Exception as exc:  # noqa: BLE001 - a probe reports, it never raises
        return Probe(connection, False, error=_short(exc))
    finally:
        client.close(1.0)
        _ENDED.discard(name)


def _short(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    first = text.splitlines()[0]
    return first if len(first) <= 200 else first[:199] + "…"
