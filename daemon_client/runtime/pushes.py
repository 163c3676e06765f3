"""Routing of daemon pushes to the listeners that want them.

The reader thread calls :meth:`PushRegistry.route` for every message that is not a
reply; it looks up listeners in an immutable snapshot (copy-on-write, so routing takes
no lock) and posts each call to the dispatcher. Listeners are added and removed from
any thread, callbacks included; a removed listener hears nothing afterwards, not even
calls already queued for it.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Generic, TypeVar

from daemon_client.protocol.codec import preview
from daemon_client.protocol.models import SessionMessage
from daemon_client.runtime.backlog import Backlog
from daemon_client.runtime.requests import settle

PushHandler = Callable[[SessionMessage], None]
Post = Callable[[Callable[[], None]], object]

_log = logging.getLogger("daemon_client.runtime.pushes")
_ALL = "*"


class _Listener:
    """One registration; ``active`` is cleared by its remover and read when a call runs."""

    __slots__ = ("active", "handler")

    def __init__(self, handler: PushHandler) -> None:
        self.handler = handler
        self.active = True

    def deliver(self, message: SessionMessage) -> None:
        if self.active:
            self.handler(message)


class PushRegistry:
    """Listeners keyed by message type (or every type), with lock-free routing.

    ``_by_type``, ``_routers`` and ``_watchers`` are copy-on-write: replaced under ``_lock``,
    read without it by the reader thread.
    """

    def __init__(self, post: Post, backlog: Backlog | None = None) -> None:
        self._post = post
        self._backlog = backlog
        self._lock = threading.Lock()
        self._by_type: dict[str, tuple[_Listener, ...]] = {}
        self._routers: dict[str, PushHandler] = {}
        self._watchers: tuple[tuple[frozenset[str], Callable[[SessionMessage], bool], Future[SessionMessage]], ...] = ()

    def watch(
        self, message_types: Iterable[str], predicate: Callable[[SessionMessage], bool]
    ) -> tuple[Future[SessionMessage], Callable[[], None]]:
        """Internal: a future completed (on the reader thread) by the first push of one of
        ``message_types`` that satisfies ``predicate``; and a function that stops watching."""
        future: Future[SessionMessage] = Future()
        watcher = (frozenset(message_types), predicate, future)
        with self._lock:
            self._watchers = (*self._watchers, watcher)

        def cancel() -> None:
            with self._lock:
                self._watchers = tuple(w for w in self._watchers if w is not watcher)

        return future, cancel

    def set_router(self, message_type: str, router: PushHandler) -> None:
        """Internal: ``router(message)`` runs on the reader thread for every push of that type,
        before listeners are posted. It must not block and never runs user code."""
        with self._lock:
            self._routers = {**self._routers, message_type: router}

    def add(self, handler: PushHandler, message_types: Iterable[str] | None = None) -> Callable[[], None]:
        """Deliver matching pushes to ``handler`` on the callback thread; returns the remover."""
        keys = tuple(message_types) if message_types is not None else (_ALL,)
        listener = _Listener(handler)
        with self._lock:
            table = dict(self._by_type)
            for key in keys:
                table[key] = (*table.get(key, ()), listener)
            self._by_type = table

        def remove() -> None:
            listener.active = False
            with self._lock:
                table = dict(self._by_type)
                for key in keys:
                    listeners = tuple(entry for entry in table.get(key, ()) if entry is not listener)
                    if listeners:
                        table[key] = listeners
                    else:
                        table.pop(key, None)
                self._by_type = table

        return remove

    def route(self, message: SessionMessage, size: int = 0) -> None:
        """Reader thread: hand ``message`` to its router, then post it to every listener of its
        type. ``size``: the length of the frame's JSON text (what flow control counts)."""
        if self._backlog is not None:
            self._backlog.frame_size = size
        router = self._routers.get(message.type)
        if router is not None:
            router(message)
        if self._watchers:
            self._check_watchers(message)
        table = self._by_type
        handlers = (table.get(message.type, ()) + table.get(_ALL, ())) if table else ()
        if not handlers:
            if router is None:
                _log.debug("no listener for %s", preview(message.type, 80))
            return
        post = self._post
        for listener in handlers:
            post(functools.partial(listener.deliver, message))

    def _check_watchers(self, message: SessionMessage) -> None:
        for types, predicate, future in self._watchers:
            if message.type in types and not future.done():
                try:
                    matched = predicate(message)
                except Exception:  # noqa: BLE001 - a malformed push must not hurt the reader
                    matched = False
                if matched:
                    settle(future, result=message)


T = TypeVar("T")


class RouteTable(Generic[T]):
    """``subscriptionId`` → target, read without a lock by the reader thread (copy-on-write)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.routes: dict[str, T] = {}
        """Read without a lock (the reader's hot path may look up in it directly); replaced under
        the table's lock on every change, never changed in place."""

    def add(self, key: str, target: T) -> None:
        with self._lock:
            self.routes = {**self.routes, key: target}

    def remove(self, key: str | None) -> None:
        if key is None:
            return
        with self._lock:
            if key in self.routes:
                routes = dict(self.routes)
                del routes[key]
                self.routes = routes

    def get(self, key: str) -> T | None:
        return self.routes.get(key)

    def __len__(self) -> int:
        return len(self.routes)
