"""The Qt executor: callbacks handed to a Qt object's thread through a queued signal.

:func:`qt_executor` imports PySide6 (else PyQt6) when called, on the thread that owns the
Qt event loop. :meth:`QtExecutor.__call__` runs on the client's dispatcher thread (or any
thread): it emits a signal connected with ``Qt.QueuedConnection`` to a relay object living
on the owning thread, so Qt runs each callable there, in emission order, when its event loop
next runs. It never blocks. Once the relay (or its ``parent``) is destroyed, callables are
dropped, with one log line.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

_log = logging.getLogger("daemon_client.gui")
Callback = Callable[[], object]
BINDINGS = ("PySide6", "PyQt6")
"""The Qt bindings :func:`qt_executor` can use, in order of preference (one already imported wins)."""


def _binding() -> tuple[Any, tuple[Any, Any]]:
    """``(QtCore, (Signal, Slot))`` of the first binding already imported, else the first importable."""
    names = [name for name in BINDINGS if name in sys.modules] + list(BINDINGS)
    errors = []
    for name in names:
        try:
            core = importlib.import_module(f"{name}.QtCore")
        except ImportError as exc:
            errors.append(f"{name}: {exc}")
            continue
        return core, (core.Signal, core.Slot) if hasattr(core, "Signal") else (core.pyqtSignal, core.pyqtSlot)
    raise ImportError("qt_executor needs PySide6 or PyQt6 (pip install 'daemon-client[qt]'); " + "; ".join(errors))


_relay_classes: dict[str, type] = {}


def _relay_class(core: Any, signal: Any, slot: Any) -> type:
    """A QObject subclass with a ``posted(object)`` signal and a ``deliver(object)`` slot that
    hands the object to ``self.sink``, made once per binding. The slot is the relay's own
    method, so a queued emission runs it on the relay's thread."""
    key = core.__name__
    if key not in _relay_classes:

        def deliver(self: Any, fn: object) -> None:
            self.sink(fn)

        namespace = {"posted": signal(object), "deliver": slot(object)(deliver)}
        _relay_classes[key] = type("DaemonClientRelay", (core.QObject,), namespace)
    return _relay_classes[key]


class QtExecutor:
    """A ``callback_executor`` that runs callables on a Qt thread; see :func:`qt_executor`."""

    def __init__(self, parent: Any = None) -> None:
        core, (signal, slot) = _binding()
        if parent is not None and parent.thread() != core.QThread.currentThread():
            raise ValueError("qt_executor(parent) must be called on the thread that owns parent")
        self.callback_thread = threading.current_thread()
        """The Qt thread (the one that made this executor); callbacks run on it."""
        self._stopped = threading.Event()
        self._dropped = 0  # a count for the log line (approximate across threads)
        self.relay = _relay_class(core, signal, slot)(parent)
        self.relay.sink = self._run
        self.relay.posted.connect(self.relay.deliver, core.Qt.ConnectionType.QueuedConnection)
        self.relay.destroyed.connect(self._on_destroyed)

    @property
    def stopped(self) -> bool:
        """True once the relay (or its parent) was destroyed: nothing runs any more."""
        return self._stopped.is_set()

    def __call__(self, fn: Callback) -> None:
        """Hand ``fn`` to the Qt thread. Any thread; never blocks."""
        if self._stopped.is_set():
            self._drop()
            return
        try:
            self.relay.posted.emit(fn)
        except RuntimeError:  # the C++ object was deleted between the check and the emit
            self._stopped.set()
            self._drop()

    def _run(self, fn: Callback) -> None:  # Qt thread, from the event loop
        if self._stopped.is_set():
            self._drop()
            return
        try:
            fn()
        except Exception:  # noqa: BLE001 - the client's callbacks isolate their own errors
            _log.exception("a callable handed to qt_executor raised")

    def _on_destroyed(self, *_args: object) -> None:
        self._stopped.set()

    def _drop(self) -> None:
        if self._dropped == 0:
            _log.info("the Qt relay is destroyed: dropping callbacks")
        self._dropped += 1


def qt_executor(parent: Any = None) -> QtExecutor:
    """A ``callback_executor`` that runs the client's callbacks on a Qt thread's event loop.

    Call it on the thread that runs the Qt event loop (usually the GUI thread, after
    ``QApplication`` exists), then pass it to the client:
    ``Client(url, callback_executor=qt_executor(window))``. Each callback is emitted through a
    queued signal to a relay object on that thread, so callbacks run there in order and may
    update widgets. With a ``parent`` (a ``QObject`` owned by the calling thread) the relay is
    destroyed with it, and later callbacks are dropped. Works with PySide6 (``pip install
    'daemon-client[qt]'``) and PyQt6. Waiting on that thread for callback-delivered work
    raises :class:`~daemon_client.errors.WouldDeadlock` instead of freezing the window.
    """
    return QtExecutor(parent)
