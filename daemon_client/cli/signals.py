"""Signals of one command run: SIGTERM stops a command the way Ctrl-C does.

Ctrl-C raises ``KeyboardInterrupt`` on the main thread (Python's default); SIGTERM raises
:class:`~daemon_client.cli.exit_codes.Terminated`, a ``KeyboardInterrupt`` too, so every
command has one way to stop: its ``finally`` blocks run, the client is closed, and the status
is 130 (Ctrl-C) or 143 (SIGTERM). Handlers can only be installed from the main thread; from
any other thread (``main()`` called by a program's worker) this does nothing. The previous
handler is restored on exit.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from daemon_client.cli.exit_codes import Terminated


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` on the main thread while the block runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
