"""``CallbackErrors``: what happens to an exception a user callback raised — logged with its
traceback, kept for ``raise_errors()`` in strict mode, and passed to ``on_callback_error`` — and
``call_isolated``, the one way a running job calls user code.

Reported on the thread that ran the callback (the callback thread, an executor's thread or the
thread in ``process_events()``); the kept errors are taken by any thread (``close()``,
``raise_callback_errors()``), under this object's lock, which is never held while calling out.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from daemon_client.errors import CallbackError


class CallbackErrors:
    """The callback errors of one dispatcher; see the module docstring."""

    def __init__(
        self, on_error: Callable[[BaseException], None] | None, *, strict: bool, logger: logging.Logger
    ) -> None:
        self._on_error = on_error
        self._strict = strict
        self._log = logger
        self._kept: list[BaseException] = []  # guarded by _lock
        self._lock = threading.Lock()

    def call_isolated(self, fn: Callable[..., object], *args: object) -> None:
        """Call one user callback inside a running job (the callback thread); what it raises is
        reported (:meth:`report`) and goes no further."""
        try:
            fn(*args)
        except BaseException as exc:  # noqa: BLE001 - isolation is the point
            self.report(exc, fn)

    def report(self, exc: BaseException, fn: object) -> None:
        """``fn`` raised ``exc``: log it, keep it in strict mode, pass it to ``on_callback_error``
        (whose own exception is logged and goes no further)."""
        self._log.error("callback %r raised", fn, exc_info=exc)
        if self._strict:
            with self._lock:
                self._kept.append(exc)
        if self._on_error is not None:
            try:
                self._on_error(exc)
            except BaseException:  # noqa: BLE001
                self._log.exception("on_callback_error raised")

    def raise_first(self) -> None:
        """Strict mode: raise :class:`CallbackError` for the first error kept so far (and forget
        them all)."""
        with self._lock:
            errors, self._kept = self._kept, []
        if errors:
            first = errors[0]
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            raise CallbackError(f"a callback raised {type(first).__name__}: {first}{more}") from first
