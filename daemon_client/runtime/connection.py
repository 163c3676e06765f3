"""``Connection``: the facade of one logical connection to a daemon, for any thread.

Every method here may be called from any thread and returns within its own bound:
:meth:`Connection.connect` waits at most its timeout, :meth:`Connection.submit` and
:meth:`Connection.send_message` never block (frames are queued for the socket's writer
thread), :meth:`Connection.close` returns within its timeout.

The work is done by composed objects, one per thread (see docs/threading.md):

* :class:`~daemon_client.runtime.supervisor.Supervisor`: the **reader thread** (connect,
  handshake, read, reconnect);
* :class:`~daemon_client.runtime.writer.Writer`: the **writer thread** of each socket;
* :class:`~daemon_client.runtime.heartbeat.HeartbeatMonitor` and the writer's stall
  watchdog: the **timer thread**.

Their shared state is :class:`~daemon_client.runtime.link.Link`, under ``Link.lock``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, wait
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from daemon_client.errors import ClientClosed, ConnectionLost, ConnectTimeout, DaemonClientError, NotConnected
from daemon_client.protocol.codec import PING_FRAME, encode_session, preview
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.models import ServerInfo, SessionMessage
from daemon_client.protocol.replies import CLOSE_RELEASE_TIMEOUT, reply_for
from daemon_client.runtime.dispatch import Dispatcher
from daemon_client.runtime.handshake import Failure
from daemon_client.runtime.heartbeat import HeartbeatMonitor
from daemon_client.runtime.link import (
    CLOSE_GRACE,
    STUCK_WRITE_GRACE,
    CloseHook,
    DisconnectHook,
    Hooks,
    Link,
    RestoreHook,
)
from daemon_client.runtime.options import ConnectionOptions
from daemon_client.runtime.requests import ReplyFuture, RequestTable, SettleHook
from daemon_client.runtime.supervisor import Supervisor
from daemon_client.runtime.timers import TimerThread
from daemon_client.runtime.writer import Writer
from daemon_client.state import ConnectionState, StateListener

__all__ = ["CLOSE_RELEASE_TIMEOUT", "Connection", "ConnectionOptions"]

"""Seconds ``close()`` waits, at most, for the releases it sends (and at most half its timeout)."""


class Connection:
    """Owns one logical connection to a daemon across reconnects. See the module docstring."""

    def __init__(
        self,
        options: ConnectionOptions,
        *,
        requests: RequestTable,
        dispatcher: Dispatcher,
        timers: TimerThread,
        on_push: Callable[[SessionMessage, int], None],
        name: str,
        logger: logging.Logger,
    ) -> None:
        self._opts = options
        self._requests = requests
        self._name = name
        self._log = logger
        self._frame_log = logger.getChild("frames")
        self._link = Link(dispatcher, timers, name=name, logger=logger)
        self._heartbeat = HeartbeatMonitor(options.heartbeat, timers, self._send_ping, self._heartbeat_dead)
        self._supervisor = Supervisor(
            self._link, options, requests=requests, heartbeat=self._heartbeat, on_push=on_push
        )

    # ------------------------------------------------------------------ properties
    @property
    def state(self) -> ConnectionState:
        return self._link.state

    @property
    def server_info(self) -> ServerInfo | None:
        return self._link.server_info

    @property
    def host_kind(self) -> HostKind | None:
        return self._link.host_kind

    @property
    def last_error(self) -> DaemonClientError | None:
        return self._link.last_error

    # ------------------------------------------------------------------ listeners and hooks
    def add_state_listener(self, listener: StateListener) -> Callable[[], None]:
        """Call ``listener(old, new, reason)`` on the callback thread, now and on every
        transition, in order. The returned remover stops every later call."""
        return self._link.add_listener(listener)

    def add_hooks(
        self,
        restore: RestoreHook,
        *,
        disconnect: DisconnectHook | None = None,
        close: CloseHook | None = None,
    ) -> None:
        """Register an observation family's hooks, at any time (the only way to hook in).

        * ``restore(kind, reconnected)`` runs on the reader thread after each handshake,
          before queued requests are written; if the current connection completed its
          handshake already, it runs now, on this thread, with ``reconnected=False``;
        * ``disconnect()`` runs on the reader thread each time a connection ends;
        * ``close(kind)`` runs in ``close()`` while still connected: it sends releases and
          returns their futures, which ``close()`` awaits (bounded).

        Hooks are internal code: they must not block and never run user code.
        """
        link = self._link
        with link.lock:
            link.hooks = (*link.hooks, Hooks(restore, disconnect, close))
            sock = link.socket
            kind = link.host_kind if sock is not None and sock.handshaken else None
        if kind is not None:
            restore(kind, False)

    def reset_transport(self, reason: str) -> None:
        """Drop the current socket (any thread, never blocks) so that the reconnect rules
        apply; used when the server-side state of an observation is unknown (protocol.md 4.4, 4.6)."""
        self._link.end_socket(Failure(ConnectionLost(reason)), code=1001, reason=reason)

    # ------------------------------------------------------------------ connect / close
    def connect(self, timeout: float | None) -> ServerInfo:
        """Connect (or join the attempt in progress) and return ``server_info``.

        Any number of concurrent calls share one attempt and its outcome; a call after a
        failed attempt starts a new one.
        """
        link = self._link
        waiter: Future[ServerInfo] = Future()
        with link.lock:
            if link.state is ConnectionState.DISPOSED or link.closing:
                raise ClientClosed("Daemon client is disposed")
            if link.state is ConnectionState.CONNECTED and link.server_info is not None:
                return link.server_info
            link.waiters.append(waiter)
            if link.reader is None:
                link.last_error = None
                reader = threading.Thread(target=self._supervisor.run, name=f"{self._name}-reader", daemon=True)
                link.reader = reader
                reader.start()  # under the lock: a concurrent connect() sees it as live at once
        limit = timeout if timeout is not None else self._opts.connect_timeout + 5.0
        try:
            return waiter.result(limit)
        except FutureTimeout:
            raise ConnectTimeout(f"no connection to {self._opts.targets.current.url} within {limit:g} s") from None
        finally:
            with link.lock:
                if waiter in link.waiters:
                    link.waiters.remove(waiter)

    def close(self, timeout: float = 5.0) -> None:
        """Close for good: stop reconnecting, close the socket (1000), fail pending work.

        Returns within ``timeout``: releases are awaited for at most half of it, the socket
        is aborted when a write in progress does not end within ``STUCK_WRITE_GRACE`` (a
        daemon that stopped reading), and the joins share what is left. A second call waits
        (within its own timeout) for the first one to finish.
        """
        deadline = time.monotonic() + max(0.0, timeout)
        self._release_for_close(min(CLOSE_RELEASE_TIMEOUT, timeout / 2))
        link = self._link
        with link.lock:
            if link.closing:
                closing_already = True
            else:
                closing_already, link.closing = False, True
            sock = link.socket
            writer = sock.writer if sock is not None else None
            threads = [t for t in (link.reader, *link.retired) if t is not None]
        if closing_already:
            link.closed.wait(max(0.0, deadline - time.monotonic()))
            return
        link.wake.set()
        self._opts.targets.cancel()  # a host's probes in progress end now
        self._heartbeat.stop()
        if sock is not None:
            # What was queued (a permission answer, say) and the close frame get CLOSE_GRACE.
            # A write in progress may only be finishing (its frame is out) or stuck on a daemon
            # that stopped reading: it gets STUCK_WRITE_GRACE, then the socket is aborted.
            if writer is not None and (
                writer.finish((1000, "Client closed"), flush=True)
                or writer.wait_current_write(min(STUCK_WRITE_GRACE, deadline - time.monotonic()))
            ):
                writer.join(min(CLOSE_GRACE, deadline - time.monotonic()))
            sock.transport.abort()
        self._requests.fail_all(lambda _e: ClientClosed("Daemon client closed"))
        link.settle_waiters(None, ClientClosed("Daemon client closed"))
        link.set_state(ConnectionState.DISPOSED, "close() called")
        current = threading.current_thread()
        for thread in threads:
            if thread is not current:
                thread.join(max(0.0, deadline - time.monotonic()))
        link.closed.set()

    def _release_for_close(self, budget: float) -> None:
        """Best-effort release of owned observations while still connected (protocol.md 10.6)."""
        link = self._link
        with link.lock:
            if link.closing or link.state is not ConnectionState.CONNECTED or link.host_kind is None:
                return
            hooks, kind = link.hooks, link.host_kind
        futures: list[Future[Any]] = []
        for hook in hooks:
            if hook.close is None:
                continue
            try:
                futures.extend(hook.close(kind))
            except Exception:  # noqa: BLE001 - best effort
                self._log.exception("releasing observations at close failed")
        if futures:
            _, pending = wait(futures, timeout=max(0.0, budget))
            if pending:
                self._log.info("%d releases unanswered at close; the daemon releases them on disconnect", len(pending))

    # ------------------------------------------------------------------ sending
    def submit(
        self,
        message: Mapping[str, Any],
        timeout: float,
        *,
        direct: bool = False,
        on_settle: SettleHook | None = None,
    ) -> ReplyFuture:
        """Register and queue a request; return the future of its reply payload. Never blocks.

        While the handshake is in progress the request waits unsent and is written after
        it (``direct``: queue it now, for re-establishment requests sent by restore hooks).
        """
        request_type = message.get("type")
        if not isinstance(request_type, str) or not request_type:
            raise ValueError("a request message needs a non-empty 'type'")
        request_id = message.get("requestId")
        if request_id is None:
            request_id = self._requests.new_request_id()
            message = {**message, "requestId": request_id}
        elif not isinstance(request_id, str) or not request_id:
            raise ValueError("requestId must be a non-empty string")
        frame = encode_session(message)
        link = self._link
        with link.lock:
            state = link.state
            if state is ConnectionState.DISPOSED or link.closing:
                raise ClientClosed("Daemon client is disposed")
            if state is not ConnectionState.CONNECTING and state is not ConnectionState.CONNECTED:
                raise NotConnected(f"Transport not connected (status: {state.value})")
            queued = not direct and state is not ConnectionState.CONNECTED
            writer = self._writer_locked()
            entry = self._requests.add(
                request_id, request_type, reply_for(request_type), frame, timeout, queued=queued, on_settle=on_settle
            )
        if not queued:
            try:
                self._send(writer, frame)
            except ConnectionLost as exc:
                self._requests.forget(request_id)
                entry.finish(error=exc)
        return entry.future

    def send_message(self, message: Mapping[str, Any], *, direct: bool = False) -> None:
        """Queue a fire-and-forget session message (no reply is awaited); never blocks.
        Raises ``NotConnected``/``ClientClosed`` unless connected (``direct``: or handshaking, for
        re-establishment messages sent by restore hooks), ``ConnectionLost`` if it cannot be
        queued (the socket is gone, or the daemon stopped reading)."""
        self._send(self._sendable_writer(direct), encode_session(message))

    def send_binary(self, data: bytes) -> None:
        """Queue one binary frame (terminal input and resize); errors as :meth:`send_message`."""
        self._send(self._sendable_writer(False), data)

    def _sendable_writer(self, direct: bool) -> Writer | None:
        link = self._link
        with link.lock:
            state = link.state
            if state is ConnectionState.DISPOSED or link.closing:
                raise ClientClosed("Daemon client is disposed")
            if state is not ConnectionState.CONNECTED and not (direct and state is ConnectionState.CONNECTING):
                raise NotConnected(f"Transport not connected (status: {state.value})")
            return self._writer_locked()

    def _writer_locked(self) -> Writer | None:
        """The writer of the current socket once its handshake is done: a session frame never
        precedes the daemon's answer to the hello (it would close the socket with 4002)."""
        sock = self._link.socket
        return sock.writer if sock is not None and sock.handshaken else None

    def _send(self, writer: Writer | None, frame: str | bytes) -> None:
        if writer is None:
            raise ConnectionLost("Connection lost")
        if self._frame_log.isEnabledFor(logging.DEBUG):
            shown = preview(frame, 500) if isinstance(frame, str) else f"binary frame of {len(frame)} bytes"
            self._frame_log.debug("-> %s", shown)
        writer.send(frame)

    # ------------------------------------------------------------------ heartbeat (timer thread)
    def _send_ping(self) -> None:
        with self._link.lock:
            writer = self._writer_locked()
        self._send(writer, PING_FRAME)

    def _heartbeat_dead(self, reason: str) -> None:
        self._link.end_socket(Failure(ConnectionLost(reason)), code=1001, reason="Heartbeat timeout")

    def set_binary_router(self, router: Callable[[bytes], bool] | None) -> None:
        """Route inbound binary frames to ``router(data) -> taken`` on the reader thread (it must
        not block and never runs user code); frames it does not take are logged once per
        connection and dropped, as all binary frames are without a router."""
        self._link.binary_router = router
