"""``RecordingHandler``: a callback that records what it receives, for tests.

Called on the client's callback thread; ``wait_for`` is called on the test's thread and
raises :class:`~daemon_client.errors.WouldDeadlock` if called on a thread that delivers
to this handler (it would wait for itself).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from daemon_client.errors import WouldDeadlock

T = TypeVar("T")


class RecordingHandler(Generic[T]):
    """Records every call. A single positional argument is stored as is, several as a tuple."""

    def __init__(self, name: str = "handler") -> None:
        self.name = name
        self._items: list[T] = []
        self._cond = threading.Condition()
        self._delivering: set[int] = set()

    def __call__(self, *args: Any) -> None:
        item: T = args[0] if len(args) == 1 else args  # type: ignore[assignment]
        with self._cond:
            self._delivering.add(threading.get_ident())
            self._items.append(item)
            self._cond.notify_all()

    @property
    def items(self) -> list[T]:
        """A copy of everything recorded so far, in order."""
        with self._cond:
            return list(self._items)

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)

    def clear(self) -> None:
        with self._cond:
            self._items.clear()

    def wait_for(
        self, count: int = 1, *, predicate: Callable[[T], bool] | None = None, timeout: float = 5.0
    ) -> list[T]:
        """Wait until ``count`` recorded items match ``predicate``; return the matching items.

        Raises ``TimeoutError`` (saying what was recorded) when they do not arrive in time.
        """
        if threading.get_ident() in self._delivering:
            raise WouldDeadlock(f"{self.name}.wait_for() called on the thread that delivers its calls")
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                matching = [item for item in self._items if predicate is None or predicate(item)]
                if len(matching) >= count:
                    return matching
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"{self.name}: {len(matching)} of {count} expected items after {timeout:g} s; "
                        f"recorded: {self._items[-10:]!r}"
                    )
                self._cond.wait(remaining)
