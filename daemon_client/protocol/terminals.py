"""attrs models of the daemon's terminals (protocol.md 12.2), the ``sendKeys`` key tokens and
the removal of ANSI escape sequences. Pure data and pure functions.

Every model is read leniently (:mod:`daemon_client.protocol.lenient`): a field of an unexpected
shape keeps its default and is kept raw in ``extra_fields``, unknown keys too, and a list entry
without its identity (a terminal without ``id``) is skipped with one WARNING.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from daemon_client.errors import ProtocolError
from daemon_client.protocol.codec import loads, structure


@attrs.frozen
class TerminalInfo:
    """One terminal (``create_terminal_response.terminal``, list and ``terminals_changed`` entries).

    ``cwd`` is absent from list entries of hosts without ``features.workspaceTerminals``
    (0.1.65 sends it only in the create reply); ``workspace_id`` exists on those hosts only.
    ``title`` is set by the daemon from the running process or the shell's title escape.
    """

    id: str
    name: str = ""
    cwd: str | None = None
    title: str | None = None
    workspace_id: str | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class TerminalList:
    """``terminals.list()``: ``list_terminals_response`` (``cwd`` echoed only when filtered by it)."""

    terminals: tuple[TerminalInfo, ...] = ()
    cwd: str | None = None
    workspace_id: str | None = None
    request_id: str | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class TerminalsChanged:
    """``terminals_changed``: the full list of one directory's terminals, never a diff; the same
    content may arrive twice in a row. ``workspace_id`` is set when the daemon tags the push with
    the workspace a subscription named."""

    cwd: str
    terminals: tuple[TerminalInfo, ...] = ()
    workspace_id: str | None = None
    subscription_id: str | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class TerminalCapture:
    """``capture()``: lines of scrollback followed by the screen, trailing blanks trimmed per row.

    The daemon reports no error here: an unknown terminal gives ``lines=()`` and ``total_lines=0``.
    """

    terminal_id: str
    lines: tuple[str, ...] = ()
    total_lines: int = 0
    request_id: str | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class TerminalCell:
    """One cell of a snapshot; colour fields are absent (``None``) for default colours."""

    char: str = ""
    fg: int | None = None
    bg: int | None = None
    fg_mode: int | None = None
    bg_mode: int | None = None
    bold: bool = False
    italic: bool = False
    underline: bool = False
    dim: bool = False
    inverse: bool = False
    strikethrough: bool = False
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class TerminalCursor:
    """The cursor of a snapshot: 0-based ``row`` and ``col`` on the screen (``grid``)."""

    row: int = 0
    col: int = 0
    hidden: bool = False
    style: str | None = None
    blink: bool = False
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)


@attrs.frozen
class TerminalState:
    """A Snapshot frame: the whole screen (``grid``, ``rows`` × ``cols``) and the ``scrollback``
    above it, as rows of cells. Each snapshot replaces the previous one entirely."""

    rows: int = 0
    cols: int = 0
    grid: tuple[tuple[TerminalCell, ...], ...] = ()
    scrollback: tuple[tuple[TerminalCell, ...], ...] = ()
    cursor: TerminalCursor = attrs.field(factory=TerminalCursor)
    title: str | None = None
    extra_fields: Mapping[str, Any] = attrs.field(factory=dict, repr=False)

    def screen_lines(self) -> list[str]:
        """The screen's rows as text, trailing blanks trimmed (blank rows included)."""
        return [_row_text(row) for row in self.grid]

    def lines(self) -> list[str]:
        """Scrollback followed by the screen, as ``capture()`` numbers them."""
        return [_row_text(row) for row in self.scrollback] + self.screen_lines()

    def text(self) -> str:
        """The screen as one string, rows joined with ``\\n`` and trailing blank rows dropped."""
        return "\n".join(self.screen_lines()).rstrip("\n")


def _row_text(row: Iterable[TerminalCell]) -> str:
    return "".join(cell.char or " " for cell in row).rstrip()


def parse_terminal_state(data: bytes | str) -> TerminalState:
    """A Snapshot frame's payload (UTF-8 JSON) → :class:`TerminalState`; ``ProtocolError`` if
    it is not a JSON object."""
    try:
        value = loads(data)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"unreadable terminal snapshot ({len(data)} bytes): {exc}") from None
    return structure(value, TerminalState)


def parse_terminal_list(payload: Mapping[str, Any]) -> TerminalList:
    return structure(payload, TerminalList)


def parse_terminals_changed(payload: Mapping[str, Any]) -> TerminalsChanged:
    return structure(payload, TerminalsChanged)


def parse_capture(payload: Mapping[str, Any]) -> TerminalCapture:
    return structure(payload, TerminalCapture)


# ------------------------------------------------------------------------------ input

KEY_TOKENS: Mapping[str, str] = {
    "Enter": "\r",
    "Tab": "\t",
    "Escape": "\x1b",
    "Space": " ",
    "BSpace": "\x7f",
    "C-c": "\x03",
    "C-d": "\x04",
    "C-z": "\x1a",
    "C-l": "\x0c",
    "C-a": "\x01",
    "C-e": "\x05",
}
"""The key tokens of the SDK's ``sendKeys``: exactly these; any other string is sent literally."""


def encode_keys(keys: Iterable[str]) -> str:
    """The input text of ``send_keys``: each token replaced by its bytes, the rest literal."""
    return "".join(KEY_TOKENS.get(key, key) for key in keys)


_STRING_BODY = r"[^\x07\x18\x1a\x1b]*"
"""The body of a string sequence: anything up to its terminator. As in a terminal's parser, an
ESC always ends it (``ESC \\`` is ST; any other ESC abandons the string and begins a new
sequence), and CAN or SUB cancel it; no part of the body is ever shown."""

_ANSI = re.compile(
    r"\x1b(?:"
    r"\[[0-?]*[ -/]*(?:[@-~]|\Z)"  # CSI: cursor moves, colours, modes (ESC [ ... final)
    r"|[\]PX^_]" + _STRING_BODY + r"(?:\x07|\x1b\\|[\x18\x1a]|(?=\x1b)|\Z)"
    # strings: OSC (ESC ]: titles, links), DCS (ESC P), SOS (ESC X), PM (ESC ^), APC (ESC _),
    # ended by BEL or ST (ESC \\), abandoned at another ESC, cancelled by CAN/SUB
    r"|[ -/]*(?:[0-~]|\Z)"  # every other escape, with intermediates (charsets, keypad modes)
    r")"
)
"""One escape sequence. The ``\\Z`` branches take a sequence cut short by the end of the text
whole, so that :func:`strip_ansi` never shows a part of one; :func:`incomplete_escape_at` tells
such an end apart."""

_STILL_ARRIVING = re.compile(r"\x1b(?:\[[0-?]*[ -/]*|[\]PX^_]" + _STRING_BODY + r"|[ -/]*)\Z")
"""A sequence that the end of the text cut short: more of it may still arrive."""


def strip_ansi(text: str) -> str:
    """``text`` without ANSI/VT escape sequences (colours, cursor moves, modes, and the strings:
    titles, links, device controls). 7-bit sequences only: C1 controls (``0x80``-``0x9f``, which
    UTF-8 terminals do not use as controls) are kept as text."""
    return _ANSI.sub("", text)


def incomplete_escape_at(text: str) -> int | None:
    """Where ``text`` ends with an escape sequence that has not arrived whole yet, else ``None``:
    an ESC alone (perhaps the first half of a string's ST: :func:`strip_ansi` then removes the
    string before it whole), a CSI without its final byte, or a string sequence (OSC, DCS, SOS,
    PM, APC) of any length without its terminator.

    Strings cannot hold an ESC, so such a sequence always begins at the last ESC; the visible
    text of any prefix of a stream, cut here, is a prefix of the visible text of the whole
    stream: nothing of a sequence still arriving is ever shown."""
    start = text.rfind("\x1b")
    if start < 0 or _STILL_ARRIVING.match(text, start) is None:
        return None
    return start


def raw_index(text: str, stripped_index: int) -> int:
    """The index in ``text`` of position ``stripped_index`` of ``strip_ansi(text)``."""
    position = count = 0
    for found in _ANSI.finditer(text):
        plain = found.start() - position
        if count + plain >= stripped_index:
            break
        count += plain
        position = found.end()
    return position + (stripped_index - count)


def escape_end(text: str, position: int, end: int) -> int:
    """``position``, or the end of the escape sequence of ``text[:end]`` it falls inside: the
    first place at or after ``position`` where a part of ``text`` can begin without showing a
    piece of a sequence. Sequences hold no ESC but their first (and their ST's), so the last ESC
    before ``position`` tells."""
    start = text.rfind("\x1b", 0, position)
    if start < 0:
        return position
    found = _ANSI.match(text, start, end)
    return found.end() if found is not None and found.end() > position else position
