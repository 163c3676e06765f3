"""Following the daemon's configuration: ``status daemon_config_changed`` pushes and their
restore after a reconnect (protocol.md 12.3).

Every known daemon broadcasts ``daemon_config_changed`` to every connected client, so nothing is
sent to subscribe. What a subscription needs from the lifecycle is a baseline and a catch-up:
when it becomes live (and after every reconnect) the manager reads the configuration
(``get_daemon_config_request``). The first read resolves ``ready`` with it; a read after a
reconnect that differs from the last configuration this client saw is delivered to the
handlers as a change (a change made while disconnected is not lost), then ``on_restored`` runs.

A follower's state (:class:`ConfigState`) is a phase of the one subscription state model
(:mod:`daemon_client.subscriptions.lifecycle`), changed only through ``move``: ``pending`` while
no read can be made for it (no connection, or the read could not be sent), ``establishing``
while the read that gives it its baseline is in flight (joined by followers who subscribe
meanwhile), then ``live`` (across reconnects too: nothing is held on the daemon, and the
catch-up read after a reconnect is its restore), ``released`` once released, closed, or failed
(a first read that failed or could not be parsed), as a timeline membership whose
establishment failed is.

Threads: ``subscribe``/``release`` on the caller's thread; routing, the read's settle hook and
the lifecycle hooks on the reader thread (they only post jobs); handlers on the callback
thread. The lock is never held while sending or while user code runs.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

from daemon_client.errors import (
    ClientClosed,
    ConnectionLost,
    ConnectionUnavailable,
    ProtocolError,
    SubscriptionReleased,
)
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.models import SessionMessage
from daemon_client.protocol.requests import config as config_requests
from daemon_client.runtime.memo import Memo
from daemon_client.runtime.requests import CallbackFuture, settle
from daemon_client.subscriptions.lifecycle import Phase, SubscriptionLink, control_timeout, move

_log = logging.getLogger("daemon_client.subscriptions.config")

CHANGED_STATUS = "daemon_config_changed"
READ_REQUEST = config_requests.GET.type

C = TypeVar("C")


class ConfigState(enum.Enum):
    PENDING = "pending"  # no read can be made for it yet
    ESTABLISHING = "establishing"  # the read giving it its baseline is in flight
    LIVE = "live"
    RELEASED = "released"  # released, closed, or its first read failed

    @property
    def phase(self) -> Phase:
        """This state in the one subscription state model."""
        return Phase(self.value)


class ConfigSubscription(Generic[C]):
    """One follower of the daemon's configuration (``client.config.subscribe``).

    ``ready`` resolves with the configuration read when the subscription became live.
    ``handler(config)`` runs on the callback thread for every change. Calling the object, or
    ``release()``, stops it (nothing is sent: the pushes are broadcast); also a context manager.
    """

    def __init__(
        self,
        manager: ConfigManager[C],
        handler: Callable[[C], object],
        on_restored: Callable[[], object] | None,
        on_error: Callable[[BaseException], object] | None,
    ) -> None:
        self._manager = manager
        self.handler = handler
        self.on_restored = on_restored
        self.on_error = on_error
        self.ready: Future[C] = CallbackFuture(manager.dispatcher.post_or_run_now)
        self.state = ConfigState.PENDING
        """Changed only through ``lifecycle.move``, under the manager's lock."""

    @property
    def live(self) -> bool:
        """Has its baseline: changes are delivered to it."""
        return self.state is ConfigState.LIVE

    @property
    def released(self) -> bool:
        return self.state is ConfigState.RELEASED

    def __call__(self) -> None:
        self.release()

    def release(self, timeout: float | None = None) -> None:
        """Stop delivering changes; harmless twice. ``timeout`` is accepted for symmetry with
        the other subscriptions: nothing is sent, so nothing is awaited."""
        self._manager.release(self)

    def __enter__(self) -> ConfigSubscription[C]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"<ConfigSubscription {self.state.value}>"


class ConfigManager(Generic[C]):
    """Every configuration follower of one client (a :class:`LifecycleHooks` implementation)."""

    def __init__(self, link: SubscriptionLink, parse: Callable[[Any], C]) -> None:
        self._link = link
        self._parse = parse
        self.dispatcher = link.dispatcher
        self._lock = threading.Lock()
        self._subs: list[ConfigSubscription[C]] = []
        self._connected = False
        self._baseline: Mapping[str, Any] | None = None
        """The last configuration this client saw (reader thread order), raw."""
        self._reading = False

    # -------------------------------------------------------------- caller thread
    def subscribe(
        self,
        handler: Callable[[C], object],
        *,
        on_restored: Callable[[], object] | None = None,
        on_error: Callable[[BaseException], object] | None = None,
    ) -> ConfigSubscription[C]:
        sub = ConfigSubscription(self, handler, on_restored, on_error)
        with self._lock:
            self._subs.append(sub)
            connected = self._connected
            if connected:  # the read made below (or the one in flight) establishes it
                move(sub, ConfigState.ESTABLISHING)
        if connected:
            self._read(direct=False, restored=False)
        return sub

    def release(self, sub: ConfigSubscription[C]) -> None:
        with self._lock:
            if sub.released:
                return
            move(sub, ConfigState.RELEASED)
            if sub in self._subs:
                self._subs.remove(sub)
        settle(sub.ready, error=SubscriptionReleased("configuration subscription released before ready"))

    # -------------------------------------------------------------- reads
    def _read(self, *, direct: bool, restored: bool) -> None:
        """Read the configuration; its reply makes pending followers live and catches up live
        ones (``restored``: the read that follows a reconnect, after which ``on_restored`` runs)."""
        with self._lock:
            for sub in self._subs:
                if sub.state is ConfigState.PENDING:
                    move(sub, ConfigState.ESTABLISHING)
            if self._reading:
                return  # the read in flight settles every follower waiting now
            self._reading = True
        try:
            self._link.submit(
                {"type": READ_REQUEST},
                control_timeout(READ_REQUEST),
                direct=direct,
                on_settle=lambda payload, error: self._settled(payload, error, restored),
            )
        except ConnectionUnavailable:
            with self._lock:
                self._reading = False
                self._wait_for_connection_locked()

    def _settled(self, payload: dict[str, Any] | None, error: BaseException | None, restored: bool) -> None:
        """Reader thread (or the thread failing the read): the configuration read ended."""
        config = payload.get("config") if payload is not None else None
        if error is None and not isinstance(config, Mapping):
            error = ProtocolError(f"{READ_REQUEST} answered without a configuration")
        with self._lock:
            self._reading = False
            connected = self._connected
            if error is not None:
                failed = [] if isinstance(error, ConnectionLost) else [s for s in self._subs if not s.live]
                for sub in failed:
                    move(sub, ConfigState.RELEASED)
                    self._subs.remove(sub)
                changed, pending, live = False, [], []
            else:
                assert isinstance(config, Mapping)
                changed = self._baseline is not None and dict(self._baseline) != dict(config)
                self._baseline = config
                pending = [s for s in self._subs if not s.live]
                live = [s for s in self._subs if s.live]
                for sub in pending:
                    move(sub, ConfigState.LIVE if connected else ConfigState.PENDING)
        if error is not None:
            self._fail(failed, error)
            return
        assert isinstance(config, Mapping)
        memo: Memo[C] = Memo(lambda: self._parse(config))
        if changed:
            for sub in live:
                self._post_change(sub, memo)
        for sub in live if restored else ():
            if sub.on_restored is not None:
                self._post_restored(sub, sub.on_restored)
        for sub in pending:
            self._resolve(sub, memo)

    def _resolve(self, sub: ConfigSubscription[C], memo: Memo[C]) -> None:
        try:
            value = memo.get()
        except Exception as exc:  # noqa: BLE001 - an unreadable configuration fails this follower
            with self._lock:
                move(sub, ConfigState.RELEASED)
                if sub in self._subs:
                    self._subs.remove(sub)
            self._fail([sub], exc)
            return
        settle(sub.ready, result=value)

    def _fail(self, subs: list[ConfigSubscription[C]], error: BaseException) -> None:
        for sub in subs:
            settle(sub.ready, error=error)
            if sub.on_error is not None:
                self._post_error(sub.on_error, error)
        if subs:
            _log.warning("reading the daemon configuration failed: %s", error)

    def _post_error(self, callback: Callable[[BaseException], object], error: BaseException) -> None:
        self.dispatcher.post_in_order(lambda: self.dispatcher.errors.call_isolated(callback, error))

    def _post_restored(self, sub: ConfigSubscription[C], callback: Callable[[], object]) -> None:
        self.dispatcher.post_in_order(lambda: None if sub.released else self.dispatcher.errors.call_isolated(callback))

    def _post_change(self, sub: ConfigSubscription[C], memo: Memo[C]) -> None:
        def deliver() -> None:
            if sub.released:
                return
            try:
                value = memo.get()
            except Exception as exc:  # noqa: BLE001 - a bad payload, not user code
                _log.warning("unreadable daemon configuration skipped: %s", exc)
                return
            self.dispatcher.errors.call_isolated(sub.handler, value)

        self.dispatcher.post_in_order(deliver)

    # -------------------------------------------------------------- reader thread
    def route(self, message: SessionMessage) -> None:
        """Reader thread: a ``status`` push; only ``daemon_config_changed`` concerns this manager."""
        payload = message.payload
        if payload.get("status") != CHANGED_STATUS:
            return
        config = payload.get("config")
        if not isinstance(config, Mapping):
            _log.warning("%s without a configuration skipped", CHANGED_STATUS)
            return
        with self._lock:
            self._baseline = config
            live = [s for s in self._subs if s.live]
        memo: Memo[C] = Memo(lambda: self._parse(config))
        for sub in live:
            self._post_change(sub, memo)

    def restore(self, kind: HostKind, reconnected: bool) -> None:
        """Reader thread, after each handshake: read the configuration if anyone follows it."""
        with self._lock:
            self._connected = True
            wanted = bool(self._subs)
        if wanted:
            self._read(direct=True, restored=reconnected)

    def on_disconnect(self) -> None:
        """Reader thread, when a connection ends: followers wait for the next read."""
        with self._lock:
            self._connected = False
            self._reading = False
            self._wait_for_connection_locked()

    def _wait_for_connection_locked(self) -> None:
        """No read is in flight: followers being established wait for the next one."""
        for sub in self._subs:
            if sub.state is ConfigState.ESTABLISHING:
                move(sub, ConfigState.PENDING)

    def release_for_close(self, kind: HostKind) -> list[Future[Any]]:
        """Nothing to release on the daemon: the pushes are broadcast."""
        return []

    def dispose(self) -> None:
        """After ``close()``: fail pending ``ready`` futures and tell every follower."""
        with self._lock:
            subs, self._subs = self._subs, []
            for sub in subs:
                move(sub, ConfigState.RELEASED)
        self._fail(subs, ClientClosed())
