"""``Fleet``: several hosts followed from one process, with one callback thread for all of them.

A :class:`Fleet` holds one :class:`~daemon_client.Client` per
:class:`~daemon_client.discovery.profiles.Host` (each failing over between its own
connections). All of them hand their callbacks to one executor (a
:class:`~daemon_client.fleet.executor.SerialExecutor` unless ``callback_executor`` is given), so
user code sees one ordered stream. Requests go to the host they name (``fleet[label]`` is its
client; ``fleet.agents.ref(label, agent_id)`` its usual handle). Hosts never wait for each
other: connects, reads and closes run on one short-lived thread per host, each bounded.

Any thread may call every method; callbacks run on the fleet's callback thread.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.client.composition import Client
from daemon_client.config import ReconnectPolicy
from daemon_client.discovery.profiles import Host
from daemon_client.errors import DaemonClientError
from daemon_client.fleet.directory import FleetDirectory, FleetEntry
from daemon_client.fleet.executor import SerialExecutor
from daemon_client.protocol.models import ServerInfo
from daemon_client.runtime.dispatch import CallbackExecutor
from daemon_client.state import ConnectionState

if TYPE_CHECKING:
    from daemon_client.api.agents.handle import AgentHandle

HostStateListener = Callable[[str, ConnectionState, ConnectionState, str], None]
"""``listener(host, old, new, reason)``, on the fleet's callback thread."""


@attrs.frozen
class FleetListing:
    """One read of every host's agents (``fleet.agents.list()``)."""

    entries: tuple[FleetEntry, ...]
    """The agents of the hosts that answered, in the fleet's host order."""
    errors: dict[str, BaseException] = attrs.field(factory=dict)
    """Per host that did not answer, why."""


def in_parallel(labels: Iterable[str], work: Callable[[str], Any], timeout: float, name: str) -> dict[str, Any]:
    """Run ``work(label)`` for every label at once, one thread each; wait at most ``timeout``.
    Returns the result (or the exception) per label; a label still running is left out."""
    results: dict[str, Any] = {}
    lock = threading.Lock()

    def run(label: str) -> None:
        try:
            value: Any = work(label)
        except BaseException as exc:  # noqa: BLE001 - reported per host
            value = exc
        with lock:
            results[label] = value

    threads = [
        threading.Thread(target=run, args=(label,), name=f"fleet-{name}-{label}", daemon=True) for label in labels
    ]
    deadline = time.monotonic() + max(0.0, timeout)
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    with lock:
        return dict(results)


class FleetAgents:
    """``fleet.agents``: the agents of every host."""

    def __init__(self, fleet: Fleet) -> None:
        self._fleet = fleet

    def list(self, subscribe: bool = False, *, timeout: float | None = None, **options: Any) -> Any:
        """Read every host's agents at once (``options`` as for ``client.agents.list``).

        Without ``subscribe``: a :class:`FleetListing` of the hosts that answered within
        ``timeout``, with the others' errors. With ``subscribe=True``: a started
        :class:`FleetDirectory`, returned once every connected host was read (bounded by
        ``timeout``); hosts that are down join it when they connect.
        """
        fleet = self._fleet
        limit = fleet.request_timeout if timeout is None else timeout
        if subscribe:
            directory = FleetDirectory(fleet.clients, options, limit, fleet.post)
            fleet.track(directory)
            directory.start()
            directory.wait_attached(limit)
            return directory
        results = in_parallel(
            fleet.hosts, lambda label: fleet[label].agents.list(timeout=limit, **options), limit + 1.0, "list"
        )
        entries: list[FleetEntry] = []
        errors: dict[str, BaseException] = {}
        for label in fleet.hosts:
            found = results.get(label)
            if found is None:
                errors[label] = TimeoutError(f"{label} did not answer within {limit:g} s")
            elif isinstance(found, BaseException):
                errors[label] = found
            else:
                entries.extend(FleetEntry(label, entry) for entry in found.entries)
        return FleetListing(tuple(entries), errors)

    def ref(self, host: str, agent_id: str) -> AgentHandle:
        """The usual handle of ``agent_id`` on ``host`` (its requests go to that host)."""
        return self._fleet[host].agents.ref(agent_id)


class Fleet:
    """Several hosts followed from one process; see the module docstring.

    ``hosts``: :class:`Host` values with distinct labels. ``callback_executor``: where every
    host's callbacks run (default: one thread of the fleet's own, so they run in one order);
    ``request_timeout``: the default of the fleet's own reads. ``client_options`` go to every
    :class:`~daemon_client.Client` (``reconnect`` defaults to retrying the initial connect too,
    so a host that is down when the fleet starts joins when it comes up).
    """

    def __init__(
        self,
        hosts: Iterable[Host],
        *,
        callback_executor: CallbackExecutor = None,
        request_timeout: float = 30.0,
        **client_options: Any,
    ) -> None:
        self._connect_limit = float(client_options.get("connect_timeout", 15.0)) + 5.0
        listed = list(hosts)
        if not listed:
            raise ValueError("a fleet needs at least one host")
        labels = [host.label for host in listed if isinstance(host, Host)]
        if len(labels) != len(listed):
            raise TypeError("a fleet's hosts are Host values (dc.Host(label, connections))")
        duplicates = sorted({label for label in labels if labels.count(label) > 1})
        if duplicates:
            raise ValueError(f"host labels must be unique in a fleet: {', '.join(duplicates)}")
        if callback_executor == "manual":
            raise ValueError("a fleet runs its callbacks on one executor: 'manual' is not supported")
        if "callback_executor" in client_options:
            raise TypeError("pass callback_executor to the fleet")
        self.request_timeout = request_timeout
        self._own_executor = SerialExecutor("fleet") if callback_executor is None else None
        self._executor: Callable[[Callable[[], None]], object] = self._own_executor or callback_executor  # type: ignore[assignment]
        client_options.setdefault("reconnect", ReconnectPolicy(retry_initial_connect=True))
        self._lock = threading.Lock()
        self._directories: list[FleetDirectory] = []
        self._closed = False
        self._clients: dict[str, Client] = {}
        try:
            for host in listed:
                self._clients[host.label] = Client(host, callback_executor=self._executor, **client_options)
        except BaseException:
            for client in self._clients.values():
                client.close(1.0)
            if self._own_executor is not None:
                self._own_executor.stop(1.0)
            raise
        self.agents = FleetAgents(self)
        """The agents of every host: ``list()``, ``list(subscribe=True)``, ``ref(host, id)``."""

    # ------------------------------------------------------------------ hosts
    @property
    def hosts(self) -> list[str]:
        """The host labels, in the order given."""
        return list(self._clients)

    @property
    def clients(self) -> dict[str, Client]:
        return dict(self._clients)

    def __getitem__(self, host: str) -> Client:
        """The client of ``host``; ``KeyError`` naming the known hosts."""
        try:
            return self._clients[host]
        except KeyError:
            raise KeyError(f"no host {host!r} in this fleet (hosts: {', '.join(self._clients)})") from None

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._clients))

    def __len__(self) -> int:
        return len(self._clients)

    @property
    def states(self) -> dict[str, ConnectionState]:
        return {label: client.state for label, client in self._clients.items()}

    def post(self, fn: Callable[[], None]) -> object:
        """Run ``fn`` on the fleet's callback thread, after what is queued there. Never blocks."""
        return self._executor(fn)

    def track(self, directory: FleetDirectory) -> None:
        """Internal: a directory to release when the fleet closes."""
        with self._lock:
            closed = self._closed
            if not closed:
                self._directories.append(directory)
        if closed:
            directory.release(1.0)
            raise DaemonClientError("the fleet is closed")

    # ------------------------------------------------------------------ lifecycle
    def connect(self, timeout: float | None = None) -> dict[str, ServerInfo | BaseException]:
        """Connect every host at once; return per host its ``server_info`` or why it failed
        within ``timeout`` (default: the clients' ``connect_timeout`` plus 5 s). A host that failed keeps trying in
        the background (see ``reconnect``); one host never delays another."""
        limit = timeout if timeout is not None else self._connect_limit
        results = in_parallel(self.hosts, lambda label: self._clients[label].connect(limit), limit + 1.0, "connect")
        return {
            label: results.get(label, TimeoutError(f"{label}: no connection within {limit:g} s"))
            for label in self.hosts
        }

    def on_state_change(self, listener: HostStateListener) -> Callable[[], None]:
        """Call ``listener(host, old, new, reason)`` on the callback thread: once per host with
        its current state, then on every transition. Returns a function that removes it."""
        removers = [
            client.on_state_change(functools.partial(listener, label)) for label, client in self._clients.items()
        ]

        def remove() -> None:
            for remover in removers:
                remover()

        return remove

    def close(self, timeout: float = 5.0) -> None:
        """Close every host's client at once, then the callback thread; returns within
        ``timeout``. Idempotent; safe from a callback."""
        deadline = time.monotonic() + max(0.0, timeout)
        with self._lock:
            self._closed = True
            directories, self._directories = self._directories, []
        for directory in directories:
            directory.release(max(0.0, min(1.0, deadline - time.monotonic())))
        in_parallel(
            self.hosts,
            lambda label: self._clients[label].close(max(0.0, deadline - time.monotonic() - 0.1)),
            max(0.0, deadline - time.monotonic()),
            "close",
        )
        if self._own_executor is not None:
            self._own_executor.stop(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        states = ", ".join(f"{label}: {state.value}" for label, state in self.states.items())
        return f"<Fleet {states}>"
