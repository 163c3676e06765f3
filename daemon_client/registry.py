"""Routing of daemon pushes to the listeners that want them.

The reader thread calls :meth:`PushRegistry.route` for every message that is not a
reply; it looks up listeners in an immutable snapshot (copy-on-write, so routing takes
no lock) and posts each call to the dispatcher. Listeners are added and removed from
any thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

from daemon_client.protocol.models import SessionMessage

PushHandler = Callable[[SessionMessage], None]
Post = Callable[[Callable[[], None]], None]

_log = logging.getLogger("daemon_client.registry")
_ALL = "*"


class PushRegistry:
    """Listeners keyed by message type (or every type), with lock-free routing."""

    def __init__(self, post: Post) -> None:
        self._post = post
        self._lock = threading.Lock()
        self._by_type: dict[str, tuple[PushHandler, ...]] = {}

    def add(self, handler: PushHandler, message_types: Iterable[str] | None = None) -> Callable[[], None]:
        """Deliver matching pushes to ``handler`` on the callback thread; returns the remover."""
        keys = tuple(message_types) if message_types is not None else (_ALL,)
        with self._lock:
            table = dict(self._by_type)
            for key in keys:
                table[key] = (*table.get(key, ()), handler)
            self._by_type = table

        def remove() -> None:
            with self._lock:
                table = dict(self._by_type)
                for key in keys:
                    handlers = list(table.get(key, ()))
                    if handler in handlers:
                        handlers.remove(handler)
                    if handlers:
                        table[key] = tuple(handlers)
                    else:
                        table.pop(key, None)
                self._by_type = table

        return remove

    def route(self, message: SessionMessage) -> None:
        """Reader thread: post ``message`` to every listener of its type."""
        table = self._by_type
        handlers = table.get(message.type, ()) + table.get(_ALL, ())
        if not handlers:
            _log.debug("no listener for %s", message.type)
            return
        post = self._post
        for handler in handlers:
            post(lambda handler=handler: handler(message))  # type: ignore[misc]
