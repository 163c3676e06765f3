"""Thread-leak checks for tests: nothing a client started may outlive ``close()``.

Runs on the test's thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


def live_threads() -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if thread.is_alive()}


def assert_no_new_threads(before: set[threading.Thread], timeout: float = 5.0) -> None:
    """Fail if threads that were not in ``before`` are still alive after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        leaked = sorted(thread.name for thread in live_threads() - before)
        if not leaked:
            return
        if time.monotonic() >= deadline:
            raise AssertionError(f"threads outlived close(): {', '.join(leaked)}")
        time.sleep(0.01)


@contextmanager
def no_leaked_threads(timeout: float = 5.0) -> Iterator[None]:
    """Context manager: every thread started inside must have ended shortly after it."""
    before = live_threads()
    yield
    assert_no_new_threads(before, timeout)
