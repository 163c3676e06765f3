"""The composition root: :class:`Client` and :func:`connect` (``composition``) build and wire
the layers of one client (``assembly``), with the credentials plan (``credentials``) and the
user-facing namespaces (``namespaces``). Importing this package imports the ``Client`` class
only; the client machinery (connection, codec, transport, websocket-client) is imported when
the first client is built. The public names are re-exported by :mod:`daemon_client`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from daemon_client.client.composition import Client, connect

if TYPE_CHECKING:
    from daemon_client.discovery.failover import Probe
    from daemon_client.discovery.profiles import Host


def probe_host(host: Host, timeout: float = 3.0, **client_options: Any) -> list[Probe]:
    """Probe every connection of ``host`` at once (a handshake and a ping each, within
    ``timeout``) and return what each found, in the host's order: latency, ``serverId``, or why
    it did not answer. A connection reaching another daemon than the host's is reported as not
    answering. ``client_options`` go to each probing client (``ssl_context``, ``proxy``, ...)."""
    from daemon_client.client.probe import probe_host as probe_all

    return probe_all(host, timeout, **client_options)


__all__ = ["Client", "connect", "probe_host"]
