"""Simulated agent runs of the fake daemon (``fake.runs``): turns, waits, cancels, permissions.

Owns the active turn of each agent, the pending ``wait_for_finish_request`` replies, the
pending permission requests and the provider availability used by creation. A turn is played
by its own daemon thread ``fake-daemon-run-<n>`` (:mod:`daemon_client.testing.fake.runs.turns`,
in the frame order the 0.1.65 daemon was recorded in). A wait with ``timeoutMs`` is answered
``timeout`` by a ``fake-daemon-wait-<n>`` timer thread.
:meth:`FakeRuns.close` (called by ``fake.close()``) stops and joins every one of them.

Agents live in ``fake.agents`` (upserts are written before the next frame: every upsert waits
for the directory to drain) and rows in ``fake.timeline``. The request handlers are in
:mod:`daemon_client.testing.fake.runs.handlers`. ``FakeRuns`` and turn state is guarded by one
condition, never held while sending, upserting or waiting for a turn to end.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from daemon_client.protocol.hosts import HostKind
from daemon_client.testing.fake.engine.handlers import iso_now
from daemon_client.testing.fake.runs.scripts import FAILURE_TEXT, TurnScript, choose_script, custom_script
from daemon_client.testing.fake.runs.turns import Turn, TurnPlayer, Waiter

if TYPE_CHECKING:
    from daemon_client.testing.fake.directory.observations import FakeDirectory
    from daemon_client.testing.fake.engine.core import DaemonCore
    from daemon_client.testing.fake.engine.handlers import RequestContext
    from daemon_client.testing.fake.engine.peer import Peer
    from daemon_client.testing.fake.timeline.store import FakeTimeline

__all__ = ["FakeRuns"]

_JOIN_TIMEOUT = 5.0


class FakeRuns:
    """Agent runs of one fake daemon; see the module docstring."""

    def __init__(self, core: DaemonCore, directory: FakeDirectory, timeline: FakeTimeline) -> None:
        self.core = core
        self.directory = directory
        self.timeline = timeline
        self.agents = directory.agents
        self.host_kind: HostKind = core.config.host_kind
        self.available_providers: set[str] = {"mock", "claude"}
        """Providers creation accepts."""
        self.unavailable_providers: set[str] = set()
        """Providers creation rejects even if listed as available."""
        self.chunk_delay = 0.0
        """Seconds between two streamed rows of a turn (0: as fast as possible)."""
        self.changed = threading.Condition()
        """Guards every field of this object and of its turns (internal to the fake)."""
        self._player = TurnPlayer(self)
        self._turns: dict[str, Turn] = {}
        self._scripts: dict[str, TurnScript] = {}
        self._waiters: list[Waiter] = []
        self._threads: list[threading.Thread] = []
        self._numbers = itertools.count(1)
        self._closing = False

    # -- scripting (test thread) ---------------------------------------------------------------

    def script(self, agent_id: str, items: Sequence[Mapping[str, Any]]) -> None:
        """Make the agent's next turn stream exactly ``items`` (timeline items) and complete."""
        with self.changed:
            self._scripts[agent_id] = custom_script(items)

    def plan(self, agent_id: str, script: TurnScript) -> None:
        """Make the agent's next turn play ``script`` (a :class:`TurnScript`: rows, an optional
        ``permission`` or ``hold`` pause, rows after it, ``fail``)."""
        with self.changed:
            self._scripts[agent_id] = script

    def finish(self, agent_id: str) -> bool:
        """Release a ``please hold`` turn; ``False`` if the agent has no running turn."""
        with self.changed:
            turn = self._turns.get(agent_id)
            if turn is None:
                return False
            turn.released = True
            self.changed.notify_all()
            return True

    def is_running(self, agent_id: str) -> bool:
        with self.changed:
            return agent_id in self._turns

    def pending_permission(self, agent_id: str) -> dict[str, Any] | None:
        """The permission request the agent's turn waits for, if any."""
        with self.changed:
            turn = self._turns.get(agent_id)
            return dict(turn.permission) if turn is not None and turn.permission is not None else None

    def wait_until_idle(self, agent_id: str, timeout: float = 5.0) -> None:
        """Block until the agent has no turn (its final upsert written); ``TimeoutError`` otherwise."""
        with self.changed:
            if not self.changed.wait_for(lambda: agent_id not in self._turns, timeout):
                raise TimeoutError(f"agent {agent_id} still running after {timeout:g} s")

    def send(self, agent_id: str, text: str, *, message_id: str | None = None) -> int:
        """Prompt the agent as a ``send_agent_message_request`` would, without a reply; returns
        the ``seq`` of the ``user_message`` row. ``KeyError`` for an unknown agent."""
        turn, seq = self.accept_prompt(agent_id, text, message_id)
        self.start(turn)
        return seq

    def cancel(self, agent_id: str, reason: str = "Interrupted", timeout: float = 5.0) -> bool:
        """Interrupt the running turn and wait until it has ended; ``False`` if none ran."""
        with self.changed:
            turn = self._turns.get(agent_id)
            if turn is None:
                return False
            if turn.interrupted is None:
                turn.interrupted = reason
            self.changed.notify_all()
        if not turn.done.wait(timeout):
            raise TimeoutError(f"the turn of agent {agent_id} did not end within {timeout:g} s")
        return True

    # -- turns ---------------------------------------------------------------------------------

    def provider_error(self, provider: object) -> str | None:
        """Why creation with ``provider`` fails, or ``None``."""
        if not isinstance(provider, str) or provider not in self.available_providers - self.unavailable_providers:
            return f"Provider '{provider}' is not available"
        return None

    def upsert(self, agent_id: str, **fields: Any) -> dict[str, Any] | None:
        """Update an existing agent and wait until its ``agent_update`` frames are written."""
        if self.agents.get(agent_id) is None:
            return None
        snapshot = self.agents.upsert(agent_id, **fields)
        self.directory.wait_idle()
        return snapshot

    def accept_prompt(self, agent_id: str, text: str, message_id: str | None = None) -> tuple[Turn, int]:
        """Interrupt a running turn, record the ``user_message`` row and register the next turn
        (start it with :meth:`start`). ``KeyError`` for an unknown agent."""
        while True:
            self.cancel(agent_id)
            agent = self.agents.get(agent_id)
            if agent is None:
                raise KeyError(agent_id)
            turn_id = str(uuid.uuid4())
            with self.changed:
                script = self._scripts.pop(agent_id, None) or choose_script(text, turn_id)
                if agent_id not in self._turns:
                    turn = self._turns[agent_id] = Turn(agent_id, turn_id, str(agent.get("provider")), script)
                    break
                self._scripts.setdefault(agent_id, script)
        if agent.get("archivedAt") is not None:
            self.upsert(agent_id, archivedAt=None, status="idle")
        item: dict[str, Any] = {"type": "user_message", "text": text}
        if message_id is not None:
            item["messageId"] = message_id
        turn.prompted_at = iso_now()
        tag = turn.turn_id if self.host_kind is HostKind.CAPABLE else None
        seq = self.timeline.append(agent_id, item, provider=turn.provider, turn_id=tag)
        return turn, seq

    def start(self, turn: Turn) -> None:
        """Play a registered turn on a new ``fake-daemon-run-<n>`` thread."""
        with self.changed:
            if not self._closing:
                name = f"fake-daemon-run-{next(self._numbers)}"
                thread = threading.Thread(target=self._player.play, args=(turn,), name=name, daemon=True)
                self._threads = [t for t in self._threads if t.is_alive()]
                self._threads.append(thread)
                thread.start()
                return
            self._turns.pop(turn.agent_id, None)
        turn.done.set()

    @property
    def closing(self) -> bool:
        """``close()`` was called: turns stop without further frames."""
        return self._closing

    def end_turn(self, turn: Turn) -> None:
        """Run thread, last: forget the turn and answer the waits that came while it finished."""
        with self.changed:
            if self._turns.get(turn.agent_id) is turn:
                del self._turns[turn.agent_id]
            late = self.take_waiters_locked(turn.agent_id)
            turn.done.set()
            self.changed.notify_all()
        if late and not self._closing:
            self.answer_now(late)

    def resolve_permission(
        self, agent_id: str, request_id: object, response: Mapping[str, Any], responder: Peer | None = None
    ) -> bool:
        """Answer the pending permission ``request_id`` of the agent; ``False`` if none matches."""
        with self.changed:
            turn = self._turns.get(agent_id)
            if turn is None or turn.permission is None or turn.permission["id"] != request_id:
                return False
            if turn.decision is None:
                turn.decision, turn.responder = dict(response), responder
                self.changed.notify_all()
            return True

    # -- wait_for_finish -----------------------------------------------------------------------

    def wait_for_finish(self, ctx: RequestContext, agent_id: str, timeout_ms: float | None) -> None:
        """Answer ``wait_for_finish_request`` now or when the current or next turn ends."""
        agent = self.agents.get(agent_id)
        if agent is None:
            error = f"Agent not found: {agent_id}"
            ctx.reply({"status": "error", "final": None, "error": error, "lastMessage": None})
            return
        with self.changed:
            turn = self._turns.get(agent_id)
            # a permission being requested is answered once it is in the snapshot
            pending = bool(agent.get("pendingPermissions")) if turn is None else turn.announced
            if not pending and turn is not None and not self._closing:
                waiter = Waiter(ctx, agent_id)
                self._waiters.append(waiter)
                if timeout_ms is not None:
                    waiter.timer = threading.Timer(timeout_ms / 1000.0, self._expire, args=(waiter,))
                    waiter.timer.name = f"fake-daemon-wait-{next(self._numbers)}"
                    waiter.timer.daemon = True
                    self._threads = [t for t in self._threads if t.is_alive()]
                    self._threads.append(waiter.timer)
                    waiter.timer.start()
                return
        if pending:
            self.answer([Waiter(ctx, agent_id)], "permission", self.agents.get(agent_id), None, None)
        else:
            self.answer_now([Waiter(ctx, agent_id)])

    def take_waiters_locked(self, agent_id: str) -> list[Waiter]:
        """Remove and return the agent's pending waits; call with :attr:`changed` held."""
        mine = [w for w in self._waiters if w.agent_id == agent_id]
        self._waiters = [w for w in self._waiters if w.agent_id != agent_id]
        return mine

    def _expire(self, waiter: Waiter) -> None:
        """Timer thread: answer ``timeout`` unless the wait was answered already."""
        with self.changed:
            if waiter not in self._waiters or self._closing:
                return
            self._waiters.remove(waiter)
        final = self.agents.get(waiter.agent_id)
        waiter.ctx.reply({"status": "timeout", "final": final, "error": None, "lastMessage": None})

    def answer_now(self, waiters: list[Waiter]) -> None:
        """Answer from the stored snapshot: ``error`` for an agent in error, else ``idle``."""
        for waiter in waiters:
            agent = self.agents.get(waiter.agent_id)
            failed = agent is not None and agent.get("status") == "error"
            error = str(agent.get("lastError") or FAILURE_TEXT) if failed and agent is not None else None
            last = self.timeline.last_message(waiter.agent_id)
            self.answer([waiter], "error" if failed else "idle", agent, error, last)

    def answer(
        self, waiters: list[Waiter], status: str, final: dict[str, Any] | None, error: str | None, last: str | None
    ) -> None:
        """Send each wait its ``wait_for_finish_response`` (and stop its timer)."""
        for waiter in waiters:
            if waiter.timer is not None:
                waiter.timer.cancel()
            waiter.ctx.reply({"status": status, "final": final, "error": error, "lastMessage": last})

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop every turn and timer without further frames and join their threads. Idempotent."""
        with self.changed:
            self._closing = True
            timers = [w.timer for w in self._waiters if w.timer is not None]
            self._waiters.clear()
            threads, self._threads = self._threads, []
            self.changed.notify_all()
        for timer in timers:
            timer.cancel()
        deadline = time.monotonic() + _JOIN_TIMEOUT
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
