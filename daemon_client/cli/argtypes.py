"""Value types of the command's options: every number is range-checked by the parser.

Each function is an argparse ``type=``: it returns the parsed value or raises
``argparse.ArgumentTypeError``, which argparse turns into a usage error (status 2) naming the
option. Pure functions, run on the main thread while the arguments are parsed.
"""

from __future__ import annotations

import argparse
import math

MAX_SECONDS = 1_000_000.0
"""The largest duration or timeout accepted (about 11.5 days): larger ones overflow thread waits."""
MAX_PORT = 65535
MAX_COUNT = 1_000_000_000


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def seconds(text: str) -> float:
    """A positive, finite number of seconds, at most :data:`MAX_SECONDS`."""
    value = _number(text)
    if not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{text!r}: seconds must be > 0 and at most {MAX_SECONDS:g}")
    return value


def _integer(text: str) -> int:
    try:
        return int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def count(text: str) -> int:
    """A whole number >= 0."""
    value = _integer(text)
    if not 0 <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"{text!r}: must be 0 or more (at most {MAX_COUNT})")
    return value


def positive_count(text: str) -> int:
    """A whole number >= 1."""
    value = _integer(text)
    if not 1 <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"{text!r}: must be 1 or more (at most {MAX_COUNT})")
    return value


def port(text: str) -> int:
    """A TCP port, or 0 for any free port."""
    value = _integer(text)
    if not 0 <= value <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"{text!r}: a port is 0 (any free port) to {MAX_PORT}")
    return value


def key_value(text: str) -> tuple[str, str]:
    """``key=value`` (the value may be empty, the key may not)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r}: expected key=value")
    return key, value
