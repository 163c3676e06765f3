"""A host client's connection changes: their listeners, and the watch of the preferred connection.

:class:`ConnectionListeners` keeps the callbacks given to
:meth:`Client.on_connection_change <daemon_client.Client.on_connection_change>`. The reader
thread calls :meth:`ConnectionListeners.notify` when a session starts on another connection;
each callback is posted to the callback thread in order, never run on the reader thread. Any
thread may add or remove; the lock guards the tuple only and is never held while posting.
:class:`ConnectionSwitches` is what a client holds: the listeners and, for a host with a
preferred connection, its :class:`~daemon_client.client.preference.PreferredWatch` (imported
only then).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from daemon_client.discovery.attempts import Targets
from daemon_client.discovery.profiles import HostConnection

if TYPE_CHECKING:
    import logging

    from daemon_client.client.preference import PreferredWatch
    from daemon_client.runtime.timers import TimerThread

ConnectionListener = Callable[[HostConnection | None, HostConnection, str], None]
"""``callback(previous, current, reason)``: see ``Client.on_connection_change``."""


class ConnectionListeners:
    """See the module docstring."""

    def __init__(self, post: Callable[[Callable[[], None]], object]) -> None:
        self._post = post
        self._lock = threading.Lock()
        self._listeners: tuple[ConnectionListener, ...] = ()

    def add(self, listener: ConnectionListener) -> Callable[[], None]:
        if not callable(listener):
            raise TypeError("the connection listener must be callable")
        token = _Entry(listener)
        with self._lock:
            self._listeners = (*self._listeners, token)

        def remove() -> None:
            with self._lock:
                self._listeners = tuple(entry for entry in self._listeners if entry is not token)

        return remove

    def notify(self, previous: HostConnection | None, current: HostConnection, reason: str) -> None:
        """Reader thread: post every listener's call, in the order they were added."""
        with self._lock:
            listeners = self._listeners
        for listener in listeners:
            self._post(functools.partial(listener, previous, current, reason))


class _Entry:
    """One registration (so that the same callable added twice is removed once per remover)."""

    __slots__ = ("fn",)

    def __init__(self, fn: ConnectionListener) -> None:
        self.fn = fn

    def __call__(self, previous: HostConnection | None, current: HostConnection, reason: str) -> None:
        self.fn(previous, current, reason)


class ConnectionSwitches:
    """A client's connection-change listeners and its watch of the preferred connection."""

    def __init__(
        self,
        targets: Targets,
        post: Callable[[Callable[[], None]], object],
        timers: TimerThread,
        reset: Callable[[str], None],
        *,
        name: str,
        logger: logging.Logger,
    ) -> None:
        self._listeners = ConnectionListeners(post)
        targets.add_switch_listener(self._listeners.notify)
        self._watch: PreferredWatch | None = None
        if targets.host is not None:
            from daemon_client.client.preference import watch_preferred

            self._watch = watch_preferred(targets, timers, reset, name=name, logger=logger.getChild("hosts"))

    def add(self, listener: ConnectionListener) -> Callable[[], None]:
        return self._listeners.add(listener)

    def stop(self, timeout: float) -> None:
        """No more checks of the preferred connection; wait (bounded) for one in progress."""
        if self._watch is not None:
            self._watch.stop(timeout)
