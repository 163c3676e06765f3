"""``daemon-client attach TERMINAL``: this terminal connected to one of the daemon's.

The local terminal is put in raw mode and switched to its alternate screen; the remote screen
is drawn from the stream's snapshot, then its output is written as it comes (from the client's
callback thread, under a lock). Keys typed go to the daemon as binary Input frames, and the
remote terminal takes this terminal's size at the start and on every ``SIGWINCH``. The detach
key (``Ctrl-]`` unless ``--detach-key`` says otherwise) ends the session and leaves the remote
terminal running; so does end of input. When the remote terminal exits the command ends too.
On the way out the terminal's modes and the previous screen are restored whatever happened.

Standard input must be a terminal (:func:`reads_keys`): piped input would be typed blind and the
screen escapes written to a file, so ``attach`` refuses it as a usage error (``terminals send``
and ``terminals tail`` are the scripting forms).

The main thread reads the keyboard (``select`` with a short timeout, so that the exit, the end
of ``--duration`` and resizes are noticed) and handles ``SIGWINCH`` through a flag.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import os
import select
import signal
import sys
import termios
import threading
import time
import tty
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, TextIO

from daemon_client.api.terminals.handle import TerminalHandle
from daemon_client.cli.terminals import Connect, find_terminal
from daemon_client.protocol.terminals import TerminalState

DEFAULT_DETACH_KEY = "^]"
ENTER_SCREEN = "\x1b[?1049h\x1b[H\x1b[2J"
"""Switch to the alternate screen and clear it."""
LEAVE_SCREEN = "\x1b[?1049l"
"""Back to the screen as it was before ``attach``."""


NOT_A_TERMINAL = (
    "attach needs a terminal on standard input (it reads raw keys); "
    "from a script use: daemon-client terminals send TERMINAL TEXT... (or terminals tail)"
)


def reads_keys(fd: int) -> bool:
    """Whether ``fd`` is a terminal, which ``attach`` can read keys from (``False`` for a bad one)."""
    return os.isatty(fd)


def parse_detach_key(text: str) -> bytes:
    """``^]``, ``^A`` or ``C-a`` (a control key), or one ASCII character, as the byte it types."""
    name = text[1:] if text.startswith("^") else text[2:] if text.lower().startswith("c-") else None
    if name is not None and len(name) == 1 and "@" <= name.upper() <= "_":
        return bytes([ord(name.upper()) ^ 0x40])
    if len(text) == 1 and ord(text) < 128:
        return text.encode()
    raise argparse.ArgumentTypeError(f"a detach key is ^X, C-x or one ASCII character, not {text!r}")


def draw(state: TerminalState) -> str:
    """The escape sequences that paint a snapshot: the screen's text and the cursor (no colours)."""
    rows = "\r\n".join(state.screen_lines())
    return f"\x1b[H\x1b[2J{rows}\x1b[{state.cursor.row + 1};{state.cursor.col + 1}H"


class Attachment:
    """One ``attach`` session; see the module docstring."""

    def __init__(self, handle: TerminalHandle, stdin_fd: int, out: TextIO, detach_key: bytes) -> None:
        self._handle = handle
        self._stdin = stdin_fd
        self._out = out
        self._detach_key = detach_key
        self._lock = threading.Lock()
        self._exited = threading.Event()
        self._resized = threading.Event()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._left = False

    def _write(self, text: str, *, leave: bool = False) -> None:
        """Write to the screen; once it was left (``leave``), late output of the stream is dropped."""
        with self._lock:
            if self._left:
                return
            self._left = leave
            self._out.write(text)
            self._out.flush()

    def _size(self) -> tuple[int, int] | None:
        try:
            columns, lines = os.get_terminal_size(self._out.fileno())
        except (OSError, ValueError):
            return None
        return (lines, columns) if lines > 0 and columns > 0 else None

    def run(self, duration: float | None) -> str:
        """Attach until detached, the remote exits, input ends or ``duration`` passes; says which."""
        with self._terminal_modes(), self._sigwinch():
            self._write(ENTER_SCREEN)
            try:
                return self._attached(duration)
            finally:
                self._write(LEAVE_SCREEN, leave=True)

    def _attached(self, duration: float | None) -> str:
        stream = self._handle.stream(
            on_output=self._write, on_snapshot=lambda state: self._write(draw(state)), on_exit=self._exited.set
        )
        with stream:
            self._resized.set()  # take this terminal's size now
            deadline = None if duration is None else time.monotonic() + duration
            while True:
                if self._exited.is_set():
                    return "exited"
                if deadline is not None and time.monotonic() >= deadline:
                    return "time is up"
                if self._resized.is_set():
                    self._resized.clear()
                    size = self._size()
                    if size is not None:
                        self._handle.resize(*size)
                ready, _, _ = select.select([self._stdin], [], [], 0.1)
                if not ready:
                    continue
                data = os.read(self._stdin, 4096)
                if not data:
                    return "end of input"
                before, key, _ = data.partition(self._detach_key)
                text = self._decoder.decode(before)
                if text:
                    self._handle.write(text)
                if key:
                    return "detached"

    @contextlib.contextmanager
    def _terminal_modes(self) -> Iterator[None]:
        saved: list[Any] | None = None
        with contextlib.suppress(termios.error):
            saved = termios.tcgetattr(self._stdin)
        try:
            if saved is not None:
                tty.setraw(self._stdin)
            yield
        finally:
            if saved is not None:
                termios.tcsetattr(self._stdin, termios.TCSADRAIN, saved)

    @contextlib.contextmanager
    def _sigwinch(self) -> Iterator[None]:
        def resized(signum: int, frame: FrameType | None) -> None:
            self._resized.set()

        previous: Callable[[int, FrameType | None], Any] | int | None = None
        on_main = threading.current_thread() is threading.main_thread()
        if on_main:
            previous = signal.signal(signal.SIGWINCH, resized)
        try:
            yield
        finally:
            if on_main:
                signal.signal(signal.SIGWINCH, previous)


def cmd_attach(args: argparse.Namespace, out: TextIO, connect: Connect) -> int:
    with connect(args) as client:
        handle = find_terminal(client, args.terminal)
        stdin = sys.stdin.fileno()
        reason = Attachment(handle, stdin, out, args.detach_key).run(args.duration)
        if reason != "exited":
            client.ping()  # what was typed last is written before the connection closes
        if reason == "exited":
            out.write(f"[terminal {handle.id} exited]\r\n")
        else:
            out.write(f"[{reason}: terminal {handle.id} keeps running]\r\n")
        out.flush()
    return 0
