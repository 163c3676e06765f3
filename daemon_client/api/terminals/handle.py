"""``TerminalHandle``: one terminal of the daemon (``client.terminals.ref(id)``): input, size,
screen capture, kill, and live output through :meth:`TerminalHandle.stream`.

Every method runs on the caller's thread; the requesting ones block with a timeout (10 s by
default). Input is fire-and-forget (the daemon answers nothing, not even for an unknown
terminal): while this client streams the terminal it travels as a binary Input frame on the
stream's slot, otherwise as a ``terminal_input`` message (protocol.md 12.2.6).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import attrs

from daemon_client.errors import RequestTimeout, RpcError
from daemon_client.protocol.requests import terminals as terminals_requests
from daemon_client.protocol.terminal_frames import encode_input, encode_resize
from daemon_client.protocol.terminals import (
    TerminalCapture,
    TerminalInfo,
    TerminalList,
    TerminalState,
    encode_keys,
    parse_capture,
)
from daemon_client.runtime.context import RESULT_GRACE, ClientContext
from daemon_client.subscriptions.lifecycle import control_timeout
from daemon_client.subscriptions.terminal_output import DEFAULT_LIMIT, checked_limit
from daemon_client.subscriptions.terminal_streams import SUBSCRIBE_REQUEST, TerminalStream, TerminalStreamManager

Lister = Callable[[float | None], TerminalList]
"""Lists every terminal of the host (``refresh()`` looks its terminal up there)."""


def check_size(rows: object, cols: object) -> tuple[int, int]:
    """``(rows, cols)`` as positive integers; ``ValueError`` otherwise."""
    for name, value in (("rows", rows), ("cols", cols)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer of at least 1, got {value!r}")
    return rows, cols  # type: ignore[return-value]


class TerminalHandle:
    """A local reference to one terminal; creating it sends nothing."""

    def __init__(
        self,
        context: ClientContext,
        streams: TerminalStreamManager,
        lister: Lister,
        terminal_id: str,
        info: TerminalInfo | None = None,
    ) -> None:
        self.id = terminal_id
        self._context = context
        self._streams = streams
        self._lister = lister
        self._info = info

    def current(self) -> TerminalInfo | None:
        """The last description seen (from ``create``, ``list`` or ``refresh``); ``None`` before
        any and after :meth:`kill` or a ``refresh`` that found the terminal gone."""
        return self._info

    def note(self, info: TerminalInfo | None) -> None:
        """Record a description received elsewhere (called by the client); keeps a known ``cwd``
        when the new description has none (hosts without workspace terminals list no ``cwd``)."""
        known = self._info
        if info is not None and info.cwd is None and known is not None and known.cwd is not None:
            info = attrs.evolve(info, cwd=known.cwd)
        self._info = info

    def refresh(self, timeout: float | None = None) -> TerminalInfo | None:
        """List every terminal of the host and pick this one (there is no single-terminal
        read); ``None`` when it is gone."""
        found = next((t for t in self._lister(timeout).terminals if t.id == self.id), None)
        self.note(found)
        return self._info

    # ------------------------------------------------------------------ input
    def write(self, text: str) -> int:
        """Type ``text`` into the terminal as it is (``"\\r"`` is Enter); returns ``len(text)``.

        Does not wait for anything: the daemon neither answers nor reports errors. Raises
        ``NotConnected``/``ConnectionLost`` when it cannot be sent.
        """
        if not isinstance(text, str):
            raise TypeError(f"write() takes a str, not {type(text).__name__}")
        if text:
            slot = self._streams.slot_for(self.id)
            if slot is not None:
                self._context.send_binary(encode_input(slot, text))
            else:
                self._send_json({"type": "input", "data": text})
        return len(text)

    def send_keys(self, *keys: str) -> int:
        """Type the SDK's key tokens (``"Enter"``, ``"Tab"``, ``"Escape"``, ``"Space"``,
        ``"BSpace"``, ``"C-c"``, ``"C-d"``, ``"C-z"``, ``"C-l"``, ``"C-a"``, ``"C-e"``) and
        literal strings as one input: ``send_keys("ls -la", "Enter")`` types ``ls -la\\r``.
        Returns the length of the text sent."""
        for key in keys:
            if not isinstance(key, str):
                raise TypeError(f"send_keys() takes strings, not {type(key).__name__}")
        return self.write(encode_keys(keys))

    def resize(self, rows: int, cols: int) -> None:
        """Resize the terminal's PTY (fire-and-forget; the daemon skips a resize to the current size)."""
        rows, cols = check_size(rows, cols)
        slot = self._streams.slot_for(self.id)
        if slot is not None:
            self._context.send_binary(encode_resize(slot, rows, cols))
        else:
            self._send_json({"type": "resize", "rows": rows, "cols": cols})

    def _send_json(self, message: Mapping[str, Any]) -> None:
        self._context.send_message({"type": "terminal_input", "terminalId": self.id, "message": dict(message)})

    # ------------------------------------------------------------------ requests
    def capture(
        self,
        start: int | None = None,
        end: int | None = None,
        strip_ansi: bool = True,
        *,
        timeout: float | None = None,
    ) -> TerminalCapture:
        """Lines of scrollback followed by the screen (0-based, ``end`` inclusive; negative
        counts from the end, ``-1`` is the last line). An unknown terminal gives no lines: the
        daemon reports no error here (use ``refresh()`` to tell)."""
        message: dict[str, Any] = {"type": terminals_requests.CAPTURE.type, "terminalId": self.id}
        for name, value in (("start", start), ("end", end)):
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ValueError(f"{name} must be an integer, got {value!r}")
                message[name] = value
        message["stripAnsi"] = bool(strip_ansi)
        return parse_capture(self._context.request(message, timeout))

    def kill(self, *, timeout: float | None = None) -> None:
        """Kill the terminal's process. The daemon confirms even for a terminal already gone;
        raises ``RpcError`` only when it has no terminal support. ``current()`` is then ``None``."""
        request = terminals_requests.KILL.type
        payload = self._context.call(terminals_requests.KILL, {"terminalId": self.id}, timeout)
        if payload.get("success") is not True:
            raise RpcError(
                f"Failed to kill terminal {self.id}",
                code="request_failed",
                request_type=request,
                request_id=str(payload.get("requestId")) if payload.get("requestId") is not None else None,
            )
        self._info = None

    # ------------------------------------------------------------------ live output
    def stream(
        self,
        on_output: Callable[[str], object] | None = None,
        on_snapshot: Callable[[TerminalState], object] | None = None,
        on_exit: Callable[[], object] | None = None,
        on_error: Callable[[BaseException], object] | None = None,
        *,
        buffer_limit: int = DEFAULT_LIMIT,
        timeout: float | None = None,
    ) -> TerminalStream:
        """Stream the terminal's output; returns once the daemon has started it (see
        :class:`~daemon_client.TerminalStream` for the callbacks, ``output()`` and ``expect()``).

        ``buffer_limit``: characters of unread output kept for ``output()``/``expect()``
        (output not read yet counts its UTF-8 bytes, one per ASCII character; the oldest is
        dropped beyond it, one WARNING); ``0`` keeps none, for a stream that only
        ``on_output`` reads (``output()``/``expect()`` then raise ``ValueError``).

        Blocks up to ``timeout`` seconds (default 10). Raises ``RpcError`` when the daemon
        refuses (``"Terminal not found"``, no stream slot left) and ``RequestTimeout`` when no
        connection came up in time. The stream is restored after every reconnect by
        subscribing again; release it when done.
        """
        stream = self._streams.add(
            TerminalStream(
                self._streams,
                self.id,
                on_output=on_output,
                on_snapshot=on_snapshot,
                on_exit=on_exit,
                on_error=on_error,
                buffer_limit=checked_limit(buffer_limit),  # ValueError here, in either build
            ),
            timeout,
        )
        wait = control_timeout(SUBSCRIBE_REQUEST) if timeout is None else timeout
        try:
            stream.ready.result(wait + RESULT_GRACE)
        except FutureTimeout:
            stream.release()
            raise RequestTimeout(
                f"the stream of terminal {self.id} did not start within {wait:g} s",
                request_type=SUBSCRIBE_REQUEST,
                timeout=wait,
            ) from None
        except BaseException:
            stream.release()
            raise
        return stream

    def __repr__(self) -> str:
        name = self._info.name if self._info is not None else "?"
        return f"<TerminalHandle {self.id} {name!r}>"
