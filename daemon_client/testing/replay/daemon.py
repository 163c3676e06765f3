"""``ReplayDaemon``: a recording played back as a daemon, in memory or on a loopback port.

The k-th connection a client opens is served the k-th connection of the recording (a
reconnect, or a second client, gets the next one). Within a connection, replies are matched
to requests and pushes keep their recorded place (:mod:`daemon_client.testing.replay.player`).

Threads: the test's thread builds and inspects the daemon; each in-memory connection runs on
its own ``replay-daemon-mem-<n>`` thread, each loopback connection on a websockets handler
thread (:mod:`daemon_client.testing.replay.loopback`). ``close()`` joins them all (bounded).
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Literal

from daemon_client.testing.replay.cassette import Recording
from daemon_client.testing.replay.matching import DEFAULT_VOLATILE, frame_type
from daemon_client.testing.replay.player import ClientGone, ConnectionPlayer, PlayerOptions, run_player
from daemon_client.transport.base import TransportClosed, TransportError
from daemon_client.transport.memory import MemoryServerEnd, MemoryTransport
from daemon_client.transport.trace_scrub import BEARER_PREFIX

if TYPE_CHECKING:
    from daemon_client.testing.replay.loopback import ReplayLoopback

__all__ = ["ReplayDaemon", "ReplayMismatch"]

_JOIN_TIMEOUT = 5.0
OnUnmatched = Literal["fail", "error_reply"]


class ReplayMismatch(AssertionError):
    """The client did not do what the recording shows: an unrecorded request, an extra
    connection, or (``assert_all_played``) recorded frames never played."""


class ReplayDaemon:
    """Serves a recording (a ``Client(trace=...)`` file or a transcript) to a client.

    Args:
        recording: the JSONL file, or a parsed
            :class:`~daemon_client.testing.replay.cassette.Recording`.
        volatile: more field names to ignore when matching requests, wherever they occur.
            The IDs a client makes up anew in every run are always ignored (``requestId``,
            ``clientId``, ``subscriptionId``, ``messageId``, ``clientMessageId``,
            ``idempotencyKey``), and so is ``clientSentAt``. Their recorded values in the
            daemon's frames are rewritten to the values this client sent.
        pace: ``None`` (default) sends recorded frames as fast as possible; ``1.0`` keeps the
            recorded gaps between them, ``0.5`` halves them.
        connections: serve only these recorded connections (by their ``conn`` name), in
            this order; default: all, in the order they opened.
        on_unmatched: ``"fail"`` (default): a request that is not in the recording fails the
            test: it is answered at once with an ``rpc_error`` (code ``replay_unmatched``) whose
            message shows the closest recorded request and the difference, and :meth:`check`,
            :meth:`assert_all_played` and leaving the ``with`` block raise
            :class:`ReplayMismatch`. ``"error_reply"``: only the ``rpc_error`` answer.

    Raises ``RecordingError`` (a ``ValueError``, in
    :mod:`daemon_client.testing.replay.cassette`) for a malformed recording, naming its line.
    """

    def __init__(
        self,
        recording: str | os.PathLike[str] | Recording,
        *,
        volatile: Iterable[str] = (),
        pace: float | None = None,
        on_unmatched: OnUnmatched = "fail",
        connections: Sequence[str] | None = None,
    ) -> None:
        if on_unmatched not in ("fail", "error_reply"):
            raise ValueError(f"on_unmatched must be 'fail' or 'error_reply', got {on_unmatched!r}")
        if pace is not None and pace < 0:
            raise ValueError(f"pace must be None or >= 0, got {pace!r}")
        if isinstance(volatile, str):
            raise TypeError("volatile must be an iterable of field names, not one string")
        loaded = recording if isinstance(recording, Recording) else Recording.load(recording)
        self.recording = loaded if connections is None else _only(loaded, connections)
        self._options = PlayerOptions(
            source=os.path.basename(self.recording.source),
            volatile=DEFAULT_VOLATILE | frozenset(volatile),
            pace=pace,
            strict=on_unmatched == "fail",
            report=self._report,
            received=self._received,
        )
        self._lock = threading.Lock()
        self._players: list[ConnectionPlayer] = []
        self._mismatches: list[str] = []
        self._frames: list[str | bytes] = []
        self._frame_arrived = threading.Condition(self._lock)
        self._threads: list[threading.Thread] = []
        self._ends: list[MemoryServerEnd] = []
        self._numbers = itertools.count(1)
        self._stopping = threading.Event()
        self._loopback: ReplayLoopback | None = None
        self._closed = False

    # -- connections ---------------------------------------------------------------------------
    def _open_player(self) -> ConnectionPlayer | None:
        """The player of the next recorded connection, or ``None`` (reported) when the
        recording has no more connections. Any thread (a frontend's accept)."""
        with self._lock:
            index = len(self._players)
            if self._closed or index >= len(self.recording.connections):
                player = None
            else:
                player = ConnectionPlayer(self.recording.connections[index], index + 1, self._options)
                self._players.append(player)
        if player is None and not self._closed:
            self._report(
                f"{self._options.source}: the client opened connection #{index + 1}, but the recording has only "
                f"{len(self.recording.connections)}; the connection was refused"
            )
        return player

    @staticmethod
    def _choose_subprotocol(player: ConnectionPlayer, offered: Sequence[str]) -> str | None:
        """The recorded selection if offered; for a recorded bearer subprotocol, the client's."""
        opened = player.recorded.opened or {}
        recorded = opened.get("selectedSubprotocol")
        if not isinstance(recorded, str):
            return None
        if recorded in offered:
            return recorded
        if recorded.lower().startswith(BEARER_PREFIX):
            return next((p for p in offered if p.lower().startswith(BEARER_PREFIX)), None)
        return None

    def _received(self, data: str | bytes) -> None:
        with self._frame_arrived:
            self._frames.append(data)
            self._frame_arrived.notify_all()

    def _report(self, message: str) -> None:
        if self._options.strict:
            with self._lock:
                self._mismatches.append(message)

    # -- memory frontend -----------------------------------------------------------------------
    @property
    def transport_factory(self) -> _ReplayFactory:
        """``Callable[[], Transport]``: in-memory connections to this replay."""
        return _ReplayFactory(self)

    def _accept_memory(self, end: MemoryServerEnd) -> None:
        """``MemoryTransport`` acceptor; runs on the thread calling ``transport.connect``."""
        player = self._open_player()
        if player is None:
            raise TransportError("connection refused: the recording has no more connections")
        end.selected_subprotocol = self._choose_subprotocol(player, list(end.subprotocols))

        def recv(timeout: float) -> str | bytes:
            try:
                return end.recv(timeout)
            except TransportClosed:
                raise ClientGone from None
            except TransportError:
                return b""  # the memory transport reports a client binary frame this way

        thread = threading.Thread(
            target=run_player,
            args=(player, end, recv, self._stopping),
            name=f"replay-daemon-mem-{next(self._numbers)}",
            daemon=True,
        )
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
            self._ends.append(end)
        thread.start()

    # -- loopback frontend ---------------------------------------------------------------------
    def serve(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Start serving on ``host:port`` (0: any free port; idempotent) and return the
        ``ws://host:port/ws`` URL. Needs the ``test`` extra (``websockets``)."""
        if self._closed:
            raise RuntimeError("the replay daemon is closed")
        with self._lock:
            if self._loopback is None:
                from daemon_client.testing.replay.loopback import ReplayLoopback

                self._loopback = ReplayLoopback(self._open_player, self._choose_subprotocol, self._stopping)
        return self._loopback.start(host, port)

    @property
    def url(self) -> str:
        """The ``ws://`` URL of :meth:`serve`; ``RuntimeError`` before it."""
        url = self._loopback.url if self._loopback is not None else None
        if url is None:
            raise RuntimeError("the replay daemon is not serving on loopback; call serve() first")
        return url

    # -- results -------------------------------------------------------------------------------
    @property
    def mismatches(self) -> list[str]:
        """The messages of the unrecorded requests and extra connections so far (strict mode)."""
        with self._lock:
            return list(self._mismatches)

    def wait_for_frame(self, message_type: str, timeout: float = 5.0) -> str | bytes:
        """Block until the client has sent a frame of ``message_type`` (the inner type of a
        session frame, else the top-level type), recorded or not; return it as sent. For
        frames the daemon never answers. Raises ``TimeoutError`` naming what came instead."""

        def find() -> str | bytes | None:
            for data in self._frames:
                if isinstance(data, str) and _type_of(data) == message_type:
                    return data
            return None

        with self._frame_arrived:
            if not self._frame_arrived.wait_for(lambda: find() is not None, timeout):
                seen = [_type_of(d) if isinstance(d, str) else "binary" for d in self._frames]
                raise TimeoutError(f"no {message_type!r} frame from the client within {timeout:g} s; got {seen}")
            found = find()
        assert found is not None
        return found

    @property
    def connections_opened(self) -> int:
        """How many connections clients opened so far (refused ones excluded)."""
        with self._lock:
            return len(self._players)

    def check(self) -> None:
        """Raise :class:`ReplayMismatch` if the client sent anything the recording does not have."""
        found = self.mismatches
        if found:
            more = f"\n(and {len(found) - 1} more mismatches)" if len(found) > 1 else ""
            raise ReplayMismatch(found[0] + more)

    def unplayed(self, timeout: float = 5.0) -> list[str]:
        """The recorded frames not played, once every frame that can be sent has been sent
        (waits at most ``timeout``). Heartbeats and what follows the client's close are not
        counted; a connection never opened is listed whole."""
        deadline = time.monotonic() + timeout
        with self._lock:
            players = list(self._players)
        for player in players:
            player.wait_settled(max(0.0, deadline - time.monotonic()))
        missing = [line for player in players for line in player.unplayed()]
        for number, connection in enumerate(self.recording.connections[len(players) :], start=len(players) + 1):
            missing.append(f"#{number} connection {connection.name!r} was never opened")
        return missing

    def assert_all_played(self, timeout: float = 5.0) -> None:
        """Raise :class:`ReplayMismatch` for a mismatch or for recorded frames not played
        (see :meth:`unplayed`). Call it after the last reply the test waits for, or after
        the client's ``close()`` when the recording holds what ``close()`` sends (the release
        of live subscriptions)."""
        self.check()
        missing = self.unplayed(timeout)
        if missing:
            shown = "\n  ".join(missing[:20])
            more = f"\n  ... and {len(missing) - 20} more" if len(missing) > 20 else ""
            raise ReplayMismatch(
                f"{self._options.source}: {len(missing)} recorded frame(s) were not played:\n  {shown}{more}"
            )

    # -- lifecycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """Drop every connection, stop serving and join every thread (bounded). Idempotent;
        never raises a mismatch (see :meth:`check`)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            ends, self._ends = self._ends, []
            loopback = self._loopback
        self._stopping.set()
        for end in ends:
            end.abort()
        if loopback is not None:
            loopback.close()
        with self._lock:
            threads, self._threads = self._threads, []
        deadline = time.monotonic() + _JOIN_TIMEOUT
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> ReplayDaemon:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
        if exc_type is None:
            self.check()

    def __repr__(self) -> str:
        return f"<ReplayDaemon {self._options.source} ({len(self.recording.connections)} connections)>"


def _type_of(text: str) -> str | None:
    try:
        frame = json.loads(text)
    except ValueError:
        return None
    return frame_type(frame) if isinstance(frame, dict) else None


def _only(recording: Recording, names: Sequence[str]) -> Recording:
    """The recording reduced to the named connections, in the order given."""
    if isinstance(names, str):
        raise TypeError("connections must be a sequence of connection names, not one string")
    by_name = {connection.name: connection for connection in recording.connections}
    unknown = [name for name in names if name not in by_name]
    if unknown:
        raise ValueError(
            f"{recording.source}: no connection named {', '.join(map(repr, unknown))} "
            f"(the recording has {', '.join(map(repr, by_name))})"
        )
    return Recording(recording.source, tuple(by_name[name] for name in names))


class _ReplayFactory:
    """``transport_factory`` of a replay: each call returns a MemoryTransport connected to it."""

    def __init__(self, daemon: ReplayDaemon) -> None:
        self.daemon = daemon

    def __call__(self) -> MemoryTransport:
        return MemoryTransport(self.daemon._accept_memory)

    def __repr__(self) -> str:
        return f"<transport factory of {self.daemon!r}>"
