"""Logging of one command run: the library's records on standard error, by verbosity.

Without options only ERROR records of the library are printed (a WARNING such as "hello
rejected" is the command's own error line already); ``-v`` adds WARNING and INFO, ``-vv``
DEBUG (frames included); ``-q`` prints none. The ``daemon_client`` logger gets one handler
writing through :class:`~daemon_client.cli.notes.Notes` and stops propagating; everything is
restored when the command returns (so ``main()`` can be called in a test process).
Records are written by whichever thread logs them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from daemon_client.cli.notes import Notes

LOGGER = "daemon_client"
_QUIET = logging.CRITICAL + 10


def level_for(verbosity: int, quiet: bool) -> int:
    """The lowest level printed: ``-q`` nothing, default ERROR, ``-v`` INFO, ``-vv`` DEBUG."""
    if quiet:
        return _QUIET
    return {0: logging.ERROR, 1: logging.INFO}.get(verbosity, logging.DEBUG)


class _NotesHandler(logging.Handler):
    def __init__(self, notes: Notes, level: int) -> None:
        super().__init__(level)
        self._notes = notes
        self.setFormatter(logging.Formatter("daemon-client: %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._notes.raw(self.format(record))
        except Exception:  # noqa: BLE001 - a log record must never break the command
            self.handleError(record)


@contextlib.contextmanager
def configured(notes: Notes, verbosity: int, quiet: bool) -> Iterator[None]:
    """Route the library's records to ``notes`` at the chosen level while the block runs."""
    logger = logging.getLogger(LOGGER)
    saved_level, saved_propagate = logger.level, logger.propagate
    level = level_for(verbosity, quiet)
    handler = _NotesHandler(notes, level)
    logger.addHandler(handler)
    logger.setLevel(min(level, logging.ERROR) if saved_level == logging.NOTSET else min(level, saved_level))
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved_level)
        logger.propagate = saved_propagate
