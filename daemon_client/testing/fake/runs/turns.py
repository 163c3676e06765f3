"""One turn of a simulated agent, played on its own ``fake-daemon-run-<n>`` daemon thread.

Owns the order of a turn's frames, as the 0.1.65 daemon was recorded (transcripts 03-05):
upsert ``running``, ``turn_started``, the script's timeline rows (a permission request or a
hold may pause them), ``turn_completed`` / ``turn_failed`` / ``turn_canceled``,
``attention_required`` when the agent's attention flag turns on, the replies to pending
``wait_for_finish_request``s, and only then the final upsert. Current-daemon details
(``turnId``, ``activeTurn``) are added on capable hosts only.

:class:`TurnPlayer` works for :class:`~daemon_client.testing.fake.runs.runs.FakeRuns`, whose
condition guards every :class:`Turn` field; the player never holds it while sending,
upserting or streaming.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from daemon_client.protocol.hosts import HostKind
from daemon_client.testing.fake.engine.handlers import iso_now
from daemon_client.testing.fake.runs.scripts import FAILURE_TEXT, TurnScript, permission_request

if TYPE_CHECKING:
    from daemon_client.testing.fake.directory.stores import AgentStore
    from daemon_client.testing.fake.engine.core import DaemonCore
    from daemon_client.testing.fake.engine.handlers import RequestContext
    from daemon_client.testing.fake.engine.peer import Peer
    from daemon_client.testing.fake.timeline.store import FakeTimeline

__all__ = ["RunsPort", "Turn", "TurnPlayer", "Waiter"]

_log = logging.getLogger("daemon_client.testing.fake.daemon")
_NOTIFICATION_BODY = 200


@attrs.define(eq=False)
class Turn:
    """One turn of one agent, from registration to its final upsert."""

    agent_id: str
    turn_id: str
    provider: str
    script: TurnScript
    prompted_at: str | None = None
    interrupted: str | None = None
    """The ``turn_canceled`` reason once interrupted."""
    released: bool = False
    """A ``please hold`` pause was released (:meth:`FakeRuns.finish`)."""
    permission: dict[str, Any] | None = None
    announced: bool = False
    """The pending permission is in the agent's snapshot (waits are answered at once)."""
    decision: dict[str, Any] | None = None
    responder: Peer | None = None
    done: threading.Event = attrs.field(factory=threading.Event)


@attrs.define(eq=False)
class Waiter:
    """A ``wait_for_finish_request`` parked until the agent's turn ends (or its timer fires)."""

    ctx: RequestContext
    agent_id: str
    timer: threading.Timer | None = None


class RunsPort(Protocol):
    """What :class:`TurnPlayer` uses of the runs it plays for (``FakeRuns`` fits as is)."""

    core: DaemonCore
    agents: AgentStore
    timeline: FakeTimeline
    host_kind: HostKind
    chunk_delay: float
    changed: threading.Condition

    @property
    def closing(self) -> bool: ...

    def upsert(self, agent_id: str, **fields: Any) -> dict[str, Any] | None: ...

    def end_turn(self, turn: Turn) -> None: ...

    def take_waiters_locked(self, agent_id: str) -> list[Waiter]: ...

    def answer(
        self, waiters: list[Waiter], status: str, final: dict[str, Any] | None, error: str | None, last: str | None
    ) -> None: ...


class TurnPlayer:
    """Plays turns for one :class:`FakeRuns`; :meth:`play` is the run thread's target."""

    def __init__(self, runs: RunsPort) -> None:
        self.runs = runs
        self.capable = runs.host_kind is HostKind.CAPABLE

    def play(self, turn: Turn) -> None:
        try:
            self._play(turn)
        except Exception:  # noqa: BLE001 - a broken script must not kill the fake
            _log.exception("fake daemon: turn of agent %s failed", turn.agent_id)
        finally:
            self.runs.end_turn(turn)

    def _turn_id(self, turn: Turn) -> str | None:
        return turn.turn_id if self.capable else None

    def _emit(self, turn: Turn, event: dict[str, Any]) -> None:
        self.runs.timeline.emit(turn.agent_id, event, provider=turn.provider)

    def _stopped(self, turn: Turn) -> bool:
        return turn.interrupted is not None or self.runs.closing

    def _play(self, turn: Turn) -> None:
        runs = self.runs
        running: dict[str, Any] = {"status": "running", "lastUserMessageAt": turn.prompted_at}
        if self.capable:
            running["activeTurn"] = {"turnId": turn.turn_id, "startedAt": iso_now()}
        if runs.upsert(turn.agent_id, **running) is None:
            return
        turn_field = {"turnId": turn.turn_id} if self.capable else {}
        self._emit(turn, {"type": "turn_started", **turn_field})
        ok = self._stream(turn, turn.script.before)
        if ok and turn.script.pause == "permission":
            ok = self._ask_permission(turn)
        elif ok and turn.script.pause == "hold":
            with runs.changed:
                runs.changed.wait_for(lambda: turn.released or self._stopped(turn))
            ok = not self._stopped(turn)
        if ok:
            self._stream(turn, turn.script.after)
        if not runs.closing:
            self._finish(turn, turn_field)

    def _stream(self, turn: Turn, items: Sequence[Mapping[str, Any]]) -> bool:
        runs = self.runs
        for item in items:
            delay = runs.chunk_delay
            if delay > 0:
                with runs.changed:
                    runs.changed.wait_for(lambda: self._stopped(turn), delay)
            if self._stopped(turn):
                return False
            runs.timeline.append(turn.agent_id, item, provider=turn.provider, turn_id=self._turn_id(turn))
        return not self._stopped(turn)

    def _finish(self, turn: Turn, turn_field: dict[str, Any]) -> None:
        runs = self.runs
        agent_id = turn.agent_id
        before = runs.agents.get(agent_id)
        if before is None:
            return
        now = iso_now()
        fields: dict[str, Any] = {"updatedAt": now}
        error: str | None = None
        if turn.interrupted is not None:
            self._emit(turn, {"type": "turn_canceled", **turn_field, "reason": turn.interrupted})
            fields["status"], reason = "idle", "finished"  # 0.1.65 says "finished" for a cancelled turn too
        elif turn.script.fail:
            error = FAILURE_TEXT
            self._emit(turn, {"type": "turn_failed", **turn_field, "error": error})
            fields.update(status="error", lastError=error)
            reason = "error"
        else:
            usage = dict(turn.script.usage)
            self._emit(turn, {"type": "turn_completed", **turn_field, "usage": usage})
            fields.update(status="idle", lastUsage=usage)
            reason = "finished"
        if self.capable:
            fields["activeTurn"] = None
        last = runs.timeline.last_message(agent_id)
        if not before.get("requiresAttention"):  # attention is announced only when the flag turns on
            self._attention(turn, reason, now, last)
            fields.update(requiresAttention=True, attentionReason=reason, attentionTimestamp=now)
        with runs.changed:
            waiters = runs.take_waiters_locked(agent_id)
        runs.answer(waiters, "error" if error else "idle", {**before, **fields}, error, last)
        runs.upsert(agent_id, **fields)

    def _attention(self, turn: Turn, reason: str, now: str, last: str | None) -> None:
        body = last or ("Finished working." if reason == "finished" else f"The agent needs attention ({reason}).")
        if len(body) > _NOTIFICATION_BODY:
            body = body[:_NOTIFICATION_BODY] + "..."
        title = {"finished": "Agent finished", "error": "Agent failed"}.get(reason, "Agent needs permission")
        data = {"serverId": self.runs.core.config.server_id, "agentId": turn.agent_id, "reason": reason}
        self._emit(turn, {"type": "attention_required", "reason": reason, "timestamp": now, "shouldNotify": False,
                          "notification": {"title": title, "body": body, "data": data}})  # fmt: skip

    def _ask_permission(self, turn: Turn) -> bool:
        """Request a permission and wait for its answer; ``True`` to go on (allowed)."""
        runs = self.runs
        agent_id = turn.agent_id
        request = permission_request(turn.provider)
        agent = runs.agents.get(agent_id)
        if agent is None:
            return False
        now = iso_now()
        attention = not agent.get("requiresAttention")
        fields: dict[str, Any] = {"pendingPermissions": [request]}
        if attention:
            fields.update(requiresAttention=True, attentionReason="permission", attentionTimestamp=now)
        with runs.changed:
            turn.permission = request
        snapshot = runs.upsert(agent_id, **fields)
        with runs.changed:
            turn.announced = True
            waiters = runs.take_waiters_locked(agent_id)
        self._emit(turn, {"type": "permission_requested", "request": request})
        if attention:
            self._attention(turn, "permission", now, None)
        if runs.host_kind is HostKind.BROADCAST:
            self._push_all("agent_permission_request", {"agentId": agent_id, "request": request})
        runs.answer(waiters, "permission", snapshot, None, None)
        with runs.changed:
            runs.changed.wait_for(lambda: turn.decision is not None or self._stopped(turn))
            decision, responder, turn.permission, turn.announced = turn.decision, turn.responder, None, False
        if decision is None:
            if not runs.closing:
                runs.upsert(agent_id, pendingPermissions=[])
            return False
        runs.upsert(agent_id, pendingPermissions=[], requiresAttention=False, attentionReason=None,
                    attentionTimestamp=None)  # fmt: skip
        self._emit(turn, {"type": "permission_resolved", "requestId": request["id"], "resolution": decision})
        resolved = {"agentId": agent_id, "requestId": request["id"], "resolution": decision}
        if runs.host_kind is HostKind.BROADCAST:
            self._push_all("agent_permission_resolved", resolved)
        elif self.capable and responder is not None:  # confirmation to the answering socket
            responder.send_frame({"type": "session", "message": {"type": "agent_permission_resolved",
                                                                 "payload": resolved}})  # fmt: skip
        if decision.get("behavior") == "allow":
            return True
        with runs.changed:
            turn.interrupted = turn.interrupted or "Permission denied"
        return False

    def _push_all(self, message_type: str, payload: dict[str, Any]) -> None:
        frame = {"type": "session", "message": {"type": message_type, "payload": payload}}
        for connection in self.runs.core.connections(handshaken_only=True):
            connection.send_frame(frame)
