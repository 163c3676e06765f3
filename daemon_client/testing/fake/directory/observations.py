"""Agent and workspace directories of the fake daemon: observations and request handlers.

Owns the server-side directory observations (protocol.md 3.2 and 4.4-4.8) and the handlers of
``fetch_agents_request``, ``fetch_agent_request``, ``fetch_workspaces_request``,
``open_project_request``, ``archive_workspace_request`` and, on capable hosts,
``subscription.release.request``:

- capable hosts: one independent observation per subscribing fetch, owned by the requesting
  socket, with a daemon-issued id; updates are tagged and go to that socket only; a release or
  the end of the socket releases it;
- selective and broadcast hosts: one slot per family per server-side session (``clientId``);
  a subscribing fetch replaces its filter; untagged updates go to every socket of the session;
  the slot lives as long as the session (transcripts 03, 11 and 12).

Handlers run on connection reader threads and store mutations on test threads. One lock
(:attr:`FakeDirectory.lock`) guards the stores and observations; every frame is queued on an
:class:`~daemon_client.testing.fake.engine.outbox.Outbox` while it is held and sent afterwards by
:meth:`FakeDirectory.flush` in queue order, so deliveries follow mutation order and a reply
queued after an update is sent after it. No frame is sent under the lock.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import attrs

from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.paths import same_directory
from daemon_client.protocol.requests import agents as agents_requests
from daemon_client.protocol.requests import workspaces as workspaces_requests
from daemon_client.protocol.requests.subscriptions import RELEASE
from daemon_client.testing.fake.directory.query import (
    AGENT_SORT_KEYS,
    DEFAULT_AGENT_SORT,
    DEFAULT_WORKSPACE_SORT,
    WORKSPACE_SORT_KEYS,
    QueryError,
    agent_matches,
    agent_sort_value,
    iso_from_ms,
    paginate,
    parse_filter,
    parse_page,
    parse_scope,
    parse_sort,
    parse_subscribe,
    workspace_matches,
    workspace_sort_value,
)
from daemon_client.testing.fake.directory.stores import AgentEntry, AgentStore, MsClock, WorkspaceStore
from daemon_client.testing.fake.engine.outbox import Outbox

if TYPE_CHECKING:
    from daemon_client.testing.fake.engine.core import DaemonCore
    from daemon_client.testing.fake.engine.handlers import HandlerRegistry, RequestContext
    from daemon_client.testing.fake.engine.peer import Peer, Session

__all__ = ["DirectoryObservation", "FakeDirectory", "Family", "ReleaseHook"]

Family = Literal["agents", "workspaces"]
ReleaseHook = Callable[["Peer", str], None]
"""Called (without the lock) for every ``subscription.release.request`` with the socket and id."""

_SLOTS_KEY = "directory_slots"
"""``Session.data`` key of a legacy session's ``{family: observation}`` slots."""


@attrs.frozen
class DirectoryObservation:
    """A server-side directory observation, as :meth:`FakeDaemon.directory_observations` shows it."""

    id: str
    family: Family
    filter: dict[str, Any]
    owner: Peer | Session
    """The owning socket (capable hosts) or server-side session (legacy slot)."""
    released: bool
    legacy: bool
    scope: str | None = None


@attrs.define(eq=False)
class _Observation:
    id: str
    family: Family
    filter: dict[str, Any]
    scope: str | None
    owner: Peer | Session
    legacy: bool
    known: set[str] = attrs.field(factory=set)
    """Capable: ids this observation has delivered (snapshot or upsert) and not removed since."""
    released: bool = False
    include_background: bool = False
    """Workspaces: the request's top-level ``includeBackground``."""

    def record(self) -> DirectoryObservation:
        return DirectoryObservation(
            self.id, self.family, dict(self.filter), self.owner, self.released, self.legacy, self.scope
        )


class FakeDirectory:
    """Stores, observations and handlers of one fake daemon (``fake.directory``)."""

    def __init__(self, core: DaemonCore) -> None:
        self.core = core
        self.host_kind: HostKind = core.config.host_kind
        self.lock = threading.Lock()
        self._clock = MsClock()
        self._observations: list[_Observation] = []
        self._outbox = Outbox(self.lock, "directory")
        self._release_hooks: list[ReleaseHook] = []
        self.agents = AgentStore(self)
        self.workspaces = WorkspaceStore(self)

    # -- wiring --------------------------------------------------------------------------------

    def install(self, registry: HandlerRegistry) -> None:
        """Register the directory handlers (and, on capable hosts, release and disconnect handling)."""
        features = self.core.config.effective_features
        registry.serve_all(
            (
                (agents_requests.FETCH_AGENTS, self._handle_fetch_agents),
                (agents_requests.FETCH_AGENT, self._handle_fetch_agent),
                (workspaces_requests.FETCH_WORKSPACES, self._handle_fetch_workspaces),
                (workspaces_requests.OPEN_PROJECT, self._handle_open_project),
                (workspaces_requests.ARCHIVE, self._handle_archive_workspace),
            ),
            host_kind=self.host_kind,
            features=features,
        )
        if registry.serve(RELEASE, self._handle_release, host_kind=self.host_kind, features=features):
            registry.add_disconnect_hook(self._release_connection)

    def add_release_hook(self, hook: ReleaseHook) -> None:
        """Let another subscription family of the fake (timelines, events) see capable releases."""
        with self.lock:
            self._release_hooks.append(hook)

    def observations(self, *, include_released: bool = False) -> list[DirectoryObservation]:
        """Live observations in creation order (plus released and replaced ones if asked)."""
        with self.lock:
            self._reap_locked()
            return [o.record() for o in self._observations if include_released or not o.released]

    # -- the sink the stores report to ---------------------------------------------------------

    def next_ms(self) -> int:
        return self._clock.next()

    def agent_changed_locked(self, agent_id: str, entry: AgentEntry | None) -> None:
        active = self._active_cwds_locked()
        upsert = None if entry is None else ({"agent": entry[0], "project": entry[1]},
                                             lambda o: self._agent_in(o, entry, active))  # fmt: skip
        self._changed_locked("agents", agent_id, upsert, {"agentId": agent_id})

    def workspace_changed_locked(self, workspace_id: str, workspace: dict[str, Any] | None) -> None:
        upsert = None if workspace is None else ({"workspace": workspace}, lambda o: self._workspace_in(o, workspace))
        self._changed_locked("workspaces", workspace_id, upsert, {"id": workspace_id})

    def flush(self) -> None:
        """Send queued frames in order. One thread drains at a time; others return at once."""
        self._outbox.flush()

    def wait_idle(self, timeout: float = 5.0) -> None:
        """Block until every queued directory frame has been written; ``TimeoutError`` otherwise."""
        self._outbox.wait_idle(timeout)

    # -- observations --------------------------------------------------------------------------

    def _reap_locked(self) -> None:
        """Release legacy slots whose session expired or was forgotten (restart)."""
        sessions = self.core.sessions()  # the core lock is a leaf below this one
        for observation in self._observations:
            owner = observation.owner
            if observation.legacy and not observation.released:
                live = sessions.get(getattr(owner, "client_id", ""))
                if live is not owner:
                    observation.released = True

    def _live_locked(self, family: Family) -> list[_Observation]:
        self._reap_locked()
        return [o for o in self._observations if o.family == family and not o.released]

    def _changed_locked(
        self,
        family: Family,
        item_id: str,
        upsert: tuple[dict[str, Any], Callable[[_Observation], bool]] | None,
        removal: dict[str, Any],
    ) -> None:
        """Queue the update of a stored item (``upsert``: its fields and which observations it
        matches) or deleted one (``None``) for every live observation of ``family``: an upsert
        where it matches, else a ``removal`` where it was delivered (or on every legacy slot)."""
        message_type = "agent_update" if family == "agents" else "workspace_update"
        for observation in self._live_locked(family):
            if upsert is not None and upsert[1](observation):
                observation.known.add(item_id)
                payload = {"kind": "upsert", **upsert[0]}
            elif observation.legacy or item_id in observation.known:
                observation.known.discard(item_id)
                payload = {"kind": "remove", **removal}
            else:
                continue
            self._queue_update_locked(observation, message_type, payload)

    def _queue_update_locked(self, observation: _Observation, message_type: str, payload: dict[str, Any]) -> None:
        if observation.legacy:
            frame = {"type": "session", "message": {"type": message_type, "payload": payload}}
            session: Session = observation.owner  # type: ignore[assignment]

            def to_session() -> None:
                for target in self.core.session_connections(session):
                    target.send_frame(frame)

            self._outbox.enqueue_locked(to_session)
        else:
            tagged = {"subscriptionId": observation.id, **payload}
            frame = {"type": "session", "message": {"type": message_type, "payload": tagged}}
            connection: Peer = observation.owner  # type: ignore[assignment]

            def to_socket() -> None:
                connection.send_frame(frame)

            self._outbox.enqueue_locked(to_socket)

    def _establish_locked(
        self,
        ctx: RequestContext,
        family: Family,
        filter_: dict[str, Any],
        scope: str | None,
        known: set[str],
        *,
        include_background: bool = False,
    ) -> str:
        """A new observation for a subscribing fetch; legacy hosts replace the session's slot."""
        observation_id = str(uuid.uuid4())
        if self.host_kind is HostKind.CAPABLE or ctx.session is None:
            owner: Peer | Session = ctx.connection
            observation = _Observation(observation_id, family, filter_, scope, owner, legacy=False, known=known)
        else:
            session = ctx.session
            slots: dict[str, _Observation] = session.data.setdefault(_SLOTS_KEY, {})
            previous = slots.get(family)
            if previous is not None:
                previous.released = True
            observation = _Observation(observation_id, family, filter_, None, session, legacy=True, known=known)
            slots[family] = observation
        observation.include_background = include_background
        self._observations.append(observation)
        return observation_id

    def _release_connection(self, connection: Peer) -> None:
        """Disconnect hook (capable): everything the socket owned is released."""
        with self.lock:
            for observation in self._observations:
                if observation.owner is connection:
                    observation.released = True

    def _active_cwds_locked(self) -> set[str] | None:
        if not any(o.scope == "active" for o in self._observations if not o.released):
            return None
        return self._workspace_dirs_locked()

    def _workspace_dirs_locked(self) -> set[str]:
        return {str(w.get("workspaceDirectory") or w.get("projectRootPath")) for w in self.workspaces.values_locked()}

    def _agent_in(self, observation: _Observation, entry: AgentEntry, active: set[str] | None) -> bool:
        scoped = active if observation.scope == "active" else None
        return agent_matches(entry[0], entry[1], observation.filter, active_cwds=scoped)

    def _workspace_in(self, observation: _Observation, workspace: Mapping[str, Any]) -> bool:
        use_prefix = self.host_kind is not HostKind.CAPABLE
        return workspace_matches(workspace, observation.filter, include_background=observation.include_background,
                                 use_id_prefix=use_prefix)  # fmt: skip

    # -- sending replies in order ----------------------------------------------------------------

    def _answer(self, ctx: RequestContext, build: Callable[[], dict[str, Any]]) -> None:
        """Reply with what ``build`` returns, run and queued under the lock (so the reply shows
        the state its queue position follows); a :class:`QueryError` it raises is answered with
        an ``rpc_error`` instead."""
        try:
            with self.lock:
                body = build()
                self._outbox.enqueue_locked(lambda: ctx.reply(body))
        except QueryError as error:
            self._fail(ctx, error)
            return
        self.flush()

    def _reply_later(self, ctx: RequestContext, payload: Mapping[str, Any]) -> None:
        body = dict(payload)
        self._answer(ctx, lambda: body)

    def _fail(self, ctx: RequestContext, error: QueryError) -> None:
        with self.lock:
            self._outbox.enqueue_locked(lambda: ctx.rpc_error(error.message, error.code))
        self.flush()

    # -- handlers ------------------------------------------------------------------------------

    def _handle_fetch_agents(self, ctx: RequestContext) -> None:
        self._answer(ctx, lambda: self._agents_page_locked(ctx))

    def _handle_fetch_workspaces(self, ctx: RequestContext) -> None:
        self._answer(ctx, lambda: self._workspaces_page_locked(ctx))

    def _agents_page_locked(self, ctx: RequestContext) -> dict[str, Any]:
        message = ctx.message
        filter_ = parse_filter(message)
        sort = parse_sort(message, AGENT_SORT_KEYS, DEFAULT_AGENT_SORT)
        page = parse_page(message)
        subscribe = parse_subscribe(message, capable=self.host_kind is HostKind.CAPABLE)
        scope = parse_scope(message)
        active = self._workspace_dirs_locked() if scope == "active" else None
        matching = [e for e in self.agents.entries_locked() if agent_matches(*e, filter_, active_cwds=active)]
        result = paginate(matching, sort=sort, page=page, value_of=lambda e, k: agent_sort_value(e[0], k),
                          id_of=lambda e: str(e[0]["id"]))  # fmt: skip
        payload: dict[str, Any] = {}
        if subscribe:
            known = {str(agent["id"]) for agent, _ in matching}
            payload["subscriptionId"] = self._establish_locked(ctx, "agents", filter_, scope, known)
        payload["entries"] = [{"agent": agent, "project": project} for agent, project in result.items]
        payload["pageInfo"] = result.page_info
        return payload

    def _workspaces_page_locked(self, ctx: RequestContext) -> dict[str, Any]:
        message = ctx.message
        capable = self.host_kind is HostKind.CAPABLE
        filter_ = parse_filter(message)
        sort = parse_sort(message, WORKSPACE_SORT_KEYS, DEFAULT_WORKSPACE_SORT)
        page = parse_page(message)
        subscribe = parse_subscribe(message, capable=capable)
        background = message.get("includeBackground") is True
        matching = [
            w
            for w in self.workspaces.values_locked()
            if workspace_matches(w, filter_, include_background=background, use_id_prefix=not capable)
        ]
        result = paginate(matching, sort=sort, page=page, value_of=workspace_sort_value,
                          id_of=lambda w: str(w["id"]))  # fmt: skip
        payload: dict[str, Any] = {}
        if subscribe:
            known = {str(w["id"]) for w in matching}
            payload["subscriptionId"] = self._establish_locked(
                ctx, "workspaces", filter_, None, known, include_background=background
            )
        payload["entries"] = result.items
        if capable:
            payload["emptyProjects"] = list(self.workspaces.empty_projects) if page.cursor is None else []
        payload["pageInfo"] = result.page_info
        return payload

    def _handle_fetch_agent(self, ctx: RequestContext) -> None:
        wanted = ctx.message["agentId"]
        entry, error = self.agents.find(wanted)
        if entry is None:
            self._reply_later(ctx, {"agent": None, "project": None, "error": error})
        else:
            self._reply_later(ctx, {"agent": entry[0], "project": entry[1], "error": None})

    def _handle_open_project(self, ctx: RequestContext) -> None:
        cwd = ctx.message["cwd"]
        if not isinstance(cwd, str) or not cwd:
            self._fail(ctx, QueryError("Invalid cwd: expected a non-empty string"))
            return
        with self.lock:
            missing = any(same_directory(cwd, gone) for gone in self.workspaces.missing_directories)
        if missing:
            error = f"Directory not found: {cwd}"
            self._reply_later(ctx, {"workspace": None, "error": error, "errorCode": "directory_not_found"})
            return
        workspace = self.workspaces.open(cwd)  # queues (and sends) the workspace_update first
        self._reply_later(ctx, {"workspace": workspace, "error": None})

    def _handle_archive_workspace(self, ctx: RequestContext) -> None:
        workspace_id = ctx.message["workspaceId"]
        if isinstance(workspace_id, str) and self.workspaces.discard(workspace_id):
            with self.lock:
                archived_at = iso_from_ms(self.next_ms())
            self._reply_later(ctx, {"workspaceId": workspace_id, "archivedAt": archived_at, "error": None})
        else:
            error = f"Workspace not found: {workspace_id}"
            self._reply_later(ctx, {"workspaceId": workspace_id, "archivedAt": None, "error": error})

    def _handle_release(self, ctx: RequestContext) -> None:
        subscription_id = ctx.message["subscriptionId"]
        with self.lock:
            for observation in self._observations:
                if observation.id == subscription_id and observation.owner is ctx.connection:
                    observation.released = True
            hooks = list(self._release_hooks)
        for hook in hooks:
            hook(ctx.connection, str(subscription_id))
        self._reply_later(ctx, {"subscriptionId": subscription_id})
