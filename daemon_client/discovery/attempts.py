"""The daemon each connection attempt dials, looked up again before every attempt.

:class:`TargetSource` holds the client's current :class:`Resolution`. The connection's reader
thread calls :meth:`TargetSource.next` before each attempt: an explicit address is kept, a
discovered one is resolved again, so that a daemon restarted on another port or socket is found
through its new pid file. A lookup that fails, whatever it raises, keeps the current target
(logged): finding the daemon never ends the reader thread. Any thread may read
:attr:`TargetSource.current`. The lock guards one reference and is never held while resolving or logging.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from daemon_client.discovery.hosts import DaemonTarget
from daemon_client.discovery.resolve import Resolution
from daemon_client.errors import DaemonClientError, ServerMismatch

if TYPE_CHECKING:
    from daemon_client.discovery.failover import SwitchListener
    from daemon_client.discovery.profiles import Host, HostConnection


class Targets(Protocol):
    """What the connection asks of where it connects: one address (:class:`TargetSource`) or
    a host's several connections (:class:`~daemon_client.discovery.failover.HostTargets`)."""

    @property
    def current(self) -> DaemonTarget: ...

    @property
    def resolution(self) -> Resolution: ...

    def next(self) -> DaemonTarget:
        """Reader thread, before an attempt: the target to dial. Never raises for a failed lookup."""

    def round_left(self) -> bool:
        """Reader thread, after a failed attempt: another target is to be tried at once."""

    def failed(self, reason: str, terminal: bool = False) -> None:
        """Reader thread: the attempt or session on the current target ended (``terminal``:
        retrying it cannot help)."""

    def terminal(self, terminal: bool) -> bool:
        """Reader thread, after :meth:`failed`: whether the client must stop trying, given
        that the failure was ``terminal`` for its target."""

    def admit(self, server_id: str) -> ServerMismatch | None:
        """Reader thread, at a handshake: ``None`` if this daemon may be used, else the refusal."""

    def explain(self, error: DaemonClientError) -> DaemonClientError:
        """Reader thread, when the client gives up: the error to report for ``error``."""

    def cancel(self) -> None:
        """Any thread, at ``close()``: end any lookup in progress."""

    @property
    def host(self) -> Host | None:
        """The host profile (``serverId`` learned included); ``None`` for one address."""

    @property
    def active(self) -> HostConnection | None:
        """The host connection of the live session; ``None`` for one address."""

    def add_switch_listener(self, listener: SwitchListener) -> None:
        """Call ``listener(previous, current, reason)`` (reader thread) when the connection changes."""


class TargetSource:
    """Where the next connection attempt goes; see the module docstring."""

    def __init__(self, resolution: Resolution, lookup: Callable[[], Resolution] | None, logger: logging.Logger) -> None:
        self._lock = threading.Lock()
        self._resolution = resolution
        self._lookup = None if resolution.explicit else lookup
        self._log = logger
        logger.debug("daemon at %s: %s", resolution.target.url, resolution.reason)

    @property
    def resolution(self) -> Resolution:
        with self._lock:
            return self._resolution

    @property
    def current(self) -> DaemonTarget:
        with self._lock:
            return self._resolution.target

    def next(self) -> DaemonTarget:
        """Reader thread, before an attempt: the target to dial (looked up again if discovered).
        Never raises for a failed lookup: the current target is dialled, and the next attempt
        looks again."""
        lookup = self._lookup
        if lookup is None:
            return self.current
        try:
            found = lookup()
        except Exception as exc:  # noqa: BLE001 - no failure to find the daemon may end the reader thread
            current = self.current
            shown = str(exc) if isinstance(exc, ValueError | OSError) else type(exc).__name__
            self._log.warning("looking the daemon up again failed (%s); dialling %s", shown, current.url)
            return current
        with self._lock:
            previous, self._resolution = self._resolution, found
        if found.target != previous.target:
            self._log.info("daemon moved: %s -> %s (%s)", previous.target.url, found.target.url, found.reason)
        return found.target

    def round_left(self) -> bool:
        return False  # one address: a failed attempt waits for the backoff

    def failed(self, reason: str, terminal: bool = False) -> None:
        pass

    def terminal(self, terminal: bool) -> bool:
        return terminal  # one address: what cannot work there cannot work at all

    def admit(self, server_id: str) -> ServerMismatch | None:
        return None  # any daemon at the address is the one asked for

    def explain(self, error: DaemonClientError) -> DaemonClientError:
        return error  # one address: the attempt's own error says it all

    def cancel(self) -> None:
        pass

    @property
    def host(self) -> Host | None:
        return None

    @property
    def active(self) -> HostConnection | None:
        return None

    def add_switch_listener(self, listener: SwitchListener) -> None:
        pass  # one address: the connection never changes

    def __repr__(self) -> str:
        return f"<TargetSource {self.current.url}{' (explicit)' if self._lookup is None else ''}>"
