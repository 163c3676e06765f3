"""``Memo``: a value computed at most once, by whichever thread first needs it.

Used to parse a payload once when several consumers (callback jobs, a waiting caller)
share it. Thread-safe; the computation runs outside any lock of the caller.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Memo(Generic[T]):
    """``get()`` returns ``fn()``, computed once; an exception is kept and re-raised."""

    __slots__ = ("_error", "_fn", "_lock", "_state", "_value")

    def __init__(self, fn: Callable[[], T]) -> None:
        # Written once under _lock; _state is read without it (double-checked: set last).
        self._fn: Callable[[], T] | None = fn
        self._lock = threading.Lock()
        self._state = 0  # 0: not computed, 1: value, 2: error
        self._value: T | None = None
        self._error: BaseException | None = None

    def get(self) -> T:
        if self._state == 0:
            with self._lock:
                if self._state == 0:
                    fn = self._fn
                    assert fn is not None
                    try:
                        self._value = fn()
                        self._state = 1
                    except Exception as exc:  # noqa: BLE001 - kept and re-raised to every caller
                        self._error = exc
                        self._state = 2
                    self._fn = None
        if self._state == 2:
            assert self._error is not None
            raise self._error
        return self._value  # type: ignore[return-value]
