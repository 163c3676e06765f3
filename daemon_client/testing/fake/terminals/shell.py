"""``ScriptedShell``: the deterministic program behind every terminal of the fake daemon, and its
screen. No process runs: input is interpreted here, output is produced at once, always the same.

The shell echoes what is typed (like a tty), shows the prompt ``fake$ `` (in bold), and knows:

==================  ===========================================================================
``echo TEXT``       prints ``TEXT`` (``$?`` is the last command's exit status)
``color TEXT``      prints ``TEXT`` in red (an SGR sequence around it)
``seq N``           prints 1 to N (N ≤ 10000), **one Output frame per line** (a long stream)
``true``/``false``  exit status 0 / 1
``sleep ...``       prints nothing and shows no prompt until ``C-c`` (``^C``, then the prompt;
                    status 130)
``title TEXT``      sets the terminal's title (``terminals_changed``)
``clear``           clears the screen (as ``C-l``)
``exit``            ends the shell (as ``C-d`` at an empty prompt, which also prints ``exit``)
anything else       ``fake-sh: NAME: command not found`` (status 127)
==================  ===========================================================================

Commands separated by ``;`` run one after the other on one line.

``BSpace`` (DEL) erases a character, other escape sequences typed are ignored. A resize
redraws the prompt line (``\\r ESC[K`` and the prompt), as bash does; a resize to the current
size does nothing. The screen is a list of raw lines (escape sequences kept) with the last
``rows`` of them on screen; :meth:`ScriptedShell.capture` and :meth:`ScriptedShell.snapshot`
read it as the daemon's headless terminal would. Not thread-safe: the fake's terminal store
calls it under its lock.
"""

from __future__ import annotations

import json
from typing import Any

from daemon_client.protocol.terminals import strip_ansi

__all__ = ["PROMPT", "Event", "ScriptedShell"]

PROMPT = "\x1b[1mfake$\x1b[0m "
"""What the shell prints before every command (``fake$ `` once escape sequences are removed)."""
MAX_SEQ = 10_000

Event = tuple[str, str]
"""``("output", text)`` (one Output frame), ``("title", text)`` or ``("exit", "")``."""

_CELL_FLAGS = ("bold", "italic", "underline", "dim", "inverse", "strikethrough")


class ScriptedShell:
    """The shell and screen of one fake terminal; see the module docstring."""

    def __init__(self, rows: int = 24, cols: int = 80, title: str = "fake-sh") -> None:
        self.rows = rows
        self.cols = cols
        self.title = title
        self.exited = False
        self.status = 0
        """The exit status of the last command (``$?``)."""
        self._line = ""  # typed, not yet entered
        self._sleeping = False
        self._escape = ""  # an escape sequence being typed
        self._lines: list[str] = [""]  # raw text; the last one holds the cursor
        self._screen_top = 0  # lines above it were cleared off the screen (scrollback)

    # ------------------------------------------------------------------ running
    def start(self) -> list[Event]:
        """The first output: the prompt."""
        events: list[Event] = []
        self._emit(events, PROMPT)
        return events

    def feed(self, text: str) -> list[Event]:
        """Interpret typed ``text``; the events it causes, in order (the output of one call is
        one frame, except for ``seq``)."""
        events: list[Event] = []
        pending = ""
        for char in text:
            if self.exited:
                break
            if self._escape or char == "\x1b":
                self._escape += char
                if (len(self._escape) == 2 and char != "[") or (len(self._escape) > 2 and "@" <= char <= "~"):
                    self._escape = ""  # a whole sequence typed (arrows ...): ignored
                continue
            if char == "\x03":  # C-c
                if self._sleeping:
                    self.status = 130
                self._line, self._sleeping = "", False
                pending += "^C\r\n" + PROMPT
            elif self._sleeping:
                pending += "\r\n" if char in "\r\n" else char
            elif char in "\r\n":
                line, self._line = self._line, ""
                pending = self._run(line, events, pending + "\r\n")
            elif char == "\x04":  # C-d
                if not self._line:
                    pending = self._emit(events, pending + "exit\r\n")
                    self._exit(events)
            elif char == "\x7f":
                if self._line:
                    self._line = self._line[:-1]
                    pending += "\b \b"
            elif char == "\x0c":  # C-l
                pending += "\x1b[H\x1b[2J" + PROMPT + self._line
            elif char == "\t" or char >= " ":
                self._line += char
                pending += char
        self._emit(events, pending)
        return events

    def _run(self, line: str, events: list[Event], pending: str) -> str:
        """Run one entered line (commands separated by ``;``); returns the output still to send
        (after ``pending``)."""
        for command in line.split(";"):
            name, _, rest = command.strip().partition(" ")
            rest = rest.strip().replace("$?", str(self.status))
            if not name:
                continue
            if name == "sleep":
                self._sleeping = True  # the rest of the line is dropped, as after C-c
                return pending
            if name == "exit":
                self._emit(events, pending)
                self._exit(events)
                return ""
            pending = self._command(name, rest, events, pending)
        return pending + PROMPT

    def _command(self, name: str, rest: str, events: list[Event], pending: str) -> str:
        self.status = 0
        if name == "echo":
            return pending + rest + "\r\n"
        if name == "color":
            return pending + f"\x1b[31m{rest}\x1b[0m\r\n"
        if name in ("true", "false"):
            self.status = int(name == "false")
            return pending
        if name == "seq":
            if not rest.isdigit() or int(rest) > MAX_SEQ:
                self.status = 1
                return pending + f"seq: invalid argument: {rest!r}\r\n"
            self._emit(events, pending)
            for number in range(1, int(rest) + 1):
                self._emit(events, f"{number}\r\n")
            return ""
        if name == "title":
            self.title = rest
            events.append(("title", rest))
            return pending
        if name == "clear":
            return pending + "\x1b[H\x1b[2J"
        self.status = 127
        return pending + f"fake-sh: {name}: command not found\r\n"

    def _exit(self, events: list[Event]) -> None:
        self.exited = True
        events.append(("exit", ""))

    def end(self) -> None:
        """The process is gone (killed): no more input is read."""
        self.exited = True

    def resize(self, rows: int, cols: int) -> list[Event]:
        """A new size; the prompt line is redrawn (nothing happens for the current size)."""
        if (rows, cols) == (self.rows, self.cols) or self.exited:
            return []
        self.rows, self.cols = rows, cols
        events: list[Event] = []
        if not self._sleeping:
            self._emit(events, "\r\x1b[K" + PROMPT + self._line)
        return events

    def _emit(self, events: list[Event], text: str) -> str:
        """Append ``text`` as one Output frame (unless empty) and to the screen; returns ``""``."""
        if text:
            events.append(("output", text))
            self._apply(text)
        return ""

    # ------------------------------------------------------------------ the screen
    def _apply(self, text: str) -> None:
        position = 0
        while position < len(text):
            char = text[position]
            if char == "\x1b":
                sequence = _sequence_at(text, position)
                if sequence == "\x1b[K":
                    self._lines[-1] = ""
                elif sequence == "\x1b[2J":
                    self._screen_top = len(self._lines) - 1
                elif sequence != "\x1b[H":
                    self._lines[-1] += sequence  # colours stay in the raw line
                position += len(sequence)
                continue
            if char == "\n":
                self._lines.append("")
            elif char == "\r":
                if text[position + 1 : position + 2] not in ("\n", "\x1b"):
                    self._lines[-1] = ""
            elif char == "\b":
                if text[position : position + 3] == "\b \b":
                    self._lines[-1] = _drop_last_visible(self._lines[-1])
                    position += 3
                    continue
            else:
                if len(strip_ansi(self._lines[-1])) >= self.cols:
                    self._lines.append("")
                self._lines[-1] += char
            position += 1

    def _split(self) -> tuple[list[str], list[str]]:
        start = max(self._screen_top, len(self._lines) - self.rows)
        screen = self._lines[start:]
        return self._lines[:start], screen + [""] * (self.rows - len(screen))

    def capture(self, start: int | None, end: int | None, strip: bool) -> tuple[list[str], int]:
        """``capture_terminal_request``: (lines, totalLines) as the daemon numbers them."""
        scrollback, screen = self._split()
        lines = [(strip_ansi(line) if strip else line).rstrip() for line in scrollback + screen]
        total = len(lines)
        first = _index(start, total, 0)
        last = _index(end, total, total - 1)
        return (lines[first : last + 1] if first <= last else []), total

    def snapshot(self) -> bytes:
        """A Snapshot frame's payload: every cell spelled out, as 0.1.65 sends it."""
        scrollback, screen = self._split()
        cursor_row = min(len(self._lines) - 1 - max(self._screen_top, len(self._lines) - self.rows), self.rows - 1)
        state: dict[str, Any] = {
            "rows": self.rows,
            "cols": self.cols,
            "grid": [self._cells(line) for line in screen],
            "scrollback": [self._cells(line) for line in scrollback],
            "cursor": {"row": max(0, cursor_row), "col": min(len(strip_ansi(self._lines[-1])), self.cols - 1)},
            "title": self.title,
        }
        return json.dumps(state, separators=(",", ":")).encode("utf-8")

    def _cells(self, line: str) -> list[dict[str, Any]]:
        text = strip_ansi(line)[: self.cols].ljust(self.cols)
        return [{"char": char, **dict.fromkeys(_CELL_FLAGS, False)} for char in text]


def _sequence_at(text: str, position: int) -> str:
    """The escape sequence starting at ``position`` (as much of it as is there)."""
    if text[position + 1 : position + 2] != "[":
        return text[position : position + 2]
    end = position + 2
    while end < len(text) and not "@" <= text[end] <= "~":
        end += 1
    return text[position : end + 1]


def _drop_last_visible(line: str) -> str:
    visible = strip_ansi(line)
    return line[: line.rfind(visible[-1])] if visible else line


def _index(value: int | None, total: int, default: int) -> int:
    if value is None:
        return default
    if value < 0:
        value += total
    return max(0, min(value, total - 1)) if total else 0
