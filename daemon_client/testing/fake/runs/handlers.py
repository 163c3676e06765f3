"""Request handlers of the fake daemon's agent runs (protocol.md 5.3-5.8).

``create_agent_request`` (every host), ``agent.create.request`` and
``creation.subscribe.request`` (hosts with ``features.creationLifecycle``),
``send_agent_message_request``, ``wait_for_finish_request``, ``cancel_agent_request``,
``archive_agent_request`` and ``agent_permission_response``. Each runs on the reader thread of
the connection that sent the request and delegates the turn itself to
:class:`~daemon_client.testing.fake.runs.runs.FakeRuns`. Frame order follows the 0.1.65
transcripts: a new agent's upserts and its first ``user_message`` row come before the
creation reply, a prompt's row before the send reply, and the turn starts after the reply.
A ``callerAgentId`` becomes the new agent's ``paseo.parent-agent-id`` label on hosts with
parentage (``features.agentDetach``); other hosts drop the field, as 0.1.65 does.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.protocol.agents import PARENT_AGENT_ID_LABEL
from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.requests import agents as agents_requests
from daemon_client.testing.fake.engine.handlers import iso_now

if TYPE_CHECKING:
    from daemon_client.testing.fake.engine.handlers import HandlerRegistry, RequestContext
    from daemon_client.testing.fake.runs.runs import FakeRuns
    from daemon_client.testing.fake.runs.turns import Turn

__all__ = ["RunHandlers"]

_KEY_CONFLICT = "agent_request_key_conflict"
_UNAVAILABLE = "provider_unavailable"


@attrs.define
class _Creation:
    body: str
    snapshot: dict[str, Any]


class RunHandlers:
    """The handlers, bound to one :class:`FakeRuns`."""

    def __init__(self, runs: FakeRuns) -> None:
        self.runs = runs
        self.agents = runs.agents
        self.host_kind = runs.host_kind
        self._lock = threading.Lock()
        self._creations: dict[str, _Creation] = {}
        self.parentage = bool(runs.core.config.effective_features.get("agentDetach"))

    def install(self, registry: HandlerRegistry) -> None:
        registry.register("agent_permission_response", self._handle_permission)  # undeclared: it has no reply
        registry.serve_all(
            (
                (agents_requests.CREATE_LEGACY, self._handle_create),
                (agents_requests.SEND_MESSAGE, self._handle_send),
                (agents_requests.WAIT_FOR_FINISH, self._handle_wait),
                (agents_requests.CANCEL, self._handle_cancel),
                (agents_requests.ARCHIVE, self._handle_archive),
                (agents_requests.CREATE, self._handle_lifecycle_create),
                (agents_requests.CREATION_SUBSCRIBE, self._handle_creation_subscribe),
            ),
            host_kind=self.host_kind,
            features=self.runs.core.config.effective_features,
        )

    # -- creation ------------------------------------------------------------------------------

    def create(self, message: Mapping[str, Any], agent_id: str | None = None) -> tuple[dict[str, Any], Turn | None]:
        """Create the agent of a creation request: upserts ``initializing`` (then with its title)
        and ``idle``, and with an ``initialPrompt`` the ``user_message`` row and a registered turn."""
        runs = self.runs
        config: dict[str, Any] = message["config"]
        provider, cwd = config["provider"], config["cwd"]
        prompt = message.get("initialPrompt")
        prompt = prompt.strip() if isinstance(prompt, str) else ""
        title = config.get("title")
        title = title.strip()[:200] if isinstance(title, str) and title.strip() else (prompt[:200] or None)
        model = config.get("model", "ten-second-stream" if provider == "mock" else None)
        mode_id = config.get("modeId")
        session_id = str(uuid.uuid4())
        workspace_id = message.get("workspaceId")
        if not isinstance(workspace_id, str):
            workspace_id = runs.directory.workspaces.open(cwd)["id"]
        labels = dict(message.get("labels") or {})
        caller = message.get("callerAgentId")
        if self.parentage and isinstance(caller, str) and caller.strip():
            labels[PARENT_AGENT_ID_LABEL] = caller.strip()
        fields: dict[str, Any] = {
            "provider": provider, "cwd": cwd, "model": model, "status": "initializing", "title": None,
            "labels": labels,
            "runtimeInfo": {"provider": provider, "sessionId": session_id, "model": model, "modeId": mode_id},
            "persistence": {"provider": provider, "sessionId": session_id,
                            "metadata": {"model": model, "modeId": mode_id, "cwd": cwd}},
        }  # fmt: skip
        if self.host_kind is HostKind.CAPABLE:
            fields["workspaceId"] = workspace_id
        agent = runs.agents.upsert(agent_id, **fields)
        runs.directory.wait_idle()
        agent_id = str(agent["id"])
        if title is not None:
            runs.upsert(agent_id, title=title)
        modes = [{"id": mode_id, "label": str(mode_id)}] if mode_id else []
        runs.upsert(agent_id, status="idle", currentModeId=mode_id, availableModes=modes)
        turn: Turn | None = None
        if prompt:
            message_id = message.get("clientMessageId")
            turn, _ = runs.accept_prompt(
                agent_id, prompt, message_id if isinstance(message_id, str) else str(uuid.uuid4())
            )
        return runs.agents.get(agent_id) or agent, turn

    def _check_config(self, ctx: RequestContext) -> bool:
        config = ctx.message["config"]
        if isinstance(config, dict) and isinstance(config.get("provider"), str) and isinstance(config.get("cwd"), str):
            return True
        ctx.rpc_error("Invalid config: provider and cwd are required strings", "invalid_message")
        return False

    def _handle_create(self, ctx: RequestContext) -> None:
        if not self._check_config(ctx):
            return
        error = self.runs.provider_error(ctx.message["config"]["provider"])
        if error is not None:
            payload: dict[str, Any] = {"status": "agent_create_failed", "requestId": ctx.request_id, "error": error}
            if self.host_kind is not HostKind.BROADCAST:
                payload["errorCode"] = _UNAVAILABLE
            ctx.reply(payload, type="status")
            return
        agent, turn = self.create(ctx.message)
        ctx.reply({"status": "agent_created", "agentId": agent["id"], "requestId": ctx.request_id, "agent": agent},
                  type="status")  # fmt: skip
        if turn is not None:
            self.runs.start(turn)

    def _handle_lifecycle_create(self, ctx: RequestContext) -> None:
        if not self._check_config(ctx):
            return
        message = ctx.message
        key = message.get("idempotencyKey")
        key = key if isinstance(key, str) and key else str(uuid.uuid4())
        body = json.dumps({k: v for k, v in message.items() if k not in ("type", "requestId")}, sort_keys=True)
        with self._lock:
            known = self._creations.get(key)
        if known is not None:
            if known.body != body:
                ctx.rpc_error("Idempotency key was reused with a different request", _KEY_CONFLICT)
                return
            agent = self.agents.get(str(known.snapshot["agentId"])) if known.snapshot["agentId"] else None
            ctx.reply({"agent": agent, "error": known.snapshot["error"], "creation": dict(known.snapshot)})
            return
        error = self.runs.provider_error(message["config"]["provider"])
        creation: dict[str, Any] = {"kind": "agent", "idempotencyKey": key}
        if error is not None:
            creation.update(revision=2, phase="failed", workspaceId=None, agentId=None, error=error,
                            errorCode=_UNAVAILABLE, failedStage="agent")  # fmt: skip
            with self._lock:
                self._creations[key] = _Creation(body, creation)
            ctx.reply({"agent": None, "error": error, "creation": creation})
            return
        requested = message.get("agentId")
        agent, turn = self.create(message, requested if isinstance(requested, str) and requested else None)
        phase, revision = ("prompt_started", 4) if turn is not None else ("agent_ready", 3)
        creation.update(revision=revision, phase=phase, workspaceId=agent.get("workspaceId"), agentId=agent["id"],
                        error=None)  # fmt: skip
        with self._lock:
            self._creations[key] = _Creation(body, creation)
        ctx.reply({"agent": agent, "error": None, "creation": creation})
        if turn is not None:
            self.runs.start(turn)

    def _handle_creation_subscribe(self, ctx: RequestContext) -> None:
        with self._lock:
            known = self._creations.get(str(ctx.message["idempotencyKey"]))
        ctx.reply({"snapshot": dict(known.snapshot) if known is not None else None, "error": None})

    # -- prompts and waits ---------------------------------------------------------------------

    def _handle_send(self, ctx: RequestContext) -> None:
        requested, text = ctx.message["agentId"], ctx.message["text"]
        if not isinstance(text, str):
            ctx.rpc_error("Invalid text: expected a string", "invalid_message")
            return
        entry, error = self.agents.find(requested)
        if entry is None:
            ctx.reply({"agentId": requested, "accepted": False, "error": error})
            return
        agent_id = str(entry[0]["id"])
        message_id = ctx.message.get("messageId")
        try:
            turn, _ = self.runs.accept_prompt(agent_id, text, message_id if isinstance(message_id, str) else None)
        except KeyError:
            ctx.reply({"agentId": requested, "accepted": False, "error": f"Agent not found: {requested}"})
            return
        ctx.reply({"agentId": agent_id, "accepted": True, "error": None})
        self.runs.start(turn)

    def _handle_wait(self, ctx: RequestContext) -> None:
        timeout = ctx.message.get("timeoutMs")
        valid = isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0
        self.runs.wait_for_finish(ctx, str(ctx.message["agentId"]), float(timeout) if valid and timeout else None)

    # -- cancel, archive, permissions ----------------------------------------------------------

    def _handle_cancel(self, ctx: RequestContext) -> None:
        agent_id = ctx.message["agentId"]
        if not isinstance(agent_id, str) or self.agents.get(agent_id) is None:
            content = f"Failed to cancel running agent on request: Agent {agent_id} not found"
            ctx.send("activity_log", {"id": str(uuid.uuid4()), "timestamp": iso_now(), "type": "error",
                                      "content": content})  # fmt: skip
            return
        self.runs.cancel(agent_id)
        if ctx.request_id is not None:
            ctx.reply({"agentId": agent_id, "agent": self.agents.get(agent_id)})

    def _handle_archive(self, ctx: RequestContext) -> None:
        agent_id = ctx.message["agentId"]
        if not isinstance(agent_id, str) or self.agents.get(agent_id) is None:
            raise LookupError(f"Agent not found: {agent_id}")  # answered rpc_error handler_error
        self.runs.cancel(agent_id)
        archived_at = iso_now()
        self.runs.upsert(agent_id, archivedAt=archived_at, status="closed", requiresAttention=False,
                         attentionReason=None, attentionTimestamp=None)  # fmt: skip
        ctx.reply({"agentId": agent_id, "archivedAt": archived_at, "requestId": ctx.request_id})

    def _handle_permission(self, ctx: RequestContext) -> None:
        response = ctx.message["response"]
        if isinstance(response, dict):
            self.runs.resolve_permission(str(ctx.message["agentId"]), ctx.request_id, response, ctx.connection)
