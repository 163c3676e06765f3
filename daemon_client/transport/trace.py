"""The wire trace: a :class:`Transport` wrapper that records every frame in and out.

``Client(trace=...)`` (or ``DAEMON_CLIENT_TRACE=path``) wraps its transport factory with a
:class:`WireTrace`; each connection attempt's transport is then a :class:`TracingTransport`
around the real one. Without a trace nothing is wrapped: the reader calls the real
transport directly.

Lines follow the JSONL transcript format (``dir``, ``t``, ``conn``, then ``frame``, ``raw``,
``open``, ``close`` or ``abort``). A binary frame is ``{"binary": <length>, "hex": <its first
two bytes>, "payload": "omitted"}``: terminal input and output may carry what a person typed (a
password at a prompt), which no scrubbing can recognise. With ``binary_payloads`` (the client's
``trace_binary``) it is ``{"binary": <length>, "base64": ..}``, the payload in full.
Credentials never reach the output (:mod:`daemon_client.transport.trace_scrub`).

Threads: ``recv`` runs on the client's reader thread, ``send_text`` on any thread (behind
the client's send lock), ``close``/``abort`` on any thread. Each records through
:meth:`TraceSink.record`, which only queues; the sink's writer thread does the rest
(:mod:`daemon_client.transport.trace_sink`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable

from daemon_client._wire import WireFrame
from daemon_client.config import TRACE_BINARY_ENV, TRACE_ENV
from daemon_client.transport.base import (
    ConnectParams,
    FrameRejected,
    Transport,
    TransportClosed,
    TransportError,
)
from daemon_client.transport.trace_sink import TraceSink, TraceTarget, acquire_sink

__all__ = ["TRACE_ENV", "TraceTarget", "TracingTransport", "WireTrace", "open_trace"]

"""The environment variable naming a trace file for clients created without ``trace=``."""


class TracingTransport:
    """A :class:`Transport` that records its frames into a :class:`TraceSink`."""

    def __init__(self, inner: Transport, sink: TraceSink, *, binary_payloads: bool = False) -> None:
        self._inner = inner
        self._sink = sink
        self._binary = "binary" if binary_payloads else "binary_head"
        """How a binary frame is recorded: in full, or by its length and first two bytes."""
        self._conn: str | None = None
        self._ended = False
        self._lock = threading.Lock()

    @property
    def selected_subprotocol(self) -> str | None:
        return self._inner.selected_subprotocol

    def connect(self, params: ConnectParams) -> None:
        self._sink.secrets.add_carriers(params.url, params.headers, params.subprotocols)
        self._inner.connect(params)
        self._conn = self._sink.next_connection()
        opened = (params.url, tuple(params.subprotocols), self._inner.selected_subprotocol)
        self._sink.record(self._conn, "out", "open", opened)

    def send_text(self, text: str) -> None:
        if self._conn is not None:
            self._sink.record(self._conn, "out", "text", text)  # before it leaves: a reply is never logged first
        self._inner.send_text(text)

    def send_binary(self, data: bytes) -> None:
        if self._conn is not None:
            self._record_binary("out", data)
        self._inner.send_binary(data)

    def _record_binary(self, direction: str, data: bytes) -> None:
        assert self._conn is not None
        if self._binary == "binary":
            self._sink.record(self._conn, direction, "binary", data)
        else:  # the payload never enters the queue, so it cannot reach the file
            self._sink.record(self._conn, direction, "binary_head", (len(data), data[:2]))

    def recv(self) -> WireFrame:
        try:
            text = self._inner.recv()
        except FrameRejected as exc:
            self._note_rejected(exc)
            raise
        except TransportClosed as exc:
            self._end("in", exc.code, exc.reason)
            raise
        except TransportError:
            self._end("in", None, "")
            raise
        if self._conn is not None:
            if isinstance(text, bytes):
                self._record_binary("in", text)
            else:
                self._sink.record(self._conn, "in", "text", text)
        return text

    def _note_rejected(self, exc: FrameRejected) -> None:
        if self._conn is None:
            return
        if exc.binary:
            self._record_binary("in", exc.data or exc.preview)
        else:
            self._sink.record(self._conn, "in", "rejected", (exc.preview, str(exc)))

    def _end(self, direction: str, code: int | None, reason: str) -> None:
        """Record how the connection ended (once) and flush the trace."""
        with self._lock:
            if self._ended or self._conn is None:
                return
            self._ended = True
        conn = self._conn
        if code is None:
            self._sink.record(conn, direction, "abort", None)
        else:
            self._sink.record(conn, direction, "close", (code, reason))
            if direction == "in":  # the transport echoes the peer's close code
                self._sink.record(conn, "out", "close", (code, ""))
        self._sink.flush()

    def abort(self) -> None:
        self._end("out", None, "")
        self._inner.abort()

    def close(self, code: int = 1000, reason: str = "") -> None:
        self._end("out", code, reason)
        self._inner.close(code, reason)


class WireTrace:
    """One client's trace: wraps its transport factory and owns its share of the sink."""

    def __init__(
        self, target: TraceTarget, secrets: Iterable[str | None] = (), *, binary_payloads: bool = False
    ) -> None:
        self._sink = acquire_sink(target)
        self._sink.secrets.add(secrets)
        self._binary_payloads = binary_payloads
        self._closed = False

    def wrap(self, factory: Callable[[], Transport]) -> Callable[[], Transport]:
        """A transport factory whose transports record into this trace."""
        sink, binary_payloads = self._sink, self._binary_payloads

        def traced() -> Transport:
            return TracingTransport(factory(), sink, binary_payloads=binary_payloads)

        return traced

    def close(self, timeout: float = 5.0) -> None:
        """Write out what is queued and release the output (the last client closes the file).
        Idempotent; waits at most ``timeout`` for the writer."""
        if self._closed:
            return
        self._closed = True
        self._sink.release(timeout)


def open_trace(
    trace: TraceTarget | None, secrets: Iterable[str | None] = (), *, binary_payloads: bool | None = None
) -> WireTrace | None:
    """The trace of a new client: ``trace`` if given, else the file named by
    ``DAEMON_CLIENT_TRACE``, else ``None`` (no tracing, nothing wrapped). ``binary_payloads``:
    record binary frames in full; ``None``: when ``DAEMON_CLIENT_TRACE_BINARY`` is ``1``.

    Raises ``OSError`` when the file cannot be opened for writing.
    """
    if trace is None:
        trace = os.environ.get(TRACE_ENV) or None
        if trace is None:
            return None
    if isinstance(trace, (str, os.PathLike)) and not os.fspath(trace):
        raise ValueError("trace must be a file path or a writable text stream")
    if not isinstance(trace, (str, os.PathLike)) and not callable(getattr(trace, "write", None)):
        raise TypeError(f"trace must be a file path or a writable text stream, not {type(trace).__name__}")
    if binary_payloads is None:
        binary_payloads = os.environ.get(TRACE_BINARY_ENV, "").strip() == "1"
    return WireTrace(trace, secrets, binary_payloads=binary_payloads)
