"""The terminal directory: ``subscribe_terminals_request`` / ``terminals_changed`` for one
directory (or, on hosts with ``features.workspaceTerminals``, one workspace), restored after
reconnects (protocol.md 12.2.9).

The request has no ``requestId`` and no reply: the daemon answers with a ``terminals_changed``
push carrying the full list, then pushes it again after every change. A subscription is
therefore *ready* when its first push arrives. The daemon keeps one subscription set per
server-side session, so local subscriptions of the same key (``cwd`` and workspace) share one
server subscription: each new one asks again (the daemon then sends the list again, harmless
for the others, since every push is the whole list), and ``unsubscribe_terminals_request`` is
sent when the last one is released. After every handshake every live key is subscribed again.

Routing: a push tagged with a ``workspaceId`` goes to that workspace's subscriptions; an untagged
one to every subscription of its ``cwd``, with a workspace subscription keeping only entries of
its workspace (or entries that name none). A ``subscriptionId`` key is tolerated and ignored.

Threads: ``add``/``release`` on the caller's thread; routing and the lifecycle hooks on the
reader thread, posting jobs; handlers run on the callback thread. The lock is never held while
sending.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import attrs

from daemon_client.errors import ClientClosed, ConnectionUnavailable, SubscriptionReleased
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.models import SessionMessage
from daemon_client.protocol.requests import subscriptions as subscriptions_requests
from daemon_client.protocol.terminals import TerminalsChanged, parse_terminals_changed
from daemon_client.runtime.memo import Memo
from daemon_client.runtime.requests import CallbackFuture, settle
from daemon_client.subscriptions.lifecycle import Phase, SubscriptionLink, move

_log = logging.getLogger("daemon_client.subscriptions.terminal_directory")

UPDATE_TYPE = "terminals_changed"
Send = Callable[..., None]
"""``send(message, direct=False)``: a fire-and-forget session message."""


class DirectoryState(enum.Enum):
    PENDING = "pending"  # not asked on this connection yet
    ASKED = "asked"  # asked; waiting for the first list
    LIVE = "live"
    RELEASED = "released"

    @property
    def phase(self) -> Phase:
        """This state in the one subscription state model."""
        return Phase.ESTABLISHING if self is DirectoryState.ASKED else Phase(self.value)


@attrs.frozen
class DirectoryKey:
    """What one server subscription is for."""

    cwd: str
    workspace_id: str | None = None

    def message(self, message_type: str) -> dict[str, Any]:
        body: dict[str, Any] = {"type": message_type, "cwd": self.cwd}
        if self.workspace_id is not None:
            body["workspaceId"] = self.workspace_id
        return body


class TerminalDirectorySubscription:
    """The terminals of one directory or workspace, kept current (``client.terminals.subscribe``).

    ``handler(TerminalsChanged)`` runs on the callback thread with the full list: first the
    current one, then after every change (and again after every reconnect). ``ready``
    resolves to the first list. ``current()`` is the last list seen. Release with
    :meth:`release` (or as a context manager); harmless twice.
    """

    def __init__(
        self,
        manager: TerminalDirectoryManager,
        key: DirectoryKey,
        handler: Callable[[TerminalsChanged], object],
    ) -> None:
        self._manager = manager
        self.key = key
        self._handler = handler
        self.state = DirectoryState.PENDING
        self.ready: Future[TerminalsChanged] = CallbackFuture(manager.dispatcher.post_or_run_now)
        self._current: TerminalsChanged | None = None

    @property
    def cwd(self) -> str:
        return self.key.cwd

    @property
    def workspace_id(self) -> str | None:
        return self.key.workspace_id

    @property
    def released(self) -> bool:
        return self.state is DirectoryState.RELEASED

    def current(self) -> TerminalsChanged | None:
        """The last list delivered (``None`` before the first)."""
        return self._current

    def release(self) -> None:
        """Stop receiving lists (the daemon does not answer an unsubscribe)."""
        self._manager.release(self)

    def __call__(self) -> None:
        self.release()

    def __enter__(self) -> TerminalDirectorySubscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def __repr__(self) -> str:
        where = self.key.cwd if self.key.workspace_id is None else f"workspace {self.key.workspace_id}"
        return f"<TerminalDirectorySubscription {where} {self.state.value}>"

    def _deliver(self, changed: Memo[TerminalsChanged]) -> None:
        """Callback thread: one list routed to this subscription."""
        if self.state is DirectoryState.RELEASED:
            return
        try:
            value = changed.get()
        except Exception as exc:  # noqa: BLE001 - a bad payload, not user code
            _log.warning("%r: unreadable terminals_changed skipped: %s", self, exc)
            return
        workspace = self.key.workspace_id
        if workspace is not None and value.workspace_id is None:
            kept = tuple(t for t in value.terminals if t.workspace_id in (None, workspace))
            value = attrs.evolve(value, terminals=kept, workspace_id=workspace)
        self._current = value
        self._manager.dispatcher.errors.call_isolated(self._handler, value)


class TerminalDirectoryManager:
    """Every terminal directory subscription of one client; see the module docstring."""

    def __init__(self, link: SubscriptionLink, send: Send) -> None:
        self.dispatcher = link.dispatcher
        self._send = send
        self._lock = threading.Lock()
        self._subs: list[TerminalDirectorySubscription] = []
        self._connected = False
        self._disposed = False

    # -------------------------------------------------------------- caller thread
    def add(self, sub: TerminalDirectorySubscription) -> TerminalDirectorySubscription:
        """Register and ask now, or at the next handshake (after ``close()``: fails at once)."""
        with self._lock:
            if self._disposed:
                move(sub, DirectoryState.RELEASED)
                settle(sub.ready, error=ClientClosed())
                return sub
            self._subs.append(sub)
            ask = self._connected
            if ask:
                move(sub, DirectoryState.ASKED)
        if ask:
            try:
                self._send(sub.key.message(subscriptions_requests.TERMINAL_DIRECTORY.type))
            except ConnectionUnavailable:
                with self._lock:
                    if sub.state is DirectoryState.ASKED:
                        move(sub, DirectoryState.PENDING)  # asked again after the next handshake
        return sub

    def release(self, sub: TerminalDirectorySubscription) -> None:
        with self._lock:
            if sub.state is DirectoryState.RELEASED:
                return
            move(sub, DirectoryState.RELEASED)
            if sub in self._subs:
                self._subs.remove(sub)
            last = not any(s.key == sub.key for s in self._subs)
            connected = self._connected
        settle(sub.ready, error=SubscriptionReleased("the terminal directory subscription was released"))
        if last and connected:
            with contextlib.suppress(ConnectionUnavailable):  # else the session forgets it with the socket
                self._send(sub.key.message("unsubscribe_terminals_request"))

    # -------------------------------------------------------------- reader thread
    def route(self, message: SessionMessage) -> None:
        """Reader thread: a ``terminals_changed`` push."""
        payload = message.payload
        cwd, workspace = payload.get("cwd"), payload.get("workspaceId")
        with self._lock:
            if isinstance(workspace, str):
                targets = [s for s in self._subs if s.key.workspace_id == workspace]
            else:
                targets = [s for s in self._subs if s.key.cwd == cwd]
            targets = [s for s in targets if s.state in (DirectoryState.ASKED, DirectoryState.LIVE)]
            first = [s for s in targets if s.state is DirectoryState.ASKED]
            for sub in first:
                move(sub, DirectoryState.LIVE)
        if not targets:
            _log.debug("terminals_changed for %r with no subscription dropped", cwd)
            return
        memo: Memo[TerminalsChanged] = Memo(lambda: parse_terminals_changed(payload))
        post = self.dispatcher.post_in_order
        for sub in targets:
            post(lambda sub=sub: sub._deliver(memo))  # type: ignore[misc]
        for sub in first:
            if not sub.ready.done():
                post(lambda sub=sub: self._resolve_ready(sub, memo))  # type: ignore[misc]

    @staticmethod
    def _resolve_ready(sub: TerminalDirectorySubscription, memo: Memo[TerminalsChanged]) -> None:
        try:
            value = sub.current() or memo.get()
        except Exception as exc:  # noqa: BLE001 - a bad payload, not user code
            settle(sub.ready, error=exc)
            return
        settle(sub.ready, result=value)

    def on_disconnect(self) -> None:
        """Reader thread: everything is asked again after the next handshake."""
        with self._lock:
            self._connected = False
            for sub in self._subs:
                if sub.state is not DirectoryState.RELEASED:
                    move(sub, DirectoryState.PENDING)

    def restore(self, kind: HostKind, reconnected: bool) -> None:
        """Reader thread, after each handshake: ask for every live key once."""
        with self._lock:
            self._connected = True
            for sub in self._subs:
                move(sub, DirectoryState.ASKED)
            keys = list(dict.fromkeys(sub.key for sub in self._subs))
        for key in keys:
            try:
                self._send(key.message(subscriptions_requests.TERMINAL_DIRECTORY.type), direct=True)
            except ConnectionUnavailable as exc:
                _log.debug("terminal directory %r not asked again: %s", key, exc)
                return

    def release_for_close(self, kind: HostKind) -> list[Future[Any]]:
        """``close()`` while connected: unsubscribe every key (no reply exists)."""
        with self._lock:
            keys = list(dict.fromkeys(sub.key for sub in self._subs))
        for key in keys:
            with contextlib.suppress(ConnectionUnavailable):
                self._send(key.message("unsubscribe_terminals_request"))
        return []

    def dispose(self) -> None:
        """After ``close()``: fail pending ``ready`` futures and detach every handler."""
        with self._lock:
            subs, self._subs = self._subs, []
            self._disposed = True
        for sub in subs:
            move(sub, DirectoryState.RELEASED)
            settle(sub.ready, error=ClientClosed())
