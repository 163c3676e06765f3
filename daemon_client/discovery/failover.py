"""Which of a host's connections each attempt dials: probe, choose, fail over, check ``serverId``.

:class:`HostTargets` stands where :class:`~daemon_client.discovery.attempts.TargetSource`
stands for a single address. Before the first attempt of each *round* it probes every
connection of the :class:`~daemon_client.discovery.profiles.Host` at once (a handshake and a
ping, bounded by ``probe_timeout``), then orders them: the preferred connection when it
answered, then the others that answered by latency, then those that did not, in the host's
order. The attempts of a round go down that order one after the other with no delay; when all
of them failed, the connection's usual backoff applies and the next round probes again.

Every handshake is checked (:meth:`HostTargets.admit`): a daemon whose ``serverId`` is not the
host's is refused (:class:`~daemon_client.errors.ServerMismatch`); the first ``serverId`` seen
is learned when the host had none. When the connection in use changes, ``on_switch`` is told
(previous, current, reason).

Threads: the connection's **reader thread** calls :meth:`next`, :meth:`failed`,
:meth:`round_left` and :meth:`admit`; each probe runs on a short-lived thread of its own,
joined within ``probe_timeout``; :meth:`cancel` (``close()``, any thread) ends the probes in
progress. Any thread may read :attr:`current`, :attr:`active` and :attr:`resolution`. The lock
guards the fields below and is never held while probing or calling ``on_switch``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import attrs

from daemon_client.discovery.hosts import DaemonTarget
from daemon_client.discovery.profiles import Host, HostConnection
from daemon_client.discovery.resolve import Resolution, Step
from daemon_client.errors import ServerMismatch


@attrs.frozen
class Probe:
    """What one probe of one connection found."""

    connection: HostConnection
    ok: bool
    """A handshake and a ping were answered, by the host's daemon."""
    latency: float | None = None
    """The ping's round trip in seconds, when it answered."""
    server_id: str | None = None
    """The ``serverId`` the daemon reported, when one answered."""
    error: str | None = None
    """Why it did not answer (or whose daemon answered)."""

    def describe(self) -> str:
        if self.ok and self.latency is not None:
            return f"{self.latency * 1000:.1f} ms"
        return self.error or "no answer"


Prober = Callable[[HostConnection, float, Callable[[Callable[[], None]], None]], Probe]
"""``prober(connection, timeout, on_cancel)`` probes one connection within ``timeout``;
``on_cancel(fn)`` registers what ends it early. Never raises."""
SwitchListener = Callable[[HostConnection | None, HostConnection, str], None]


def rank(host: Host, probes: list[Probe]) -> tuple[list[HostConnection], str]:
    """The order a round tries ``host``'s connections in, and why the first one comes first."""
    by_connection = {id(p.connection): p for p in probes}
    answered = [p for p in probes if p.ok and p.latency is not None]
    answered.sort(key=lambda p: p.latency or 0.0)
    order: list[HostConnection] = []
    why = "no connection answered the probe; trying each in turn"
    preferred = host.preferred
    if preferred is not None and by_connection.get(id(preferred), Probe(preferred, False)).ok:
        order.append(preferred)
        why = "the preferred connection answered"
    order.extend(p.connection for p in answered if p.connection is not preferred)
    if order and order[0] is not preferred:
        first = by_connection[id(order[0])]
        why = f"the fastest connection that answered ({first.describe()})"
    order.extend(c for c in host.ordered() if c not in order)
    return order, why


class HostTargets:
    """Where the next attempt goes, for a client of a :class:`Host`; see the module docstring."""

    def __init__(
        self,
        host: Host,
        prober: Prober,
        logger: logging.Logger,
        *,
        probe_timeout: float = 3.0,
        on_learn: Callable[[str], None] | None = None,
    ) -> None:
        self._host = host
        self._prober = prober
        self._log = logger
        self._probe_timeout = probe_timeout
        self._on_learn = on_learn
        self._lock = threading.Lock()
        self._server_id = host.server_id
        self._order: list[HostConnection] = []
        self._why = ""
        self._tried = 0  # of _order, in this round
        self._attempting: HostConnection = host.ordered()[0]
        self._active: HostConnection | None = None  # of the live session
        self._used: HostConnection | None = None  # of the latest session, kept after it ended
        self._last_lost: str | None = None
        self._probes: list[Probe] = []
        self._cancels: list[Callable[[], None]] = []
        self._cancelled = False
        self._listeners: list[SwitchListener] = []

    # ------------------------------------------------------------------ any thread
    @property
    def host(self) -> Host:
        """The host, with the ``serverId`` learned so far."""
        with self._lock:
            server_id = self._server_id
        return (
            self._host
            if server_id == self._host.server_id or server_id is None
            else self._host.with_server_id(server_id)
        )

    @property
    def current(self) -> DaemonTarget:
        """The target of the connection in use, else of the one being (or to be) tried."""
        with self._lock:
            return (self._active or self._attempting).target

    @property
    def active(self) -> HostConnection | None:
        """The connection of the live session; ``None`` while none is established."""
        with self._lock:
            return self._active

    @property
    def probes(self) -> list[Probe]:
        """What the last round's probes found."""
        with self._lock:
            return list(self._probes)

    @property
    def resolution(self) -> Resolution:
        with self._lock:
            connection, why, probes = self._active or self._attempting, self._why, list(self._probes)
        found = {id(p.connection): p for p in probes}
        steps = tuple(
            Step(
                "host",
                f"host {self._host.label} ({c.id})",
                c.url,
                "used" if c is connection else (found[id(c)].describe() if id(c) in found else "not probed"),
            )
            for c in self._host.connections
        )
        reason = f"host {self._host.label}: {connection.id}" + (f" ({why})" if why else "")
        return Resolution(connection.target, "host", reason, True, steps)

    def add_switch_listener(self, listener: SwitchListener) -> None:
        with self._lock:
            self._listeners.append(listener)

    def cancel(self) -> None:
        """Any thread (``close()``): end the probes in progress; later rounds probe nothing."""
        with self._lock:
            self._cancelled = True
            cancels, self._cancels = self._cancels, []
        for cancel in cancels:
            try:
                cancel()
            except Exception:  # noqa: BLE001 - ending a probe is best effort
                self._log.debug("ending a probe failed", exc_info=True)

    # ------------------------------------------------------------------ reader thread
    def next(self) -> DaemonTarget:
        """Before an attempt: the next connection of this round, probing first if a round begins."""
        with self._lock:
            begin = self._tried >= len(self._order)
        if begin:
            order, why, probes = self._begin_round()
            with self._lock:
                self._order, self._why, self._probes, self._tried = order, why, probes, 0
        with self._lock:
            connection = self._order[self._tried]
            self._tried += 1
            self._attempting = connection
        self._log.debug("host %s: trying %s", self._host.label, connection.id)
        return connection.target

    def round_left(self) -> bool:
        """After a failed attempt: whether this round still has a connection to try (tried
        at once, without backoff)."""
        with self._lock:
            return self._tried < len(self._order) and not self._cancelled

    def failed(self, reason: str) -> None:
        """The attempt, or the session, on the connection being used ended."""
        with self._lock:
            lost = self._active
            self._active = None
            if lost is not None:
                self._last_lost = f"{lost.id} was lost ({reason})"
                self._tried = len(self._order)  # a lost session starts a new round: probe again

    def admit(self, server_id: str) -> ServerMismatch | None:
        """At a handshake: ``None`` if this daemon is the host's (learning its ``serverId`` if
        unknown), else the refusal."""
        with self._lock:
            expected = self._server_id
            connection = self._attempting
            refused = expected is not None and server_id != expected
            if not refused:
                self._server_id = server_id
                previous, self._used, self._active = self._used, connection, connection
                lost, self._last_lost = self._last_lost, None
                listeners = list(self._listeners) if previous is not connection else []
                why = self._why
        if refused:
            assert expected is not None
            mismatch = ServerMismatch(
                f"{connection.url} reached the daemon {server_id!r}, not host {self._host.label!r} ({expected!r}): "
                "a stale address or another daemon; the connection was refused",
                expected=expected,
                found=server_id,
                connection=connection.url,
            )
            self._log.warning("host %s: %s", self._host.label, mismatch)
            return mismatch
        learned = expected is None
        if learned and self._on_learn is not None:
            try:
                self._on_learn(server_id)
            except Exception:  # noqa: BLE001 - a store that cannot be written never fails a connection
                self._log.warning(
                    "host %s: recording the serverId %s failed", self._host.label, server_id, exc_info=True
                )
        if listeners:
            reason = f"failover: {lost}" if lost is not None and previous is not None else why or "connected"
            self._log.info("host %s: using %s (%s)", self._host.label, connection.id, reason)
            for listener in listeners:
                listener(previous, connection, reason)
        return None

    def _begin_round(self) -> tuple[list[HostConnection], str, list[Probe]]:
        connections = list(self._host.ordered())
        if len(connections) == 1:
            return connections, "the host's only connection", []
        probes = self._probe_all(connections)
        order, why = rank(self._host, probes)
        shown = ", ".join(f"{p.connection.id}: {p.describe()}" for p in probes)
        self._log.info("host %s: probed %s; trying %s first (%s)", self._host.label, shown, order[0].id, why)
        return order, why, probes

    def _probe_all(self, connections: list[HostConnection]) -> list[Probe]:
        results: dict[int, Probe] = {}
        done = threading.Event()
        pending = [len(connections)]
        guard = threading.Lock()

        def register(cancel: Callable[[], None]) -> None:
            with self._lock:
                cancelled = self._cancelled
                if not cancelled:
                    self._cancels.append(cancel)
            if cancelled:
                cancel()

        def run(index: int, connection: HostConnection) -> None:
            try:
                probe = self._prober(connection, self._probe_timeout, register)
            except Exception as exc:  # noqa: BLE001 - a probe that fails is a connection that did not answer
                probe = Probe(connection, False, error=f"the probe failed: {type(exc).__name__}")
            if probe.ok and probe.server_id is not None:
                with self._lock:
                    expected = self._server_id
                if expected is not None and probe.server_id != expected:
                    probe = attrs.evolve(
                        probe, ok=False, error=f"reached the daemon {probe.server_id!r}, not {expected!r}"
                    )
            with guard:
                results[index] = probe
                pending[0] -= 1
                if pending[0] == 0:
                    done.set()

        with self._lock:
            if self._cancelled:
                return [Probe(c, False, error="closed") for c in connections]
        threads = [
            threading.Thread(target=run, args=(i, c), name=f"probe-{self._host.label}-{i}", daemon=True)
            for i, c in enumerate(connections)
        ]
        deadline = time.monotonic() + self._probe_timeout + 1.0
        for thread in threads:
            thread.start()
        done.wait(max(0.0, deadline - time.monotonic()))
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            self._cancels = []
        with guard:
            return [results.get(i, Probe(c, False, error="no answer in time")) for i, c in enumerate(connections)]

    def __repr__(self) -> str:
        return f"<HostTargets {self._host.label} {self.current.url}>"
