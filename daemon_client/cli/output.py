"""Standard output of one command run: the data a script reads, safe from any thread.

Commands write their result from the main thread; live views write from the client's
callback thread. :class:`Output` serialises both under one lock, never raises into the
writer, and never dies on encoding: text is made encodable for the stream (lone UTF-16
surrogates joined or replaced, other characters the stream cannot encode replaced). When the
reader goes away (``EPIPE``, as after ``| head -1``) it sets :attr:`Output.broken`, points the
file descriptor at ``/dev/null`` so that nothing fails at exit, and drops later writes; the
main thread sees ``broken`` and ends the command with status 0. A command that has nothing to
write for a while asks :meth:`Output.reader_gone` on every tick of its wait: the descriptor is
polled (``POLLERR``/``POLLHUP``: the read end of the pipe closed), so ``| head -1`` ends it at
once rather than at its next write. After :meth:`Output.seal`
(the command is ending) writes are dropped too, so the result stays the last thing written.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import threading
from typing import Any, Protocol, TextIO

_HIGH_SURROGATES = ("\ud800", "\udbff")


class Writer(Protocol):
    """What the renderers write to: an :class:`Output`, a ``TextIO``, or a screen buffer."""

    def write(self, text: str, /) -> object: ...

    def flush(self) -> None: ...


def fix_surrogates(text: str) -> str:
    """``text`` with surrogate pairs joined into their characters and lone surrogates replaced."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


class TextJoiner:
    """Joins streamed chunks before they are encoded: a chunk ending in the first half of a
    surrogate pair (a character split between two chunks) keeps that half for the next one."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, chunk: str) -> str:
        """The text of ``chunk`` that can be written now."""
        text = self._held + chunk
        if text and _HIGH_SURROGATES[0] <= text[-1] <= _HIGH_SURROGATES[1]:
            text, self._held = text[:-1], text[-1]
        else:
            self._held = ""
        return fix_surrogates(text)

    def end(self) -> str:
        """What is held back when the message ends (a replacement character, or nothing)."""
        held, self._held = self._held, ""
        return fix_surrogates(held)


def json_text(value: Any, *, pretty: bool = False) -> str:
    """One JSON document (ASCII only, so any terminal encoding can carry it)."""
    return json.dumps(value, indent=2 if pretty else None, sort_keys=True, default=str)


class Output:
    """The command's standard output (see the module docstring)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._sealed = False
        self.broken = threading.Event()
        """Set once the reader closed the pipe."""
        encoding = getattr(stream, "encoding", None)
        self._encoding = encoding if isinstance(encoding, str) and encoding.lower().replace("-", "") != "utf8" else None
        try:
            self._tty = bool(stream.isatty())
        except (ValueError, OSError):
            self._tty = False
        self._fd: int | None = None
        with contextlib.suppress(AttributeError, OSError, ValueError):  # a stream without one (tests)
            self._fd = stream.fileno()

    @property
    def stream(self) -> TextIO:
        """The underlying stream, for commands that drive a terminal themselves (``attach``)."""
        return self._stream

    def isatty(self) -> bool:
        return self._tty

    def encodes(self, text: str) -> bool:
        """Whether the stream can carry ``text`` unchanged."""
        if self._encoding is None:
            return True
        try:
            text.encode(self._encoding)
        except (UnicodeEncodeError, LookupError):
            return False
        return True

    def _encodable(self, text: str) -> str:
        text = fix_surrogates(text)
        if self._encoding is not None:
            with contextlib.suppress(LookupError):
                text = text.encode(self._encoding, "replace").decode(self._encoding)
        return text

    def write(self, text: str) -> None:
        """Write and flush ``text``; any thread. Dropped once broken or sealed."""
        if not text:
            return
        text = self._encodable(text)
        with self._lock:
            if self._sealed:
                return
            try:
                self._stream.write(text)
                self._stream.flush()
            except OSError as exc:
                if isinstance(exc, BrokenPipeError) or exc.errno in (errno.EPIPE, errno.ECONNRESET):
                    self._break()
                else:
                    raise
            except ValueError:  # the stream was closed under us: nobody reads any more
                self._break()

    def flush(self) -> None:
        """Nothing to do: every write is flushed."""

    def line(self, text: str) -> None:
        self.write(text + "\n")

    def json_line(self, value: Any) -> None:
        """One JSON document on one line (watching and tailing)."""
        self.write(json_text(value) + "\n")

    def json_document(self, value: Any) -> None:
        """One indented JSON document (a listing or a result)."""
        self.write(json_text(value, pretty=True) + "\n")

    def reader_gone(self) -> bool:
        """Whether the reader went away: a write failed, or the descriptor reports the read end
        closed (polled without blocking). Any thread; the first to see it breaks the output."""
        if self.broken.is_set():
            return True
        if self._fd is None or not hasattr(select, "poll"):
            return False
        try:
            poller = select.poll()
            poller.register(self._fd, 0)  # no event asked for: only errors and hang-ups are reported
            events = poller.poll(0)
        except (OSError, ValueError):
            return False
        if not any(mask & (select.POLLERR | select.POLLHUP) for _, mask in events):
            return False
        with self._lock:
            if not self.broken.is_set():
                self._break()
        return True

    def seal(self) -> None:
        """Drop every later write (the command is ending); any thread."""
        with self._lock:
            self._sealed = True

    def _break(self) -> None:
        self._sealed = True
        self.broken.set()
        with contextlib.suppress(OSError, ValueError, AttributeError):
            fd = self._stream.fileno()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fd)
            os.close(devnull)
