"""Thread-leak checks for tests: nothing a client started may outlive ``close()``.

One kind of thread is allowed to: a name-lookup thread of
:mod:`daemon_client.transport.resolver` that is still inside ``getaddrinfo`` for a connect that
stopped waiting (``close()`` or the connect deadline ended it). ``getaddrinfo`` cannot be
interrupted, so such a thread ends only when the system resolver answers; the resolver bounds
how many there are. A thread is allowed only while its resolver reports it as in such an
abandoned lookup (:func:`~daemon_client.transport.resolver.abandoned_threads`), never by its name.

Runs on the test's thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from daemon_client.transport.resolver import abandoned_threads


def live_threads() -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if thread.is_alive()}


def assert_no_new_threads(before: set[threading.Thread], timeout: float = 5.0) -> None:
    """Fail if threads that were not in ``before`` are still alive after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        leaked = sorted(thread.name for thread in live_threads() - before - set(abandoned_threads()))
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
