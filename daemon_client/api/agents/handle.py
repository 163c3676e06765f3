"""``AgentHandle``: one agent — its last snapshot, its timeline, and what can be done to it.

Actions block the caller's thread with a timeout and may be called from callbacks
(replies are delivered by the reader thread). The snapshot is updated on the callback
thread by routed directory updates, and by the replies of ``refresh``,
``wait_for_finish``, ``cancel`` and history reads.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.api.agents.controls import AgentControls
from daemon_client.api.agents.reads import fetch_agent
from daemon_client.api.agents.timeline import AgentTimeline
from daemon_client.api.agents.turn_outcome import NoObserver, TurnObserver
from daemon_client.api.common.local_handle import LocalHandle
from daemon_client.errors import RequestTimeout, check_reply
from daemon_client.protocol.agents import AgentSnapshot, ProjectPlacement
from daemon_client.protocol.lenient import structure_optional
from daemon_client.protocol.models import SessionMessage
from daemon_client.protocol.requests import agents as agents_requests

if TYPE_CHECKING:
    from daemon_client.runtime.context import ClientContext
    from daemon_client.subscriptions.timeline import TimelineManager

WAIT_GRACE = 5.0
PERMISSION_WAIT = 15.0


@attrs.frozen
class RunResult:
    """How a turn ended (``wait_for_finish``/``run``).

    ``status``: ``"idle"`` (finished), ``"error"``, ``"permission"`` (waits for an answer) or
    ``"timeout"`` (still running: a timeout does not cancel the agent). ``last_message`` is
    the concatenated text of the last assistant message (``None`` on timeout).

    ``outcome``: how the turn ended, from its timeline event: ``"completed"``, ``"failed"`` or
    ``"canceled"`` (a turn canceled from another thread or client also reads ``status="idle"``,
    with its partial text). ``None`` when no turn end was observed: the wait did not end with a
    turn (``timeout``, ``permission``, an agent that was not running), or observing was off
    or impossible.
    """

    status: str
    final: AgentSnapshot | None = None
    error: str | None = None
    last_message: str | None = None
    outcome: str | None = None


class AgentHandle(LocalHandle[AgentSnapshot], AgentControls):
    """A local reference to one agent (``client.agents.ref(id)``); creating it fetches nothing.

    Its snapshot follows every update this client's live agent observations receive for
    it, and the replies of this handle's calls. Properties read ``None`` until a snapshot
    has been seen. Turn completion is reported by the timeline's ``turn_*`` events and by
    ``wait_for_finish``, never inferred from a status change.
    """

    def __init__(
        self,
        context: ClientContext,
        timelines: TimelineManager,
        agent_id: str,
        snapshot: AgentSnapshot | None = None,
    ) -> None:
        super().__init__(agent_id, snapshot)
        self._context = context
        self._project: ProjectPlacement | None = None
        self.timeline = AgentTimeline(agent_id, self.note_snapshot, timelines, context)
        """This agent's timeline: ``subscribe``, ``refetch``, ``pages``, ``stream``."""

    @property
    def status(self) -> str | None:
        return self._snapshot.status if self._snapshot is not None else None

    @property
    def title(self) -> str | None:
        return self._snapshot.title if self._snapshot is not None else None

    @property
    def project(self) -> ProjectPlacement | None:
        return self._project

    def note_project(self, project: ProjectPlacement | None) -> None:
        """Record the agent's project placement from a reply or update; called by the client."""
        self._project = project

    def refresh(self, timeout: float | None = None) -> AgentSnapshot | None:
        """Fetch the agent (``fetch_agent_request``); raises ``RpcError`` if the daemon does not know it."""
        snapshot, project = fetch_agent(self._context, self.id, timeout)
        if snapshot is not None:
            self.note_snapshot(snapshot)
            self._project = project
        return snapshot

    def send(
        self,
        text: str,
        *,
        message_id: str | None = None,
        images: Sequence[Mapping[str, str]] | None = None,
        timeout: float | None = None,
    ) -> str:
        """Send a prompt; returns once the daemon accepted it (the run has started), with the
        message's ``messageId``. A running turn is interrupted. ``accepted: false`` → ``RpcError``."""
        message_id = message_id or str(uuid.uuid4())
        message: dict[str, Any] = {
            "type": agents_requests.SEND_MESSAGE.type,
            "agentId": self.id,
            "text": text,
            "messageId": message_id,
        }
        if images:
            message["images"] = [dict(image) for image in images]
        payload = self._context.request(message, timeout=timeout)
        check_reply(
            payload,
            agents_requests.SEND_MESSAGE.type,
            accepted_field="accepted",
            missing="the daemon did not accept the message",
        )
        return message_id

    def wait_for_finish(self, timeout: float = 600.0, *, observe: bool = True) -> RunResult:
        """Wait for the end of the current or next turn, up to ``timeout`` seconds.

        Returns a :class:`RunResult`; a timeout is the status ``"timeout"``, not an
        exception, and leaves the agent running. With ``observe`` (the default) the agent's
        timeline is followed for the duration of the wait, so that ``outcome`` says whether
        the turn completed, failed or was canceled (on capable hosts this costs one
        subscription request).
        """
        with self._observer(observe, after_start=False) as observer:
            return self._wait(timeout, observer)

    def run(self, text: str, timeout: float = 600.0, *, observe: bool = True) -> RunResult:
        """``send(text)`` then ``wait_for_finish(timeout)``; ``result.last_message`` is the answer
        and ``result.outcome`` how the prompt's turn ended (see ``wait_for_finish``)."""
        with self._observer(observe, after_start=True) as observer:
            self.send(text)
            return self._wait(timeout, observer)

    def _observer(self, observe: bool, *, after_start: bool) -> TurnObserver | NoObserver:
        if not observe:
            return NoObserver()
        return TurnObserver(self._context, self.timeline.subscribe, self.id, after_start=after_start)

    def _wait(self, timeout: float, observer: TurnObserver | NoObserver) -> RunResult:
        message: dict[str, Any] = {"type": agents_requests.WAIT_FOR_FINISH.type, "agentId": self.id}
        if timeout > 0:
            message["timeoutMs"] = int(timeout * 1000)
        payload = self._context.request(message, timeout=timeout + WAIT_GRACE)
        final = payload.get("final")
        snapshot = structure_optional(final, AgentSnapshot, "final")
        if snapshot is not None:
            self.note_snapshot(snapshot)
        error, last = payload.get("error"), payload.get("lastMessage")
        status = str(payload.get("status", ""))
        return RunResult(
            status=status,
            final=snapshot,
            error=error if isinstance(error, str) else None,
            last_message=last if isinstance(last, str) else None,
            outcome=observer.outcome(status),
        )

    def cancel(self, timeout: float | None = None) -> AgentSnapshot | None:
        """Interrupt the running turn (the timeline then shows ``turn_canceled``).

        Older daemons never answer for an agent that is not loaded: that surfaces as
        ``RequestTimeout`` (nothing was running).
        """
        payload = self._context.call(agents_requests.CANCEL, {"agentId": self.id}, timeout)
        agent = payload.get("agent")
        snapshot = structure_optional(agent, AgentSnapshot, "agent")
        if snapshot is not None:
            self.note_snapshot(snapshot)
        return snapshot

    def archive(self, timeout: float | None = None) -> str | None:
        """Archive the agent (interrupts a run); returns ``archivedAt``. Sending a message later
        unarchives it."""
        payload = self._context.request({"type": agents_requests.ARCHIVE.type, "agentId": self.id}, timeout=timeout)
        archived_at = payload.get("archivedAt")
        if isinstance(archived_at, str) and self._snapshot is not None:
            self.note_snapshot(attrs.evolve(self._snapshot, archived_at=archived_at))
        return archived_at if isinstance(archived_at, str) else None

    def respond_to_permission(
        self,
        request_id: str,
        *,
        allow: bool,
        message: str | None = None,
        selected_action_id: str | None = None,
        updated_input: Mapping[str, Any] | None = None,
        interrupt: bool | None = None,
        wait: bool = False,
        timeout: float = PERMISSION_WAIT,
    ) -> None:
        """Answer a permission request (``request_id`` is the permission's id).

        The daemon sends no reply; with ``wait=True`` this waits up to ``timeout`` for the
        confirmation (a ``permission_resolved`` event, which needs a live timeline
        subscription of this agent on current daemons, or an ``agent_permission_resolved``
        push) and raises ``RequestTimeout`` if none arrives.
        """
        response: dict[str, Any] = {"behavior": "allow" if allow else "deny"}
        if selected_action_id is not None:
            response["selectedActionId"] = selected_action_id
        if allow and updated_input is not None:
            response["updatedInput"] = dict(updated_input)
        if not allow and message is not None:
            response["message"] = message
        if not allow and interrupt is not None:
            response["interrupt"] = interrupt
        frame = {"type": "agent_permission_response", "agentId": self.id, "requestId": request_id, "response": response}
        if not wait:
            self._context.send_message(frame)
            return
        confirmed, cancel = self._context.watch(
            ("agent_stream", "agent_permission_resolved"), lambda m: _resolves(m, self.id, request_id)
        )
        try:
            self._context.send_message(frame)
            try:
                confirmed.result(timeout)
            except FutureTimeout:
                raise RequestTimeout(
                    f"no confirmation of permission {request_id} within {timeout:g} s",
                    request_type="agent_permission_response",
                    timeout=timeout,
                ) from None
        finally:
            cancel()

    def __repr__(self) -> str:
        return f"<AgentHandle {self.id} {self.status or 'unknown'}>"


def _resolves(message: SessionMessage, agent_id: str, request_id: str) -> bool:
    payload = message.payload
    if payload.get("agentId") != agent_id:
        return False
    if message.type == "agent_permission_resolved":
        return payload.get("requestId") == request_id
    event = payload.get("event")
    if not isinstance(event, Mapping):
        return False
    return event.get("type") == "permission_resolved" and event.get("requestId") == request_id
