"""``WindowSearch``: one ``expect()`` call's walk through a terminal stream's unread output in
bounded windows, so that no single ``re`` search (which holds the interpreter for its whole run)
looks at more than ``window`` characters.

Pure computation on a snapshot of the unread output, run on the caller's thread outside every
lock; :class:`~daemon_client.subscriptions.terminal_output.OutputReader` keeps the call's
progress (``searched_to``, ``found``) under its lock and decides which waiting call consumes first.
"""

from __future__ import annotations

import re

from daemon_client.protocol.terminals import escape_end, incomplete_escape_at, raw_index, strip_ansi

DEFAULT_WINDOW = 16_384
"""Characters of output one search hands the pattern at most (``expect(window=)``)."""
LOOK_BEHIND = 64
"""Characters before a window handed along for look-behind, ``^`` and ``\\b`` (never matched in)."""


class WindowSearch:
    """One ``expect()`` call's progress. Offsets are absolute: characters of output since the
    stream began (as the reader counts them), so they survive what others consume."""

    def __init__(self, regex: re.Pattern[str], strip: bool, window: int) -> None:
        if type(window) is not int or window < 2:
            raise ValueError("the expect() window must be a number of characters, 2 or more")
        self.regex = regex
        self.strip = strip
        self.window = window
        self.overlap = window // 2
        """Characters already searched that the next window looks at again: a match up to this
        long is found wherever it falls."""
        self.order = 0  # set by the reader: earlier calls go first among equal matches
        self.epoch = -1  # the reader's count of consumptions this progress belongs to
        self.searched_to = 0  # output before this was searched without a match
        self.found: re.Match[str] | None = None
        self.found_end = 0  # where ``found`` ends in the output

    def restart(self, start: int, epoch: int) -> None:
        """Search again from ``start`` (another caller consumed: the unread output begins anew)."""
        self.epoch, self.searched_to, self.found = epoch, start, None

    def complete_end(self, text: str) -> int:
        """How much of ``text`` may be searched: with ``strip``, not an escape sequence still arriving."""
        if not self.strip:
            return len(text)
        cut = incomplete_escape_at(text)
        return len(text) if cut is None else cut

    def step(self, text: str, start: int, complete: int) -> tuple[re.Match[str] | None, int, int]:
        """Search the next window of ``text`` (unread output whose first character is at
        ``start``; ``complete`` of it searchable). Returns the match (or ``None``), where it
        ends, and how far the output has now been searched."""
        begin = max(0, self.searched_to - start)
        if begin >= complete:
            return None, 0, start + complete
        first = max(0, begin - self.overlap)
        last = min(complete, first + self.window)
        context = max(0, first - LOOK_BEHIND)
        if self.strip:
            first = escape_end(text, first, complete)
            last = max(first, escape_end(text, last, complete))
            context = min(first, escape_end(text, context, complete))
            behind, body = strip_ansi(text[context:first]), text[first:last]
            string, pos = behind + strip_ansi(body), len(behind)
        else:
            string, pos = text[context:last], first - context
        found = self.regex.search(string, pos)
        if found is None:
            return None, 0, start + last
        end = first + raw_index(body, found.end() - pos) if self.strip else context + found.end()
        if last < complete and found.end() == len(string):
            # touches the end of a window that is not the end of the output: it may go on in the
            # next window (``\d+``, ``$``), which looks at it again
            return None, 0, start + max(end - 1, last - self.overlap + 1)
        return found, start + end, start + end
