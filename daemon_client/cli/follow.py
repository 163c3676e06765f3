"""Long-running commands (``tail``, ``--watch``, ``serve``, ``demo``): the main thread waits here.

Output is written by the client's callback thread; the main thread blocks in
:meth:`Follow.wait` until one of: the ``--duration`` passed (status 0), the reader closed
the pipe (0; noticed on the descriptor at the next tick, see :meth:`Output.reader_gone`), a
callback called :meth:`Follow.finish` (its status), the connection dropped
with ``--no-reconnect`` or stayed down longer than ``--reconnect-timeout`` (3, or 4 when
the daemon now refuses the password), or Ctrl-C (``KeyboardInterrupt`` propagates: 130).
Drops and recoveries are noted on standard error from the state listener (callback
thread). Every wait is bounded, so signals are handled promptly.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

from daemon_client.cli.exit_codes import AUTH, OK, UNREACHABLE, CliError
from daemon_client.cli.notes import Notes
from daemon_client.cli.output import Output
from daemon_client.errors import AuthenticationError
from daemon_client.state import ConnectionState

if TYPE_CHECKING:
    from daemon_client.client import Client

TICK = 0.1
"""Seconds between two checks of the main thread's loop (and two redraws of a live screen)."""


class Follow:
    """The end conditions of one long-running command (see the module docstring)."""

    def __init__(self, out: Output, notes: Notes, *, reconnect_timeout: float | None = None) -> None:
        self._out = out
        self._notes = notes
        self._reconnect_timeout = reconnect_timeout
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._error: CliError | None = None
        self._lost_since: float | None = None
        self._client: Client | None = None

    # ------------------------------------------------------------------ any thread
    def finish(self, error: CliError | None = None) -> None:
        """End the wait: with ``error`` the command fails with its status; the first call wins."""
        with self._lock:
            if self._done.is_set():
                return
            self._error = error
            self._done.set()

    def watch(self, client: Client) -> None:
        """Report drops and recoveries of ``client``'s connection, and give up as configured."""
        self._client = client
        client.on_state_change(self._on_state)

    # ------------------------------------------------------------------ callback thread
    def _on_state(self, old: ConnectionState, new: ConnectionState, reason: str) -> None:
        url = self._client.url if self._client is not None else "the daemon"
        if new is ConnectionState.CONNECTED and self._lost_since is not None:
            self._lost_since = None
            self._notes.note(f"reconnected to {url}")
        elif old is ConnectionState.CONNECTED and new in (ConnectionState.DISCONNECTED, ConnectionState.CONNECTING):
            self._lost_since = time.monotonic()
            if self._reconnect_timeout is None:
                self.finish(CliError(f"connection to {url} lost: {reason}", UNREACHABLE))
            else:
                self._notes.note(f"connection to {url} lost ({reason}); reconnecting")

    def _check_connection(self) -> None:
        lost_since, limit = self._lost_since, self._reconnect_timeout
        if lost_since is None or limit is None or time.monotonic() - lost_since < limit:
            return
        client = self._client
        url = client.url if client is not None else "the daemon"
        last = client.last_error if client is not None else None
        if isinstance(last, AuthenticationError):
            self.finish(CliError(f"authentication refused by {url} after a reconnect: {last.reason or last}", AUTH))
        else:
            detail = f": {last}" if last is not None else ""
            self.finish(CliError(f"{url} unreachable for {limit:g} s{detail}", UNREACHABLE))

    # ------------------------------------------------------------------ main thread
    def wait_for(self, future: Future[Any], timeout: float, what: str) -> Any:
        """The result of ``future`` (e.g. a subscription's ``ready``), while the end conditions
        apply: a drop with ``--no-reconnect`` ends the wait at once. :class:`CliError` after
        ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return future.result(max(0.0, min(TICK, deadline - time.monotonic())))
            except FutureTimeout:
                pass
            if self._done.is_set():
                raise self._error or CliError(f"{what}: the command ended")
            if time.monotonic() >= deadline:
                raise CliError(f"{what}: no answer from the daemon within {timeout:g} s")
            self._check_connection()

    def reconnected(self) -> bool:
        """After a request failed with the connection: block until the client is connected again
        (``True``) or the reader closed the pipe (``False``); raise the command's
        :class:`CliError` when it ends first (at once with ``--no-reconnect``; after
        ``--reconnect-timeout``)."""
        while True:
            client = self._client
            if client is not None and client.state is ConnectionState.CONNECTED:
                return True
            if self._done.wait(TICK):
                raise self._error or CliError("the command ended while the connection was down", UNREACHABLE)
            if self._out.reader_gone():
                return False
            self._check_connection()

    def wait(self, duration: float | None = None, tick: Callable[[], None] | None = None) -> int:
        """Block until the command ends; return its status or raise its :class:`CliError`."""
        deadline = None if duration is None else time.monotonic() + duration
        while True:
            remaining = TICK if deadline is None else min(TICK, deadline - time.monotonic())
            if remaining <= 0:
                return OK
            if self._done.wait(remaining):
                break
            if self._out.reader_gone():
                return OK
            self._check_connection()
            if tick is not None:
                tick()
        if self._error is not None:
            raise self._error
        return OK
