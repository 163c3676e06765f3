"""Keeping the client's own threads on one CPU, when the program asks for it
(``Client(thread_cpu=N)``; Linux only).

The reader and the callback thread hand the interpreter lock to each other; on two CPUs every
hand-over moves their working data between caches, on one it stays (docs/threading.md,
docs/benchmarks.md). The client never does this by itself: a CPU shared with another busy
process would slow its threads down with no way out.

Each thread of the client (reader, callback, writer, timer) calls :func:`pin_current_thread`
first thing, on itself.
"""

from __future__ import annotations

import logging
import os

_log = logging.getLogger("daemon_client.runtime.affinity")


def check_cpu(cpu: int | None) -> int | None:
    """``cpu`` if the client's threads can be kept on it; ``ValueError`` otherwise."""
    if cpu is None:
        return None
    if isinstance(cpu, bool) or not isinstance(cpu, int):
        raise ValueError(f"thread_cpu must be a CPU number or None, got {cpu!r}")
    if not hasattr(os, "sched_setaffinity"):
        raise ValueError("thread_cpu needs os.sched_setaffinity (Linux); this platform has none")
    allowed = os.sched_getaffinity(0)
    if cpu not in allowed:
        raise ValueError(f"thread_cpu={cpu} is not among the CPUs this process may use: {sorted(allowed)}")
    return cpu


def pin_current_thread(cpu: int | None) -> None:
    """On the calling thread: run only on ``cpu`` from now on (nothing when ``None``). A CPU
    taken away since the check is logged, and the thread runs where the system puts it."""
    if cpu is None:
        return
    try:
        os.sched_setaffinity(0, {cpu})
    except OSError as exc:
        _log.warning("could not keep this thread on CPU %d: %s", cpu, exc)
