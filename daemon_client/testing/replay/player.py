"""Playing one recorded connection to one live client connection.

The recorded daemon frames are sent in recorded order. Each waits for its *gate*:

* a reply (a frame carrying the ``requestId`` of a recorded client frame) waits until the
  client has sent that request (matched by type and payload, see
  :mod:`daemon_client.testing.replay.matching`), and carries the client's ``requestId``;
* any other frame (a push, a close) waits until the client has sent the client frame recorded
  just before it, or any later one, so pushes keep their recorded place between replies.

A reply whose request has not come although the client has already sent a later recorded
frame (two threads racing, or a request that did not match) steps aside: the frames after it
go on, and it is sent as soon as its request comes.

Top-level ``ping`` frames are answered at once with ``pong`` (heartbeats are timing, not
content); recorded heartbeats are neither replayed nor required. What the daemon sent after
the client's own close (its echo of the close) is the client's to cause: never sent.

Threads: :func:`run_player` runs on the connection's thread (``replay-daemon-mem-<n>`` or a
websockets handler thread), which alone calls the player's event methods. :meth:`unplayed`
and :meth:`wait_settled` may be called from any thread (the test's); state is guarded by
one lock that is never held while sending.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import attrs

from daemon_client.testing.replay.cassette import Event, RecordedConnection
from daemon_client.testing.replay.matching import (
    describe_diff,
    diff,
    frame_type,
    id_mapping,
    is_heartbeat,
    message_of,
    normalize,
    request_id_of_reply,
    request_id_of_request,
    rewrite,
)

__all__ = ["ConnectionPlayer", "PlayerOptions", "ServerEnd", "run_player"]

_log = logging.getLogger("daemon_client.testing.replay")
_POLL = 0.25
"""Longest a connection thread blocks in ``recv`` before checking for shutdown."""
UNMATCHED_CODE = "replay_unmatched"


class ServerEnd(Protocol):
    """The daemon's end of one connection, as a player sends on it."""

    def send_text(self, text: str) -> None: ...

    def send_binary(self, data: bytes) -> None: ...

    def close(self, code: int = 1000, reason: str = "") -> None: ...

    def abort(self) -> None: ...


class ClientGone(Exception):
    """Raised by a ``recv`` function when the client's side of the connection has ended."""


RecvFn = Callable[[float], "str | bytes"]
"""Next client frame (``bytes``: a binary frame); ``TimeoutError`` when none came in time,
:class:`ClientGone` when the connection ended."""


@attrs.frozen
class PlayerOptions:
    source: str
    volatile: frozenset[str]
    pace: float | None
    strict: bool
    report: Callable[[str], None]
    """Called (on the connection thread) with the message of a mismatch in strict mode."""
    received: Callable[[str | bytes], None] = lambda data: None
    """Called (on the connection thread) with every client frame, before it is matched."""
    clock: Callable[[], float] = time.monotonic
    """The clock of ``pace`` (seconds)."""


@attrs.define
class _Expected:
    """A recorded client frame."""

    event: Event
    normalized: Any
    heartbeat: bool = False
    hello: bool = False
    closing: bool = False
    matched: bool = False


@attrs.define
class _Step:
    """A recorded daemon frame and what it waits for."""

    event: Event
    gate: int | None
    reply: bool


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class ConnectionPlayer:
    """The replay of one recorded connection; see the module docstring."""

    def __init__(self, recorded: RecordedConnection, number: int, options: PlayerOptions) -> None:
        self.recorded = recorded
        self.number = number
        self._opts = options
        self._expected: list[_Expected] = []
        self._steps: list[_Step] = []
        self._build()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._cursor = 0
        self._deferred: list[_Step] = []
        self._furthest = -1
        self._mapping: dict[str, str] = {}
        self._anchor = (options.clock(), recorded.start)
        self._ended = False
        self._socket: ServerEnd | None = None

    def _build(self) -> None:
        volatile = self._opts.volatile
        by_request: dict[str, int] = {}
        gate: int | None = None
        closing = False
        for event in self.recorded.events:
            frame = event.value if event.kind == "frame" else None
            if event.direction == "out":
                if event.kind in ("close", "abort"):
                    closing = True
                    continue
                heartbeat = frame is not None and is_heartbeat(frame)
                expected = _Expected(
                    event,
                    normalize(message_of(frame), volatile) if frame is not None else None,
                    heartbeat=heartbeat,
                    hello=frame is not None and frame.get("type") == "hello",
                    closing=closing,
                )
                self._expected.append(expected)
                if heartbeat:
                    continue
                gate = len(self._expected) - 1
                request_id = request_id_of_request(frame) if frame is not None else None
                if request_id is not None:
                    by_request[request_id] = gate
                continue
            if closing or (frame is not None and is_heartbeat(frame)):
                continue  # the answer to the client's own close; pongs are answered live
            request_id = request_id_of_reply(frame) if frame is not None else None
            if request_id is not None and request_id in by_request:
                self._steps.append(_Step(event, by_request[request_id], reply=True))
            else:
                self._steps.append(_Step(event, gate, reply=False))

    # -- connection thread ---------------------------------------------------------------------
    def start(self, socket: ServerEnd) -> None:
        self._socket = socket
        with self._lock:
            self._anchor = (self._opts.clock(), self.recorded.start)

    @property
    def ended(self) -> bool:
        return self._ended

    def _open(self, step: _Step) -> bool:
        if step.gate is None:
            return True
        if step.reply:
            return self._expected[step.gate].matched
        return self._furthest >= step.gate

    def _next(self) -> _Step | None:
        """The next step to send, if its gate is open: a deferred reply whose request has come,
        else the step at the cursor (a reply the client has moved past is deferred). Lock held."""
        for step in self._deferred:
            if self._open(step):
                self._deferred.remove(step)
                return step
        while self._cursor < len(self._steps):
            step = self._steps[self._cursor]
            if self._open(step):
                self._cursor += 1
                return step
            if not (step.reply and step.gate is not None and self._furthest > step.gate):
                return None
            self._deferred.append(step)
            self._cursor += 1
        return None

    def pump(self) -> float | None:
        """Send every recorded frame whose gate is open and whose time has come; return the
        seconds until the next one is due (``None``: nothing waits on time)."""
        while True:
            with self._changed:
                if self._ended:
                    return None
                step = self._next()
                if step is None:
                    return None
                now = self._opts.clock()
                pace = self._opts.pace
                if pace:
                    anchor_at, anchor_t = self._anchor
                    wait = anchor_at + (step.event.t - anchor_t) * pace - now
                    if wait > 0:
                        self._hold(step)
                        return wait
                self._anchor = (now, step.event.t)
                mapping = dict(self._mapping)
                if step.event.kind in ("close", "abort"):
                    self._ended = True
                self._changed.notify_all()
            self._send(step.event, mapping)

    def _hold(self, step: _Step) -> None:
        """Put back a step whose time has not come (lock held)."""
        if self._cursor > 0 and self._steps[self._cursor - 1] is step:
            self._cursor -= 1
        else:
            self._deferred.insert(0, step)

    def _send(self, event: Event, mapping: dict[str, str]) -> None:
        socket = self._socket
        assert socket is not None
        try:
            if event.kind == "frame":
                socket.send_text(_dumps(rewrite(event.value, mapping)))
            elif event.kind == "binary":
                socket.send_binary(event.value)
            elif event.kind == "raw":
                socket.send_text(event.value)
            elif event.kind == "close":
                socket.close(*event.value)
            else:
                socket.abort()
        except Exception as exc:  # noqa: BLE001 - the client is gone: the rest cannot be sent
            _log.debug("replay: connection %s: cannot send %s: %s", self.number, event.describe(), exc)
            self.client_closed()

    def client_closed(self) -> None:
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def on_client(self, data: str | bytes) -> None:
        """Match one client frame; answer heartbeats and unrecorded requests."""
        self._opts.received(data)
        if isinstance(data, bytes):
            self._match_or_fail("binary", data, data)
            return
        try:
            frame = json.loads(data)
        except ValueError:
            frame = None
        if not isinstance(frame, dict):
            self._match_or_fail("raw", data, data)
            return
        if is_heartbeat(frame):
            if frame.get("type") == "ping" and self._socket is not None:
                self._socket.send_text('{"type":"pong"}')
            return
        self._match_or_fail("frame", frame, data)

    def _match_or_fail(self, kind: str, value: Any, data: str | bytes) -> None:
        with self._changed:
            found = self._find(kind, value)
            if found is not None:
                expected = self._expected[found]
                expected.matched = True
                self._furthest = max(self._furthest, found)
                if kind == "frame":
                    self._mapping.update(id_mapping(expected.event.value, value, self._opts.volatile))
                self._anchor = (self._opts.clock(), expected.event.t)
                self._changed.notify_all()
                return
            if kind == "frame" and value.get("type") == "hello" and not any(e.hello for e in self._expected):
                return  # the daemon ended this connection before the hello (e.g. a refused password)
            message = self._mismatch(kind, value, data)
        self._answer_unmatched(kind, value, message)

    def _find(self, kind: str, value: Any) -> int | None:
        for index, expected in enumerate(self._expected):
            if expected.matched or expected.heartbeat or expected.event.kind != kind:
                continue
            if kind != "frame":
                recorded = expected.event.value
                if recorded == value or (expected.event.truncated and value[: len(recorded)] == recorded):
                    return index  # a binary frame recorded by its first bytes matches by them
            elif expected.hello:
                if value.get("type") == "hello":
                    return index
            elif expected.normalized == normalize(message_of(value), self._opts.volatile):
                return index
        return None

    def _mismatch(self, kind: str, value: Any, data: str | bytes) -> str:
        """The message that explains an unrecorded client frame (lock held)."""
        shown = data if isinstance(data, str) else f"binary frame of {len(data)} bytes"
        head = (
            f"{self._opts.source}: connection #{self.number} ({self.recorded.name!r}) of the recording: "
            f"the client sent a frame that is not in the recording:\n    sent: {_cut(shown)}"
        )
        if kind != "frame":
            return head + f"\n  no unplayed recorded {kind} frame is equal to it"
        sent = normalize(message_of(value), self._opts.volatile)
        played = [e for e in self._expected if e.matched and e.event.kind == "frame" and e.normalized == sent]
        if played:
            return head + (
                f"\n  an equal frame was recorded ({played[0].event.describe()}) and has already been answered: "
                "each recorded request is answered once; record the repeated one too"
            )
        recorded = [e for e in self._expected if not e.heartbeat and e.event.kind == "frame"]
        if not recorded:
            return head + "\n  this connection of the recording has no client frames"
        wanted = frame_type(value)
        pools = (
            [e for e in recorded if not e.matched and frame_type(e.event.value) == wanted],
            [e for e in recorded if frame_type(e.event.value) == wanted],
            [e for e in recorded if not e.matched],
            recorded,
        )
        pool = next(p for p in pools if p)
        closest = min(pool, key=lambda e: len(diff(e.normalized, sent)))
        notes = []
        if frame_type(closest.event.value) != wanted:
            notes.append(f"no recorded frame has the type {wanted!r}")
        if closest.matched:
            notes.append("already answered")
        note = f" ({'; '.join(notes)})" if notes else ""
        return head + (
            f"\n  closest recorded frame{note}: {closest.event.describe()}"
            f"\n  difference (volatile fields ignored: {', '.join(sorted(self._opts.volatile))}):\n"
            + describe_diff(diff(closest.normalized, sent))
        )

    def _answer_unmatched(self, kind: str, value: Any, message: str) -> None:
        if self._opts.strict:
            self._opts.report(message)
        else:
            _log.info("replay: %s", message)
        request_id = request_id_of_request(value) if kind == "frame" else None
        if request_id is None or self._socket is None:
            return
        payload = {"requestId": request_id, "requestType": frame_type(value), "error": message, "code": UNMATCHED_CODE}
        try:
            self._socket.send_text(_dumps({"type": "session", "message": {"type": "rpc_error", "payload": payload}}))
        except Exception as exc:  # noqa: BLE001 - the client is gone
            _log.debug("replay: cannot answer an unmatched request: %s", exc)

    # -- any thread ----------------------------------------------------------------------------
    def unplayed(self) -> list[str]:
        """The recorded frames not played yet, in recorded order (heartbeats and what follows
        the client's close are not counted)."""
        with self._lock:
            missing = [e.event for e in self._expected if not e.matched and not e.heartbeat and not e.closing]
            missing += [s.event for s in [*self._deferred, *self._steps[self._cursor :]]]
        return [f"#{self.number} {event.describe()}" for event in sorted(missing, key=lambda e: e.line)]

    def _settled(self) -> bool:
        if self._ended:
            return True
        if any(self._open(step) for step in self._deferred):
            return False
        for step in self._steps[self._cursor :]:
            if self._open(step):
                return False
            if not (step.reply and step.gate is not None and self._furthest > step.gate):
                return True
        return True

    def wait_settled(self, timeout: float) -> bool:
        """Block until no recorded frame that may be sent is still waiting to be sent."""
        with self._changed:
            return self._changed.wait_for(self._settled, timeout)


def _cut(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def run_player(player: ConnectionPlayer, socket: ServerEnd, recv: RecvFn, stopping: threading.Event) -> None:
    """Serve one connection until it ends; runs on that connection's thread."""
    player.start(socket)
    try:
        while not stopping.is_set():
            wait = player.pump()
            if player.ended:
                return
            try:
                data = recv(_POLL if wait is None else min(wait, _POLL))
            except TimeoutError:
                continue
            except ClientGone:
                return
            player.on_client(data)
    except Exception:  # noqa: BLE001 - never let a connection thread die with a traceback
        _log.exception("replay: connection #%s failed", player.number)
        socket.abort()
    finally:
        player.client_closed()
