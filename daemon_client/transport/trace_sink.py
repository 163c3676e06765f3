"""Where a wire trace goes: one JSONL output written by one writer thread.

The transport wrapper (:mod:`daemon_client.transport.trace`) hands every event to
:meth:`TraceSink.record`, which costs the calling thread (the client's reader, or a sender)
one clock read and one queue put: no JSON, no I/O, no lock held while writing. The
**writer thread** (``daemon-client-trace-<n>``) decodes the frame, scrubs credentials
(:mod:`daemon_client.transport.trace_scrub`), formats the line and writes batches; it flushes
when its queue runs dry, when a connection ends (so a reconnect never leaves the previous
connection's lines in a buffer) and on close. A writer thread was chosen over buffered
writes on the reader thread because a slow disk or a blocked stream (a pipe nobody reads)
must never stall the reader.

Sinks are shared per output: every client tracing to the same path (``DAEMON_CLIENT_TRACE``
in a process with several clients) writes into one file with connection names ``c1``,
``c2`` ... numbered across them, so the file replays connection by connection. A sink ends
when its last user releases it; a stream passed by the caller is flushed, never closed. A
path is truncated the first time a process traces to it; a later client of the same process
appends, continuing the clock and the connection numbers.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import logging
import os
import queue
import threading
import time
from typing import IO, Any

from daemon_client import _nesting as nesting
from daemon_client.transport.trace_scrub import REDACTED, Secrets

__all__ = ["TraceSink", "TraceTarget", "acquire_sink"]

TraceTarget = str | os.PathLike[str] | IO[str]
"""A path, or a writable text stream."""

_log = logging.getLogger("daemon_client.transport.trace")
_FLUSH = object()
_STOP = object()
_numbers = itertools.count(1)
_sinks_lock = threading.Lock()
_sinks: dict[str, TraceSink] = {}
_history: dict[str, tuple[int, float]] = {}
"""Per path written by this process: connections numbered so far, and when the trace began."""
_BATCH = 256


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class TraceSink:
    """One trace output and its writer thread (see the module docstring)."""

    def __init__(self, target: TraceTarget, *, key: str | None = None) -> None:
        self._key = key
        self.secrets = Secrets()
        numbered, started = _history.get(key, (0, time.monotonic())) if key is not None else (0, time.monotonic())
        self._started = started
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._numbered = numbered
        self._connections = itertools.count(numbered + 1)
        self._users = 0
        self._lock = threading.Lock()
        if isinstance(target, (str, os.PathLike)):
            mode = "a" if key is not None and key in _history else "w"
            self._stream: IO[str] = open(target, mode, encoding="utf-8")  # noqa: SIM115 - closed by the writer
            self._owned = True
        else:
            self._stream = target
            self._owned = False
        self._thread = threading.Thread(target=self._run, name=f"daemon-client-trace-{next(_numbers)}", daemon=True)
        self._thread.start()

    # -- any thread ----------------------------------------------------------------------------
    def next_connection(self) -> str:
        """A new connection name (``c1``, ``c2`` ...), unique within this output."""
        with self._lock:
            self._numbered = next(self._connections)
            return f"c{self._numbered}"

    def record(self, conn: str, direction: str, kind: str, value: Any) -> None:
        """Queue one event; ``kind`` is ``text``, ``binary``, ``binary_head``, ``open``, ``close``,
        ``abort`` or ``rejected``. Never blocks and never raises."""
        self._queue.put((time.monotonic() - self._started, conn, direction, kind, value))

    def flush(self) -> None:
        """Ask the writer to write and flush everything queued so far."""
        self._queue.put(_FLUSH)

    def acquire(self) -> TraceSink:
        with self._lock:
            self._users += 1
        return self

    def release(self, timeout: float) -> None:
        """One user is done; the last one stops the writer (bounded join) and closes the file."""
        with _sinks_lock, self._lock:
            self._users -= 1
            last = self._users <= 0
            if last and self._key is not None and _sinks.get(self._key) is self:
                del _sinks[self._key]
                _history[self._key] = (self._numbered, self._started)
        if not last:
            self.flush()
            return
        self._queue.put(_STOP)
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    # -- writer thread -------------------------------------------------------------------------
    def _run(self) -> None:
        pending: list[str] = []
        try:
            while True:
                item = self._queue.get()
                while True:
                    if item is _STOP:
                        self._write(pending, flush=True)
                        return
                    if item is _FLUSH:
                        self._write(pending, flush=True)
                    else:
                        pending.append(self._line(*item))
                        if len(pending) >= _BATCH:
                            self._write(pending, flush=False)
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                self._write(pending, flush=True)  # the queue ran dry
        finally:
            if self._owned:
                with contextlib.suppress(OSError):
                    self._stream.close()

    def _write(self, pending: list[str], *, flush: bool) -> None:
        try:
            if pending:
                self._stream.write("".join(pending))
                pending.clear()
            if flush:
                self._stream.flush()
        except (OSError, ValueError) as exc:  # a full disk or a closed stream: tracing stops, the client goes on
            pending.clear()
            _log.warning("wire trace: cannot write: %s", exc)

    def _line(self, t: float, conn: str, direction: str, kind: str, value: Any) -> str:
        head = f'{{"dir":"{direction}","t":{t:.3f},"conn":{_json(conn)},'
        try:
            body = self._body(kind, value)
        except Exception as exc:  # noqa: BLE001 - one unwritable event must not end the trace
            body = f'"raw":{_json(REDACTED)},"error":{_json(type(exc).__name__)}'
        return head + body + "}\n"

    def _body(self, kind: str, value: Any) -> str:
        secrets = self.secrets
        if kind == "text":
            try:
                decoded = nesting.loads(value, "a traced frame")  # too deep: recorded as raw text
            except ValueError:
                return f'"raw":{_json(secrets.text(value))}'
            return f'"frame":{_json(secrets.value(decoded))}'
        if kind == "binary":
            data: bytes = value
            return f'"frame":{{"binary":{len(data)},"base64":"{base64.b64encode(data).decode("ascii")}"}}'
        if kind == "binary_head":
            length, head = value
            return f'"frame":{{"binary":{length},"hex":"{head.hex()}","payload":"omitted"}}'
        if kind == "open":
            url, subprotocols, selected = value
            offered = [secrets.subprotocol(p) for p in subprotocols] or None
            opened = {
                "path": secrets.url_path(url),
                "subprotocols": offered,
                "status": 101,
                "selectedSubprotocol": secrets.subprotocol(selected),
            }
            return f'"open":{_json(opened)}'
        if kind == "close":
            code, reason = value
            return f'"close":{_json({"code": code, "reason": secrets.text(reason or "")})}'
        if kind == "abort":
            return '"abort":"tcp"'
        preview, reason = value  # rejected: a text frame the transport refused (bad UTF-8, too large)
        shown = secrets.text(preview.decode("utf-8", errors="replace"))
        return f'"raw":{_json(shown)},"rejected":{_json(secrets.text(reason))}'


def acquire_sink(target: TraceTarget) -> TraceSink:
    """The sink of ``target``: shared with other clients tracing to the same path, new for a
    stream. The caller must :meth:`~TraceSink.release` it."""
    if not isinstance(target, (str, os.PathLike)):
        return TraceSink(target).acquire()
    key = os.path.abspath(os.fspath(target))
    with _sinks_lock:
        sink = _sinks.get(key)
        if sink is None:
            sink = TraceSink(key, key=key)
            _sinks[key] = sink
        return sink.acquire()
