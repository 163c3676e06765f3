"""Probing a host's connections: :func:`probe` (one) and :func:`probe_host` (all at once).

Each probe is :func:`~daemon_client.client.probing.probe_with` with a
:class:`~daemon_client.Client`: a handshake and a ping within a bound, then closed; it never
raises. Runs on the thread that calls it (the CLI's ``hosts probe``, a program's own check).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from daemon_client.client.probing import probe_with
from daemon_client.discovery.failover import Probe
from daemon_client.discovery.profiles import Host, HostConnection


def probe(
    connection: HostConnection,
    timeout: float = 3.0,
    on_cancel: Callable[[Callable[[], None]], None] | None = None,
    **client_options: Any,
) -> Probe:
    """Probe ``connection`` within ``timeout`` seconds with a :class:`~daemon_client.Client`.

    ``client_options`` go to the probing client (``transport_factory``, ``ssl_context``,
    ``proxy``, ``password``, ...); its reconnects and heartbeat are always off.
    """
    from daemon_client.client.composition import Client

    return probe_with(Client, connection, timeout, on_cancel, **client_options)


def probe_host(host: Host, timeout: float = 3.0, **client_options: Any) -> list[Probe]:
    """Probe every connection of ``host`` at once; the results in the host's order. A probe
    reaching another daemon than the host's (by ``serverId``) is reported as not answering."""
    with ThreadPoolExecutor(max_workers=max(1, len(host.connections)), thread_name_prefix="probe") as pool:
        futures = [pool.submit(probe, c, timeout, None, **client_options) for c in host.connections]
        results = [f.result(timeout + 5.0) for f in futures]
    return [found.held_to(host.server_id) for found in results]
