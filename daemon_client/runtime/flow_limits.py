"""The public values of flow control: :class:`FlowControl` (the user's limits on the callback
queue) and :class:`BacklogStats` (a snapshot of the admitted backlog, in ``client.stats()``).

Immutable values, built on any thread; the counters that use them are in
:mod:`daemon_client.runtime.backlog`.
"""

from __future__ import annotations

from typing import Any

import attrs

DEFAULT_MAX_EVENTS = 100_000
DEFAULT_MAX_BYTES = 256 * 2**20


def _limit(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise ValueError(f"FlowControl.{attribute.name} must be None or an integer of at least 2, got {value!r}")


@attrs.frozen
class FlowControl:
    """How much the callback queue may hold before pushes are skipped (``Client(flow_control=)``).

    ``max_events`` counts queued pushes; ``max_bytes`` their wire size (the length of each
    frame's JSON text, as received). Terminal Output frames bound for ``on_output`` count too,
    each one event of its payload's bytes. ``None`` lifts a limit; ``FlowControl(None, None)``
    queues without bound. Once a limit is reached, new pushes are not queued until the
    backlog falls under half of each limit; every observation that skipped something is
    then told exactly what (see ``docs/threading.md``). Replies, connection state
    changes, ``subscription_restored`` and ``error`` events are never skipped.
    """

    max_events: int | None = attrs.field(default=DEFAULT_MAX_EVENTS, validator=_limit)
    max_bytes: int | None = attrs.field(default=DEFAULT_MAX_BYTES, validator=_limit)

    @property
    def bounded(self) -> bool:
        return self.max_events is not None or self.max_bytes is not None


@attrs.frozen
class BacklogStats:
    """The callback queue's admitted backlog right now (part of ``client.stats()``)."""

    queued_events: int
    queued_bytes: int
    lagging: bool
    """True from the moment a push was refused until the backlog fell under the low-water mark."""
    max_events: int | None
    max_bytes: int | None
