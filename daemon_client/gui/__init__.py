"""Ready-made ``callback_executor`` values for GUI toolkits.

Imported on demand (``import daemon_client.gui``); importing it imports no toolkit:
:func:`tk_executor` uses the ``root`` it is given, :func:`qt_executor` imports PySide6 or
PyQt6 when called, :func:`asyncio_executor` uses the running (or given) asyncio loop, and
:func:`wrap` awaits a client future on it. Each executor hands the client's callbacks to the toolkit's own thread,
in order, without ever blocking the client's dispatcher thread or calling the toolkit from
it, and names that thread (``callback_thread``) so that the client raises
:class:`~daemon_client.errors.WouldDeadlock` when it would wait there for a callback.
"""

from __future__ import annotations

from daemon_client.gui.asyncio_loop import AsyncioExecutor, asyncio_executor, wrap
from daemon_client.gui.qt_loop import QtExecutor, qt_executor
from daemon_client.gui.tk_loop import TkExecutor, tk_executor

__all__ = ["AsyncioExecutor", "QtExecutor", "TkExecutor", "asyncio_executor", "qt_executor", "tk_executor", "wrap"]
