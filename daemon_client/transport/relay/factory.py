"""The transport factory of a relay target, and the counters of its sockets.

:class:`RelayTransportFactory` is what the client hands its connection supervisor as
``transport_factory`` when the target is a relay: each call wraps a new base transport (a
WebSocket to the relay) in a :class:`~daemon_client.transport.relay.channel.RelayTransport`.
It outlives the sockets, so it keeps what spans them: the counters (:class:`RelayStats`) and
the run of sockets the daemon closed right after the handshake, before answering (two in a
row mean a stale pairing offer). Built on the caller's thread; its ``note_*`` methods are
called from the reader thread and ``stats`` from any thread (one lock, held only to count).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import attrs

from daemon_client.transport.base import Transport
from daemon_client.transport.relay.channel import HELLO_INTERVAL, PAIR_AGAIN, RelayTransport
from daemon_client.transport.relay.crypto import InvalidPeerKey, check_public_key, require_nacl


@attrs.frozen
class RelayStats:
    """Counters of a relay connection, over every socket the client opened through the relay."""

    handshakes: int = 0
    """End-to-end handshakes completed (``e2ee_ready`` received)."""
    handshake_failures: int = 0
    """Sockets that ended, or timed out, before ``e2ee_ready``."""
    rejected_frames: int = 0
    """Frames from the daemon's side that were plaintext or did not decrypt (each ended its socket)."""
    unconfirmed_closes: int = 0
    """Sockets the daemon's side closed after the handshake, before any frame of it decrypted."""


class RelayTransportFactory:
    """``transport_factory`` of a relay target; see the module docstring.

    Raises :class:`~daemon_client.errors.MissingExtra` at once when PyNaCl is missing, and
    ``ValueError`` for a daemon key no daemon can have (a low-order point).
    """

    def __init__(
        self,
        base_factory: Callable[[], Transport],
        daemon_public_key: bytes,
        *,
        logger: logging.Logger | None = None,
        hello_interval: float = HELLO_INTERVAL,
    ) -> None:
        require_nacl()
        try:
            check_public_key(daemon_public_key)
        except InvalidPeerKey as exc:
            raise ValueError(f"the pairing offer's daemon key is unusable ({exc}); {PAIR_AGAIN}") from None
        if not hello_interval > 0:
            raise ValueError("hello_interval must be > 0")
        self._base_factory = base_factory
        self._daemon_key = bytes(daemon_public_key)
        self._log = logger or logging.getLogger("daemon_client.relay")
        self._hello_interval = hello_interval
        self._lock = threading.Lock()
        self._stats = RelayStats()
        self._unconfirmed_run = 0

    def __call__(self) -> RelayTransport:
        return RelayTransport(self._base_factory(), self._daemon_key, self, self._log, self._hello_interval)

    def __repr__(self) -> str:
        return f"<RelayTransportFactory over {self._base_factory!r}>"

    @property
    def stats(self) -> RelayStats:
        """The counters so far (a snapshot)."""
        with self._lock:
            return self._stats

    def _count(self, **increments: int) -> None:
        with self._lock:
            current = self._stats
            self._stats = attrs.evolve(
                current, **{name: getattr(current, name) + step for name, step in increments.items()}
            )

    def note_handshake(self) -> None:
        self._count(handshakes=1)

    def note_handshake_failure(self) -> None:
        self._count(handshake_failures=1)

    def note_rejected(self) -> None:
        self._count(rejected_frames=1)

    def note_confirmed(self) -> None:
        """A frame of the daemon decrypted: the offer's key is right."""
        with self._lock:
            self._unconfirmed_run = 0

    def note_unconfirmed_close(self) -> int:
        """The daemon's side closed a socket before any frame decrypted; returns the run length."""
        self._count(unconfirmed_closes=1)
        with self._lock:
            self._unconfirmed_run += 1
            return self._unconfirmed_run
