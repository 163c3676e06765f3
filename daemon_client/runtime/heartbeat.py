"""The top-level JSON heartbeat of one connection (protocol 1.6).

Driven by the client's timer thread (ticks and pong deadlines) and the reader thread
(``on_pong``). Each connection gets a fresh generation, so timers of an old
connection never act on a new one. A ping is queued for the writer thread: a tick
never waits for a socket write, so a daemon that stops reading is still noticed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from daemon_client.config import Heartbeat
from daemon_client.runtime.timers import TimerThread

_log = logging.getLogger("daemon_client.runtime.heartbeat")


class HeartbeatMonitor:
    """Sends ``{"type":"ping"}`` every ``interval`` s and declares the socket dead after misses."""

    def __init__(
        self,
        config: Heartbeat,
        timers: TimerThread,
        send_ping: Callable[[], None],
        on_dead: Callable[[str], None],
    ) -> None:
        self._config = config
        self._timers = timers
        self._send_ping = send_ping
        self._on_dead = on_dead
        self._lock = threading.Lock()
        # Guarded by _lock (timer thread, reader thread, and the connection's threads):
        self._generation = 0
        self._outstanding: int | None = None  # probe number awaiting a pong
        self._probes = 0
        self._misses = 0

    @property
    def misses(self) -> int:
        return self._misses

    def start(self) -> None:
        """Begin probing a freshly connected socket."""
        if not self._config.enabled:
            return
        with self._lock:
            self._generation += 1
            self._outstanding = None
            self._misses = 0
            generation = self._generation
        self._timers.schedule(self._config.interval, lambda: self._tick(generation))

    def stop(self) -> None:
        """Stop probing (disconnect or close); timers of the old generation then do nothing."""
        with self._lock:
            self._generation += 1
            self._outstanding = None

    def on_pong(self) -> None:
        """Reader thread: any pong answers the outstanding probe and clears the misses."""
        with self._lock:
            self._outstanding = None
            self._misses = 0

    def _tick(self, generation: int) -> None:
        with self._lock:
            if generation != self._generation:
                return
            send = self._outstanding is None
            if send:
                self._probes += 1
                self._outstanding = probe = self._probes
        if send:
            try:
                self._send_ping()
            except Exception as exc:  # noqa: BLE001 - the reader will see the broken socket
                _log.debug("heartbeat ping not sent: %s", exc)
            self._timers.schedule(self._config.timeout, lambda: self._deadline(generation, probe))
        self._timers.schedule(self._config.interval, lambda: self._tick(generation))

    def _deadline(self, generation: int, probe: int) -> None:
        with self._lock:
            if generation != self._generation or self._outstanding != probe:
                return
            self._outstanding = None
            self._misses += 1
            dead = self._misses >= self._config.max_misses
            misses = self._misses
        _log.info("heartbeat: no pong within %.1f s (%d in a row)", self._config.timeout, misses)
        if dead:
            self._on_dead(f"Heartbeat timeout: {misses} pings without a pong within {self._config.timeout:g} s")
