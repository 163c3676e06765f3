"""The terminal store of the fake daemon (``fake.terminals``): terminals, their scripted shells,
stream slots, directory subscriptions, and the frames they cause (protocol.md 12.2).

Behaviour per host (``features.workspaceTerminals`` decides the generation):

- **with the flag** (capable hosts by default): terminals belong to a workspace; create honours
  ``workspaceId`` and ``size``; list entries and ``terminals_changed`` entries carry ``cwd`` and
  ``workspaceId``; ``list_terminals_request`` filters by ``workspaceId`` (then ``cwd`` does not
  restrict); a directory subscription with a ``workspaceId`` gets that workspace's terminals,
  tagged with ``workspaceId`` (the fake's answer to an open point of the protocol notes);
- **without it** (0.1.65 and selective hosts): ``workspaceId`` and ``size`` are dropped silently
  (terminals start at 80×24), entries are ``{id, name, title}``;
- **broadcast hosts** also repeat what 0.1.65 repeats: two identical ``terminals_changed`` after a
  create, two identical Snapshot frames after every stream subscription.

Slots are numbered per server-side session, round-robin from 0 to 255 and not reused until
released; binary frames go to every socket of a streaming session. Input arrives as
``terminal_input`` or as binary Input/Resize frames on a slot the session holds (others are
ignored); :attr:`FakeTerminals.inputs` records each with how it came.

Test threads call the public methods, connection reader threads the handlers
(:mod:`daemon_client.testing.fake.terminals.handlers`). :attr:`FakeTerminals.lock` guards the
store; frames are queued on an :class:`~daemon_client.testing.fake.engine.outbox.Outbox` under
it and written in order after it is released. No frame is sent under a lock.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.terminal_frames import OUTPUT, SNAPSHOT
from daemon_client.testing.fake.engine.outbox import Outbox
from daemon_client.testing.fake.terminals.shell import Event, ScriptedShell

if TYPE_CHECKING:
    from daemon_client.testing.fake.engine.core import DaemonCore
    from daemon_client.testing.fake.engine.peer import Peer, Session

__all__ = ["FEATURE", "FakeTerminal", "FakeTerminals", "TerminalInput"]

FEATURE = "workspaceTerminals"
_SESSION_KEY = "terminals"
NO_SLOTS = "No terminal stream slots available"
NOT_FOUND = "Terminal not found"


@attrs.define(eq=False)
class FakeTerminal:
    """One terminal of the fake daemon."""

    id: str
    name: str
    cwd: str
    shell: ScriptedShell
    workspace_id: str | None = None
    command: str | None = None
    args: tuple[str, ...] = ()

    @property
    def alive(self) -> bool:
        return not self.shell.exited


@attrs.frozen
class TerminalInput:
    """One input the fake received: ``via`` is ``"json"`` or ``"binary"``; ``kind`` ``"input"``,
    ``"resize"`` or ``"mouse"``; ``data`` the text typed or ``{"rows":…,"cols":…}``."""

    terminal_id: str
    via: str
    kind: str
    data: Any


@attrs.define(eq=False)
class _SessionTerminals:
    """One session's slots (slot → terminal ID) and directory subscriptions."""

    slots: dict[int, str] = attrs.field(factory=dict)
    next_slot: int = 0
    directories: set[tuple[str, str | None]] = attrs.field(factory=set)


@attrs.define
class _DropPlan:
    terminal_id: str
    after: int


def _push(connections: list[Peer], message_type: str, payload: Mapping[str, Any]) -> Callable[[], None]:
    """An outbox action: one session message to each connection."""
    frame = {"type": "session", "message": {"type": message_type, "payload": dict(payload)}}

    def send() -> None:
        for connection in connections:
            connection.send_frame(frame)

    return send


def _binary(connections: list[Peer], data: bytes) -> Callable[[], None]:
    """An outbox action: one binary frame to each connection."""

    def send() -> None:
        for connection in connections:
            connection.send_raw(data, binary=True)

    return send


def _abort(connections: list[Peer]) -> Callable[[], None]:
    def drop() -> None:
        for connection in connections:
            connection.abort()

    return drop


class FakeTerminals:
    """Terminals of one fake daemon (``fake.terminals``); see the module docstring."""

    def __init__(self, core: DaemonCore) -> None:
        self.core = core
        self.lock = threading.Lock()
        self._outbox = Outbox(self.lock, "terminal")
        self._terminals: dict[str, FakeTerminal] = {}
        self._numbers: dict[str, itertools.count[int]] = {}
        self._drops: list[_DropPlan] = []
        self.inputs: list[TerminalInput] = []
        """Every input received, in order (for assertions on how input travelled)."""

    # -- host behaviour --------------------------------------------------------------------------

    @property
    def workspace_terminals(self) -> bool:
        """Whether this host has ``features.workspaceTerminals``."""
        return bool(self.core.config.effective_features.get(FEATURE))

    @property
    def repeats(self) -> bool:
        """Whether this host repeats ``terminals_changed`` and Snapshot frames as 0.1.65 does."""
        return self.core.config.host_kind is HostKind.BROADCAST

    # -- the store -------------------------------------------------------------------------------

    def create(
        self,
        cwd: str,
        *,
        name: str | None = None,
        command: str | None = None,
        args: tuple[str, ...] = (),
        workspace_id: str | None = None,
        size: tuple[int, int] | None = None,
    ) -> FakeTerminal:
        """Start a terminal (as ``create_terminal_request`` does, without the host's filtering of
        ``workspace_id`` and ``size``); notifies directory subscribers of ``cwd``."""
        rows, cols = size or (24, 80)
        title = " ".join([command or "fake-sh", *args])
        with self.lock:
            live = sum(1 for t in self._terminals.values() if t.cwd == cwd and t.alive)
            terminal = FakeTerminal(
                id=str(uuid.uuid4()),
                name=name or f"Terminal {live + 1}",
                cwd=cwd,
                shell=ScriptedShell(rows, cols, title),
                workspace_id=workspace_id,
                command=command,
                args=tuple(args),
            )
            self._terminals[terminal.id] = terminal
            terminal.shell.start()
            ticket = self._queue_changed_locked(terminal, times=2 if self.repeats else 1)
        self._outbox.drain(ticket)
        return terminal

    def get(self, terminal_id: str) -> FakeTerminal | None:
        with self.lock:
            return self._terminals.get(terminal_id)

    def all(self) -> list[FakeTerminal]:
        """Live terminals in creation order."""
        with self.lock:
            return list(self._terminals.values())

    def type(self, terminal_id: str, text: str, *, via: str = "json") -> None:
        """Type ``text`` into a terminal (as input from a client would)."""
        with self.lock:
            terminal = self._terminals.get(terminal_id)
            self.inputs.append(TerminalInput(terminal_id, via, "input", text))
            if terminal is None or not terminal.alive or not text:
                return
            ticket = self._queue_events_locked(terminal, terminal.shell.feed(text))
        self._outbox.drain(ticket)

    def resize(self, terminal_id: str, rows: int, cols: int, *, via: str = "json") -> None:
        with self.lock:
            terminal = self._terminals.get(terminal_id)
            self.inputs.append(TerminalInput(terminal_id, via, "resize", {"rows": rows, "cols": cols}))
            if terminal is None or not terminal.alive:
                return
            ticket = self._queue_events_locked(terminal, terminal.shell.resize(rows, cols))
        self._outbox.drain(ticket)

    def note_input(self, terminal_id: str, via: str, kind: str, data: Any) -> None:
        """Record an input that has no effect on the shell (a mouse event)."""
        with self.lock:
            self.inputs.append(TerminalInput(terminal_id, via, kind, data))

    def exit(self, terminal_id: str) -> None:
        """The terminal's process ends by itself (as after ``exit``)."""
        with self.lock:
            terminal = self._terminals.get(terminal_id)
            if terminal is None:
                return
            terminal.shell.end()
            ticket = self._remove_locked(terminal)
        self._outbox.drain(ticket)

    def kill(self, terminal_id: str, reply: Callable[[], None] | None = None) -> bool:
        """Kill a terminal: ``terminal_stream_exit`` to streaming sessions, ``terminals_changed``
        to directory subscribers, then ``reply`` (the kill response), in that order. Returns
        whether the terminal existed."""
        with self.lock:
            terminal = self._terminals.get(terminal_id)
            ticket = 0
            if terminal is not None:
                terminal.shell.end()
                ticket = self._remove_locked(terminal)
            if reply is not None:
                ticket = self._outbox.enqueue_locked(reply)
        self._outbox.drain(ticket)
        return terminal is not None

    def wait_idle(self, timeout: float = 5.0) -> None:
        """Block until every queued terminal frame has been written."""
        self._outbox.wait_idle(timeout)

    # -- entries ---------------------------------------------------------------------------------

    def entry(self, terminal: FakeTerminal, *, full: bool) -> dict[str, Any]:
        """A terminal as the wire shows it (``full``: with ``cwd``, as in create replies)."""
        body: dict[str, Any] = {"id": terminal.id, "name": terminal.name}
        if full or self.workspace_terminals:
            body["cwd"] = terminal.cwd
        if self.workspace_terminals and terminal.workspace_id is not None:
            body["workspaceId"] = terminal.workspace_id
        if terminal.shell.title:
            body["title"] = terminal.shell.title
        return body

    def listing(self, cwd: str | None, workspace_id: str | None) -> list[dict[str, Any]]:
        """The entries ``list_terminals_request`` returns for these filters."""
        with self.lock:
            return self._listing_locked(cwd, workspace_id)

    def _listing_locked(self, cwd: str | None, workspace_id: str | None) -> list[dict[str, Any]]:
        found = []
        for terminal in self._terminals.values():
            if workspace_id is not None and self.workspace_terminals:
                if terminal.workspace_id != workspace_id:
                    continue
            elif cwd is not None and terminal.cwd != cwd:
                continue
            found.append(self.entry(terminal, full=False))
        return found

    # -- sessions, slots and directory subscriptions ----------------------------------------------

    @staticmethod
    def session_state(session: Session) -> _SessionTerminals:
        state = session.data.get(_SESSION_KEY)
        if not isinstance(state, _SessionTerminals):
            state = session.data[_SESSION_KEY] = _SessionTerminals()
        return state

    def subscribe_stream(self, connection: Peer, terminal_id: str, reply: Callable[[Any], None]) -> None:
        """``subscribe_terminal_request``: ``reply(payload)`` with the slot (or the error), then the
        Snapshot frame(s)."""
        session = connection.session
        with self.lock:
            terminal = self._terminals.get(terminal_id)
            body: dict[str, Any] = {"terminalId": terminal_id}
            slot: int | None = None
            if terminal is None or not terminal.alive:
                body["error"] = NOT_FOUND
            elif session is None or (slot := self._allocate_locked(self.session_state(session), terminal_id)) is None:
                body["error"] = NO_SLOTS
            else:
                body.update(slot=slot, error=None)
            ticket = self._outbox.enqueue_locked(lambda: reply(body))
            if terminal is not None and slot is not None and session is not None:
                frame = bytes((SNAPSHOT, slot)) + terminal.shell.snapshot()
                for _ in range(2 if self.repeats else 1):
                    ticket = self._queue_binary_locked([session], frame)
        self._outbox.drain(ticket)

    @staticmethod
    def _allocate_locked(state: _SessionTerminals, terminal_id: str) -> int | None:
        for slot, owner in state.slots.items():
            if owner == terminal_id:
                return slot
        for offset in range(256):
            slot = (state.next_slot + offset) % 256
            if slot not in state.slots:
                state.slots[slot] = terminal_id
                state.next_slot = (slot + 1) % 256
                return slot
        return None

    def unsubscribe_stream(self, connection: Peer, terminal_id: str) -> None:
        session = connection.session
        if session is None:
            return
        with self.lock:
            slots = self.session_state(session).slots
            for slot in [s for s, owner in slots.items() if owner == terminal_id]:
                del slots[slot]

    def slot_owner(self, connection: Peer, slot: int) -> str | None:
        """The terminal a session streams on ``slot`` (``None``: a slot it does not hold)."""
        session = connection.session
        if session is None:
            return None
        with self.lock:
            return self.session_state(session).slots.get(slot)

    def slots(self, session: Session) -> dict[int, str]:
        """A session's slots (slot → terminal ID), for assertions."""
        with self.lock:
            return dict(self.session_state(session).slots)

    def subscribe_directory(self, connection: Peer, cwd: str, workspace_id: str | None) -> None:
        """``subscribe_terminals_request``: remember it and send the current list to this socket."""
        session = connection.session
        if not self.workspace_terminals:
            workspace_id = None  # dropped by hosts without workspace terminals
        with self.lock:
            if session is not None:
                self.session_state(session).directories.add((cwd, workspace_id))
            payload = self._changed_payload_locked(cwd, workspace_id)
            ticket = self._outbox.enqueue_locked(lambda: connection.send_session("terminals_changed", payload))
        self._outbox.drain(ticket)

    def unsubscribe_directory(self, connection: Peer, cwd: str, workspace_id: str | None) -> None:
        session = connection.session
        if session is None:
            return
        with self.lock:
            key = (cwd, workspace_id if self.workspace_terminals else None)
            self.session_state(session).directories.discard(key)

    # -- fault injection ---------------------------------------------------------------------------

    def drop_mid_stream(self, terminal_id: str, after: int = 1) -> None:
        """Arm a fault: once ``after`` more Output frames of this terminal were written, every
        connection of every session streaming it is dropped (no close frame). The shell goes on;
        a client that subscribes again sees the rest in the next snapshot."""
        with self.lock:
            self._drops.append(_DropPlan(terminal_id, after))

    def inject_frame(self, opcode: int, slot: int, payload: bytes = b"") -> None:
        """Send the binary frame ``opcode | slot | payload`` to every handshaken connection, in order
        with the terminal frames: an opcode or slot a client never asked for, say."""
        frame = bytes((opcode, slot)) + payload
        with self.lock:
            ticket = self._outbox.enqueue_locked(_binary(self.core.connections(handshaken_only=True), frame))
        self._outbox.drain(ticket)

    def send_snapshot(self, terminal_id: str) -> None:
        """Send a fresh Snapshot to every session streaming the terminal (a daemon-side reset)."""
        with self.lock:
            terminal = self._terminals.get(terminal_id)
            if terminal is None:
                return
            ticket = self._queue_slot_frames_locked(terminal, SNAPSHOT, terminal.shell.snapshot())
        self._outbox.drain(ticket)

    # -- delivery (call with the lock held; drain the ticket after releasing it) --------------------

    def _streaming_sessions_locked(self, terminal_id: str) -> list[tuple[Session, int]]:
        found: list[tuple[Session, int]] = []
        for session in self.core.sessions().values():
            state = session.data.get(_SESSION_KEY)
            if isinstance(state, _SessionTerminals):
                found.extend((session, slot) for slot, owner in state.slots.items() if owner == terminal_id)
        return found

    def _connections(self, session: Session) -> list[Peer]:
        return [c for c in self.core.session_connections(session) if c.handshaken]

    def _queue_binary_locked(self, sessions: list[Session], frame: bytes) -> int:
        return self._outbox.enqueue_locked(_binary([c for s in sessions for c in self._connections(s)], frame))

    def _queue_slot_frames_locked(self, terminal: FakeTerminal, opcode: int, payload: bytes) -> int:
        ticket = self._outbox.last_ticket_locked()
        for session, slot in self._streaming_sessions_locked(terminal.id):
            ticket = self._queue_binary_locked([session], bytes((opcode, slot)) + payload)
        return ticket

    def _queue_events_locked(self, terminal: FakeTerminal, events: list[Event]) -> int:
        ticket = self._outbox.last_ticket_locked()
        for kind, text in events:
            if kind == "output":
                ticket = self._queue_slot_frames_locked(terminal, OUTPUT, text.encode("utf-8"))
                ticket = self._count_output_locked(terminal) or ticket
            elif kind == "title":
                ticket = self._queue_changed_locked(terminal) or ticket
            elif kind == "exit":
                ticket = self._remove_locked(terminal)
        return ticket

    def _count_output_locked(self, terminal: FakeTerminal) -> int:
        for plan in list(self._drops):
            if plan.terminal_id != terminal.id:
                continue
            plan.after -= 1
            if plan.after <= 0:
                self._drops.remove(plan)
                sessions = [session for session, _ in self._streaming_sessions_locked(terminal.id)]
                return self._outbox.enqueue_locked(_abort([c for s in sessions for c in self._connections(s)]))
        return 0

    def _remove_locked(self, terminal: FakeTerminal) -> int:
        """The terminal is gone: exits to streaming sessions (their slots freed), then the lists."""
        self._terminals.pop(terminal.id, None)
        ticket = self._outbox.last_ticket_locked()
        for session, slot in self._streaming_sessions_locked(terminal.id):
            del self.session_state(session).slots[slot]
            exit_push = _push(self._connections(session), "terminal_stream_exit", {"terminalId": terminal.id})
            ticket = self._outbox.enqueue_locked(exit_push)
        return self._queue_changed_locked(terminal) or ticket

    def _changed_payload_locked(self, cwd: str, workspace_id: str | None) -> dict[str, Any]:
        payload: dict[str, Any] = {"cwd": cwd}
        if workspace_id is not None:
            payload["workspaceId"] = workspace_id
            payload["terminals"] = self._listing_locked(None, workspace_id)
        else:
            payload["terminals"] = self._listing_locked(cwd, None)
        return payload

    def _queue_changed_locked(self, terminal: FakeTerminal, *, times: int = 1) -> int:
        """``terminals_changed`` to every session subscribed to the terminal's ``cwd``, or to its
        workspace; 0 when nobody is."""
        ticket = 0
        for session in self.core.sessions().values():
            state = session.data.get(_SESSION_KEY)
            if not isinstance(state, _SessionTerminals):
                continue
            for cwd, workspace_id in sorted(state.directories, key=lambda key: (key[0], key[1] or "")):
                if workspace_id is None and cwd != terminal.cwd:
                    continue
                if workspace_id is not None and workspace_id != terminal.workspace_id:
                    continue
                action = _push(
                    self._connections(session), "terminals_changed", self._changed_payload_locked(cwd, workspace_id)
                )
                for _ in range(times):
                    ticket = self._outbox.enqueue_locked(action)
        return ticket
