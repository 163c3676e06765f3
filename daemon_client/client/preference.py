"""Moving a host's client back to its preferred connection once that one answers again.

:class:`PreferredWatch` checks, every ``Host.probe_interval`` seconds, whether the session of a
host's client runs on another connection than the preferred one; if so it probes the preferred
one (:meth:`HostTargets.preferred_back <daemon_client.discovery.failover.HostTargets.preferred_back>`)
and, when it answers, ends the session (``reset``): the client reconnects, as after any loss,
and its next round begins with the preferred connection; every observation is restored.

Threads: the client's **timer thread** runs the ticks (it never probes); each check runs on a
worker thread of its own (``…-prefer``), one at a time; :meth:`stop` (``close()``, any thread)
cancels the next tick and joins the worker (bounded; the probe itself is ended by the targets'
``cancel()``). The lock guards the timer, the worker and the stopped flag only.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from daemon_client.discovery.failover import HostTargets
from daemon_client.runtime.timers import Timer, TimerThread


class PreferredWatch:
    """See the module docstring."""

    def __init__(
        self,
        targets: HostTargets,
        timers: TimerThread,
        reset: Callable[[str], None],
        interval: float,
        *,
        name: str,
        logger: logging.Logger,
    ) -> None:
        self._targets = targets
        self._timers = timers
        self._reset = reset
        self._interval = interval
        self._name = name
        self._log = logger
        self._lock = threading.Lock()
        self._timer: Timer | None = None
        self._worker: threading.Thread | None = None
        self._stopped = False

    def start(self) -> None:
        """Schedule the first tick (idempotent)."""
        with self._lock:
            if self._stopped or self._timer is not None:
                return
            self._timer = self._timers.schedule(self._interval, self._tick)

    def _tick(self) -> None:
        """Timer thread: start a check unless one runs, and schedule the next tick."""
        with self._lock:
            if self._stopped:
                return
            self._timer = self._timers.schedule(self._interval, self._tick)
            if self._worker is not None and self._worker.is_alive():
                return
            active, preferred = self._targets.active, self._targets.host.preferred
            if active is None or preferred is None or active.id == preferred.id:
                return  # not connected, or where it belongs: nothing to probe
            worker = self._worker = threading.Thread(target=self._check, name=f"{self._name}-prefer", daemon=True)
        worker.start()

    def _check(self) -> None:
        """Worker thread: probe the preferred connection; move there when it answers."""
        try:
            back = self._targets.preferred_back()
        except Exception:  # noqa: BLE001 - a failed check is retried at the next tick
            self._log.exception("checking the preferred connection failed")
            return
        with self._lock:
            stopped = self._stopped
        if back is not None and not stopped:
            self._reset(f"switching back to the preferred connection {back.id}: it answers again")

    def stop(self, timeout: float) -> None:
        """Any thread: no more checks; wait (bounded) for one in progress."""
        with self._lock:
            self._stopped = True
            timer, self._timer = self._timer, None
            worker = self._worker
        if timer is not None:
            timer.cancel()
        if worker is not None and worker is not threading.current_thread():
            worker.join(max(0.0, timeout))


def watch_preferred(
    targets: object, timers: TimerThread, reset: Callable[[str], None], *, name: str, logger: logging.Logger
) -> PreferredWatch | None:
    """The watch of a host's client, started at its first session; ``None`` when there is
    nothing to watch (one address, no preferred connection, a single connection, or
    ``probe_interval=None``)."""
    if not isinstance(targets, HostTargets):
        return None
    host = targets.host
    if host.preferred is None or host.probe_interval is None or len(host.connections) < 2:
        return None
    watch = PreferredWatch(targets, timers, reset, host.probe_interval, name=name, logger=logger)
    targets.add_switch_listener(lambda _previous, _current, _reason: watch.start())
    return watch
