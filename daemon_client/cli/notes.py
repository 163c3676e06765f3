"""Standard error of one command run: the error line, notes, progress and log records.

Every line starts with ``daemon-client: ``. The error line is always printed; notes (where
the daemon was found, a connection dropped or came back, the ID of a new agent) are
silenced by ``-q``; progress is drawn only when standard error is a terminal, in place, and
is erased before anything else is written. Any thread may write (one lock); writing never
raises and never dies on encoding.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TextIO

from daemon_client.cli.output import fix_surrogates

PREFIX = "daemon-client: "


class Notes:
    """The command's standard error (see the module docstring)."""

    def __init__(self, stream: TextIO, *, quiet: bool = False) -> None:
        self._stream = stream
        self._quiet = quiet
        self._lock = threading.Lock()
        self._progress = False
        try:
            self._tty = bool(stream.isatty())
        except (ValueError, OSError):
            self._tty = False
        encoding = getattr(stream, "encoding", None)
        self._encoding = encoding if isinstance(encoding, str) else None

    @property
    def quiet(self) -> bool:
        return self._quiet

    @property
    def shows_progress(self) -> bool:
        """Progress is drawn only on a terminal, and not with ``-q``."""
        return self._tty and not self._quiet

    def _safe(self, text: str) -> str:
        text = fix_surrogates(text)
        if self._encoding is not None:
            with contextlib.suppress(LookupError):
                text = text.encode(self._encoding, "replace").decode(self._encoding)
        return text

    def _write_locked(self, text: str) -> None:
        if self._progress:
            text = "\r\x1b[K" + text
            self._progress = False
        with contextlib.suppress(OSError, ValueError):
            self._stream.write(self._safe(text))
            self._stream.flush()

    def error(self, message: str) -> None:
        """The one error line of a failed command; always printed."""
        with self._lock:
            self._write_locked(PREFIX + message + "\n")

    def note(self, message: str) -> None:
        """An informational line; silenced by ``-q``."""
        if self._quiet:
            return
        with self._lock:
            self._write_locked(PREFIX + message + "\n")

    def raw(self, text: str) -> None:
        """A preformatted line (a log record); printed as given."""
        with self._lock:
            self._write_locked(text if text.endswith("\n") else text + "\n")

    def progress(self, text: str) -> None:
        """Redraw the progress line (terminal only)."""
        if not self.shows_progress:
            return
        with self._lock:
            with contextlib.suppress(OSError, ValueError):
                self._stream.write(self._safe("\r\x1b[K" + text))
                self._stream.flush()
            self._progress = True

    def clear_progress(self) -> None:
        """Erase the progress line, if one is drawn."""
        with self._lock:
            if self._progress:
                with contextlib.suppress(OSError, ValueError):
                    self._stream.write("\r\x1b[K")
                    self._stream.flush()
                self._progress = False
