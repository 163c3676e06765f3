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

The round does not wait for every probe: it begins as soon as the preferred connection
answered, or once every probe finished, or (no preferred connection, or it did not answer)
:data:`SETTLE` seconds after the first answer; at most ``probe_timeout`` plus
:data:`PROBE_GRACE`. The probes still running then are ended and count as not answering.

When the client gives up, :meth:`explain` names in its error what each connection of the
last round answered. While a session runs on another connection than the preferred one,
:meth:`preferred_back` (a client's watch, every ``Host.probe_interval`` seconds) probes the
preferred one; when it answers, the next round begins with it, and the client ends the session
to move there.

Threads: the connection's **reader thread** calls :meth:`next`, :meth:`failed`,
:meth:`round_left`, :meth:`admit` and :meth:`explain`; each probe runs on a short-lived thread of its own
(``probe-<label>-<n>``), ended and joined (bounded) before the round begins;
:meth:`preferred_back` runs on the watch's worker thread; :meth:`cancel` (``close()``, any
thread) ends the probes in progress, the watch's included. Any thread may read :attr:`current`,
:attr:`active` and :attr:`resolution`. The lock guards the fields below and is never held
while probing or calling ``on_switch``.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable

import attrs

from daemon_client.discovery.hosts import DaemonTarget
from daemon_client.discovery.profiles import Host, HostConnection
from daemon_client.discovery.resolve import Resolution, Step
from daemon_client.errors import DaemonClientError, ServerMismatch

PROBE_GRACE = 1.0
"""Seconds a round waits for a probe past ``probe_timeout`` (its client closing), and for the
probes it ended to return."""
SETTLE = 0.25
"""Seconds a round keeps waiting, after the first answer, for a faster one (no preferred
connection, or it did not answer)."""


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

    def held_to(self, server_id: str | None) -> Probe:
        """This probe, as not answering when it reached another daemon than ``server_id``
        (``None``: any daemon is the host's)."""
        if not self.ok or server_id is None or self.server_id is None or self.server_id == server_id:
            return self
        return attrs.evolve(self, ok=False, error=f"reached the daemon {self.server_id!r}, not {server_id!r}")

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


class _ProbeRound:
    """The probes of one round: their results as they come, and what ends those still running.

    The reader thread :meth:`wait` s until the round can be ordered: the preferred connection
    answered; or every probe finished; or, once the preferred one (if any) did not answer,
    :data:`SETTLE` seconds after the first answer; bounded by the round's timeout. Probe
    threads :meth:`register` and :meth:`finish`; :meth:`end` (reader thread, or ``cancel()``)
    hands back what ends the probes still running. The condition's lock is never held while
    one is ended.
    """

    def __init__(self, connections: list[HostConnection], preferred: HostConnection | None) -> None:
        self._connections = connections
        self._preferred = next((i for i, c in enumerate(connections) if c is preferred), None)
        self._cond = threading.Condition()
        self._results: dict[int, Probe] = {}
        self._cancels: dict[int, Callable[[], None]] = {}
        self._ended = False

    def register(self, index: int, cancel: Callable[[], None]) -> None:
        with self._cond:
            if not self._ended and index not in self._results:
                self._cancels[index] = cancel
                return
        cancel()  # the round is over already: this probe ends at once

    def finish(self, index: int, probe: Probe) -> None:
        with self._cond:
            if self._ended:
                return
            self._results[index] = probe
            self._cancels.pop(index, None)
            self._cond.notify_all()

    def _ready_locked(self, now: float, settle: list[float]) -> bool:
        results = self._results
        if self._ended or len(results) == len(self._connections):
            return True
        preferred = results.get(self._preferred) if self._preferred is not None else None
        if preferred is not None and preferred.ok:
            return True
        if self._preferred is not None and preferred is None:
            return False  # the preferred one may still answer
        if not settle and any(p.ok for p in results.values()):
            settle.append(now + SETTLE)
        return bool(settle) and now >= settle[0]

    def wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        settle: list[float] = []
        with self._cond:
            while True:
                now = time.monotonic()
                if self._ready_locked(now, settle) or now >= deadline:
                    return
                self._cond.wait(max(0.0, min([deadline, *settle]) - now))

    def end(self) -> list[Callable[[], None]]:
        with self._cond:
            self._ended = True
            cancels, self._cancels = list(self._cancels.values()), {}
            self._cond.notify_all()
            return cancels

    def results(self) -> list[Probe]:
        with self._cond:
            found = dict(self._results)
        return [found.get(i, Probe(c, False, error="no answer in time")) for i, c in enumerate(self._connections)]


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
        self._failures: list[str] = []  # why each attempt of this round failed
        self._terminal: list[bool] = []  # and whether retrying it could not help
        self._probes: list[Probe] = []
        self._round: _ProbeRound | None = None  # the probes in progress
        self._check: _ProbeRound | None = None  # a check of the preferred connection in progress
        self._switch_to: HostConnection | None = None  # the next round begins with it, unprobed
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
            connection, probes = self._active or self._attempting, list(self._probes)
            why = self._why_locked(connection)
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
            round_, self._round = self._round, None
            check, self._check = self._check, None
        for ending in (round_, check):
            if ending is not None:
                self._end(ending.end())

    def preferred_back(self) -> HostConnection | None:
        """A watch's worker thread: while the session runs on another connection than the
        preferred one, probe the preferred one (bounded); when the host's daemon answers there,
        the next round begins with it, unprobed, and it is returned: the caller then ends the
        session, and the client moves as on any reconnect. ``None`` otherwise."""
        preferred = self._host.preferred
        with self._lock:
            active = self._active
            if preferred is None or active is None or active is preferred or self._cancelled:
                return None
            check = self._check = _ProbeRound([preferred], preferred)
        try:
            found = self._prober(preferred, self._probe_timeout, functools.partial(check.register, 0))
        except Exception as exc:  # noqa: BLE001 - a probe that fails is a connection that did not answer
            found = Probe(preferred, False, error=f"the probe failed: {type(exc).__name__}")
        with self._lock:
            if self._check is check:
                self._check = None
            answers = found.held_to(self._server_id).ok
            if not answers or self._active is not active or self._cancelled:
                return None
            self._switch_to = preferred
        self._log.info("host %s: the preferred connection %s answers again (%s)", self._host.label,
                       preferred.id, found.describe())  # fmt: skip
        return preferred

    # ------------------------------------------------------------------ reader thread
    def next(self) -> DaemonTarget:
        """Before an attempt: the next connection of this round, probing first if a round begins."""
        with self._lock:
            begin = self._tried >= len(self._order)
        if begin:
            order, why, probes = self._begin_round()
            with self._lock:
                self._order, self._why, self._probes, self._tried = order, why, probes, 0
                self._failures, self._terminal = [], []
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

    def failed(self, reason: str, terminal: bool = False) -> None:
        """The attempt, or the session, on the connection being used ended (``terminal``:
        retrying that connection cannot help)."""
        with self._lock:
            lost = self._active
            self._active = None
            if lost is not None:
                self._last_lost = f"{lost.id} was lost ({reason})"
                self._tried = len(self._order)  # a lost session starts a new round: probe again
                self._failures, self._terminal = [], []
            else:
                self._failures.append(f"{self._attempting.id}: {reason}")
                self._terminal.append(terminal)

    def terminal(self, terminal: bool) -> bool:
        """After :meth:`failed`: a failure that cannot be helped by retrying its connection
        stops the client only once every connection of the round failed so; until then the
        others are tried, and a round where any failure may pass is tried again later."""
        with self._lock:
            flags = self._terminal
            return terminal and self._tried >= len(self._order) and len(flags) == len(self._order) and all(flags)

    def explain(self, error: DaemonClientError) -> DaemonClientError:
        """When the client gives up: ``error`` (the last attempt's), its message naming what
        every connection of the round answered, for a host of several connections."""
        with self._lock:
            failures = list(self._failures)
        if len(failures) < 2:
            return error
        message = f"host {self._host.label}: no connection reached its daemon ({'; '.join(failures)})"
        found: DaemonClientError
        try:
            if isinstance(error, ServerMismatch):
                found = ServerMismatch(message, expected=error.expected, found=error.found, connection=error.connection)
            else:
                found = type(error)(message)
        except Exception:  # noqa: BLE001 - an error that cannot be rebuilt is kept as it is
            return error
        found.__cause__ = error
        return found

    def admit(self, server_id: str) -> ServerMismatch | None:
        """At a handshake: ``None`` if this daemon is the host's (learning its ``serverId`` if
        unknown), else the refusal."""
        with self._lock:
            expected = self._server_id
            connection = self._attempting
            if expected is not None and server_id != expected:
                return ServerMismatch(
                    f"{connection.url} reached the daemon {server_id!r}, not host {self._host.label!r} ({expected!r}): "
                    "a stale address or another daemon; the connection was refused",
                    expected=expected,
                    found=server_id,
                    connection=connection.url,
                )
            learned = expected is None
            self._server_id = server_id
            previous, self._used, self._active = self._used, connection, connection
            lost, self._last_lost = self._last_lost, None
            listeners = list(self._listeners) if previous is not connection else []
            why = self._why_locked(connection)
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

    def _why_locked(self, connection: HostConnection) -> str:
        """Why ``connection`` is used: the round's ranking for its first, else the failures before it."""
        if not self._order or connection is self._order[0] or not self._failures:
            return self._why
        return f"tried after {'; '.join(self._failures)}"

    def _begin_round(self) -> tuple[list[HostConnection], str, list[Probe]]:
        connections = list(self._host.ordered())
        if len(connections) == 1:
            return connections, "the host's only connection", []
        with self._lock:
            back, self._switch_to = self._switch_to, None
        if back is not None:  # just probed: no second probe before using it
            return [back, *(c for c in connections if c is not back)], "the preferred connection answers again", []
        probes = self._probe_all(connections)
        order, why = rank(self._host, probes)
        shown = ", ".join(f"{p.connection.id}: {p.describe()}" for p in probes)
        self._log.info("host %s: probed %s; trying %s first (%s)", self._host.label, shown, order[0].id, why)
        return order, why, probes

    def _probe_all(self, connections: list[HostConnection]) -> list[Probe]:
        """Probe every connection at once; return as soon as the round can be ordered (see
        :class:`_ProbeRound`), ending the probes still running."""
        round_ = _ProbeRound(connections, self._host.preferred)
        with self._lock:
            if self._cancelled:
                return [Probe(c, False, error="closed") for c in connections]
            self._round = round_

        def run(index: int, connection: HostConnection) -> None:
            try:
                probe = self._prober(connection, self._probe_timeout, functools.partial(round_.register, index))
            except Exception as exc:  # noqa: BLE001 - a probe that fails is a connection that did not answer
                probe = Probe(connection, False, error=f"the probe failed: {type(exc).__name__}")
            with self._lock:
                expected = self._server_id
            round_.finish(index, probe.held_to(expected))

        threads = [
            threading.Thread(target=run, args=(i, c), name=f"probe-{self._host.label}-{i}", daemon=True)
            for i, c in enumerate(connections)
        ]
        for thread in threads:
            thread.start()
        round_.wait(self._probe_timeout + PROBE_GRACE)
        self._end(round_.end())
        with self._lock:
            if self._round is round_:
                self._round = None
        deadline = time.monotonic() + PROBE_GRACE
        for thread in threads:  # those still running were just ended: they return at once
            thread.join(max(0.0, deadline - time.monotonic()))
        return round_.results()

    def _end(self, cancels: list[Callable[[], None]]) -> None:
        for cancel in cancels:
            try:
                cancel()
            except Exception:  # noqa: BLE001 - ending a probe is best effort
                self._log.debug("ending a probe failed", exc_info=True)

    def __repr__(self) -> str:
        return f"<HostTargets {self._host.label} {self.current.url}>"
