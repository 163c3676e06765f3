"""Name resolution within a deadline, which ``abort()`` ends at once.

``socket.getaddrinfo`` can be neither given a timeout nor cancelled, so a :class:`Resolver`
runs each lookup on a thread of its own small pool and the caller only waits for the answer:
until the connect deadline passes or the transport is aborted, whichever comes first. The
pool is bounded (``max_threads``, 4 for the process-wide :data:`SYSTEM_RESOLVER`); its threads
(``daemon-client-resolver-<n>``, daemon threads) start on demand and end as soon as no lookup
is queued. Concurrent lookups of the same host and port share one call, so that connects and
reconnects to one host never start more than one lookup of it.

A caller that stops waiting leaves its lookup: a lookup nobody waits for any more is dropped
if it has not started, and its answer discarded if it has. A thread stuck in a system resolver
that never answers stays until ``getaddrinfo`` returns (it cannot be ended); at most
``max_threads`` such threads exist per resolver, later lookups wait in the queue (which holds
only lookups someone waits for) and fail at their deadline. :func:`abandoned_threads` names
the threads still inside a lookup that nobody waits for (the test suite's leak check allows
these and nothing else).

IP literals are converted on the calling thread (a numeric lookup never waits). ``resolve``
runs on the thread that connects (the client's reader thread); the lookups on the pool's
threads; ``Event.set`` of the waiters is the only thing the pool does for a caller.
"""

from __future__ import annotations

import itertools
import socket
import threading
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from daemon_client.transport.base import TransportError

AddrInfo = tuple[int, int, int, str, Any]
"""One ``getaddrinfo`` entry: family, type, proto, canonical name, socket address."""
Lookup = Callable[[str, int], Sequence[AddrInfo]]
"""A blocking lookup of ``(host, port)``: what the pool's threads call."""

DEFAULT_MAX_THREADS = 4
_numbers = itertools.count(1)
_resolvers: weakref.WeakSet[Resolver] = weakref.WeakSet()


class ResolveTimeout(TimeoutError):
    """The host name was not resolved before the connect deadline."""


class ResolveAborted(TransportError):
    """The connect was given up (``abort()``) while its host name was being resolved."""


def system_lookup(host: str, port: int) -> Sequence[AddrInfo]:
    """``socket.getaddrinfo`` for a TCP stream socket."""
    return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)


def _numeric(host: str, port: int) -> list[AddrInfo] | None:
    """The addresses of an IP literal (no lookup), else ``None``."""
    try:
        found: list[AddrInfo] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)  # type: ignore[assignment]
        return found
    except (OSError, UnicodeError):
        return None


class _Pending:
    """One lookup: who waits for it and, once done, its answer."""

    __slots__ = ("done", "error", "host", "port", "result", "started", "waiters")

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.waiters: list[threading.Event] = []
        self.started = False
        self.done = False
        self.result: list[AddrInfo] = []
        self.error: OSError | None = None


class Resolver:
    """A bounded pool of lookup threads; see the module docstring.

    ``lookup`` is the blocking call (``socket.getaddrinfo`` by default; tests pass a slow one).
    """

    def __init__(self, lookup: Lookup = system_lookup, *, max_threads: int = DEFAULT_MAX_THREADS) -> None:
        if max_threads < 1:
            raise ValueError("max_threads must be at least 1")
        self._lookup = lookup
        self._max_threads = max_threads
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, int], _Pending] = {}  # guarded by _lock, as the rest
        self._queue: deque[_Pending] = deque()
        self._workers: dict[threading.Thread, _Pending | None] = {}  # thread -> its current lookup
        _resolvers.add(self)

    @property
    def max_threads(self) -> int:
        return self._max_threads

    def resolve(self, host: str, port: int, *, timeout: float, wake: threading.Event) -> list[AddrInfo]:
        """The addresses of ``host``, within ``timeout`` s.

        ``wake`` is set by whoever gives up on this connect (the transport's ``abort``); it then
        raises :class:`ResolveAborted` at once. Raises :class:`ResolveTimeout` at the deadline
        and ``OSError`` (``socket.gaierror``) when the name does not resolve.
        """
        numeric = _numeric(host, port)
        if numeric is not None:
            return numeric
        if wake.is_set():
            raise ResolveAborted(f"the connection was aborted before resolving {host}")
        with self._lock:
            pending = self._pending.get((host, port))
            if pending is None:
                pending = self._pending[(host, port)] = _Pending(host, port)
                self._queue.append(pending)
            pending.waiters.append(wake)
            starter = self._new_worker()
        if starter is not None:
            starter.start()
        woke = wake.wait(max(0.0, timeout))
        with self._lock:
            done = pending.done
            if not done:
                self._leave(pending, wake)
        if done:
            if pending.error is not None:
                raise pending.error
            return list(pending.result)
        if woke:
            raise ResolveAborted(f"the connection was aborted while resolving {host}")
        raise ResolveTimeout(f"resolving {host} took longer than {timeout:g} s")

    def _leave(self, pending: _Pending, wake: threading.Event) -> None:
        """Under the lock: ``wake``'s owner stopped waiting; drop a lookup nobody waits for."""
        pending.waiters.remove(wake)
        if pending.waiters or pending.started:
            return  # a running lookup stays mapped: the next connect to that host joins it
        self._queue.remove(pending)
        del self._pending[(pending.host, pending.port)]

    def _new_worker(self) -> threading.Thread | None:
        """Under the lock: a thread to start when queued lookups outnumber the free threads."""
        free = sum(1 for current in self._workers.values() if current is None)
        if len(self._queue) <= free or len(self._workers) >= self._max_threads:
            return None
        thread = threading.Thread(target=self._work, name=f"daemon-client-resolver-{next(_numbers)}", daemon=True)
        self._workers[thread] = None
        return thread

    def _work(self) -> None:
        """A pool thread: run queued lookups until none is left, then end."""
        me = threading.current_thread()
        while True:
            with self._lock:
                if not self._queue:
                    del self._workers[me]
                    return
                pending = self._queue.popleft()
                pending.started = True
                self._workers[me] = pending
            try:
                result, error = list(self._lookup(pending.host, pending.port)), None
            except OSError as exc:
                result, error = [], exc
            except Exception as exc:  # noqa: BLE001 - any failure of the lookup is this lookup's answer
                result, error = [], OSError(f"resolving {pending.host} failed: {type(exc).__name__}")
            with self._lock:
                pending.result, pending.error, pending.done = result, error, True
                del self._pending[(pending.host, pending.port)]  # a started lookup stays mapped until done
                waiters = list(pending.waiters)
                self._workers[me] = None
            for waiter in waiters:
                waiter.set()

    def abandoned(self) -> list[threading.Thread]:
        """The threads inside a lookup that nobody waits for any more."""
        with self._lock:
            return [t for t, current in self._workers.items() if current is not None and not current.waiters]


def abandoned_threads() -> list[threading.Thread]:
    """The lookup threads of every resolver that are stuck in a lookup nobody waits for."""
    return [thread for resolver in list(_resolvers) for thread in resolver.abandoned()]


SYSTEM_RESOLVER = Resolver()
"""The process-wide resolver of every :class:`~daemon_client.transport.websocket.WebSocketTransport`
that is not given its own."""
