"""The project store of the fake daemon (``fake.projects``): list with sync metadata, live updates.

Owns the ``WorkspaceProjectDescriptor`` rows of protocol.md 8.1, their change log (a
``generation`` string and a ``seq`` that grows by one with every change; each row's ``syncSeq``
is the seq of its last upsert, each removal leaves a ``{id, seq}`` tombstone), the
``project.update`` pushes (published through
:class:`~daemon_client.testing.fake.events.FakeEvents`, event name ``"project.update"``) and the
``project.list.request`` handler. Only hosts with ``features.projectList`` (capable by default)
get the handler and the pushes; elsewhere ``project.list.request`` stays unhandled and is
answered ``rpc_error`` ``unknown_schema``, as by 0.1.65 (section 8.2), and the store is inert.

``project.list.request {sync?}``: without a usable cursor the reply is a ``snapshot`` (reason
``no_cursor``, or ``generation_changed`` for a cursor of another generation); a cursor
``{generation, afterSeq}`` of the current generation gets ``changes``: the rows with
``syncSeq > afterSeq`` and the removals with ``seq > afterSeq``.

Race tests: :attr:`FakeProjects.before_list_reply` runs on the handler thread after the
reply's rows were taken and before the reply is queued. Updates it causes are therefore
written **before** the list response, and the response does **not** contain them (its rows and
``headSeq`` are older than those updates), like a daemon that took its snapshot just before a
change: the client must apply the buffered update (``seq > syncSeq``/``headSeq``).

Test threads mutate the store and reader threads run the handler. One lock
(:attr:`FakeProjects.lock`) guards the store; pushes and replies are queued on the event outbox
while it is held (taking the event lock inside it) and written after it is released. No frame
is sent under a lock.
"""

from __future__ import annotations

import copy
import posixpath
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from daemon_client.protocol.requests.projects import LIST
from daemon_client.testing.fake.directory.query import camel_case

if TYPE_CHECKING:
    from daemon_client.testing.fake.engine.core import DaemonCore
    from daemon_client.testing.fake.engine.handlers import HandlerRegistry, RequestContext
    from daemon_client.testing.fake.events import FakeEvents

__all__ = ["PROJECT_UPDATE", "FakeProjects"]

PROJECT_UPDATE = "project.update"


def _new_generation() -> str:
    return f"gen-{uuid.uuid4().hex[:12]}"


class FakeProjects:
    """Projects and the project list handler of one fake daemon (``fake.projects``)."""

    def __init__(self, core: DaemonCore, events: FakeEvents) -> None:
        self.core = core
        self.events = events
        self.enabled: bool = LIST.exists_on(core.config.host_kind, core.config.effective_features)
        """Whether this host has ``features.projectList`` (handler installed, updates published)."""
        self.before_list_reply: Callable[[], None] | None = None
        """Called without arguments on the handler thread after a list reply's rows were taken
        and before it is sent (see the module docstring)."""
        self.lock = threading.Lock()
        self._rows: dict[str, dict[str, Any]] = {}
        self._removals: dict[str, int] = {}
        self._generation = _new_generation()
        self._seq = 0

    # -- wiring --------------------------------------------------------------------------------

    def install(self, registry: HandlerRegistry) -> None:
        """Serve ``project.list.request`` on the hosts its declaration names (``features.projectList``)."""
        config = self.core.config
        registry.serve(LIST, self._handle_list, host_kind=config.host_kind, features=config.effective_features)

    # -- the store -----------------------------------------------------------------------------

    @property
    def generation(self) -> str:
        with self.lock:
            return self._generation

    @property
    def seq(self) -> int:
        """The head of the change log (``sync.headSeq``): the seq of the latest change."""
        with self.lock:
            return self._seq

    def upsert(self, project_id: str, **fields: Any) -> dict[str, Any]:
        """Create or update a project, bump ``seq`` and publish ``project.update`` (upsert).

        ``fields`` (snake_case or camelCase) override the descriptor. A new project defaults to
        ``projectKey`` = id, ``projectRootPath`` = the id when it is an absolute path (else
        ``/home/dev/projects/<last segment of the id>``), ``projectDisplayName`` = the root's basename,
        ``projectCustomName`` null, ``projectKind`` ``"non_git"``. Returns the stored row
        (with its new ``syncSeq``).
        """
        overrides = {camel_case(key): copy.deepcopy(value) for key, value in fields.items()}
        overrides.pop("projectId", None)
        overrides.pop("syncSeq", None)
        with self.lock:
            existing = self._rows.get(project_id)
            row = copy.deepcopy(existing) if existing is not None else _default_row(project_id, overrides)
            row.update(overrides)
            seq = self._next_seq_locked()
            row["syncSeq"] = seq
            self._rows[project_id] = row
            self._removals.pop(project_id, None)
            payload = {"kind": "upsert", "project": copy.deepcopy(row), "generation": self._generation, "seq": seq}
            ticket = self._publish_locked(payload)
            result = copy.deepcopy(row)
        self._drain(ticket)
        return result

    def remove(self, project_id: str) -> bool:
        """Remove a project, bump ``seq``, publish ``project.update`` (remove); ``False`` if unknown."""
        with self.lock:
            if self._rows.pop(project_id, None) is None:
                return False
            seq = self._next_seq_locked()
            self._removals[project_id] = seq
            payload = {"kind": "remove", "projectId": project_id, "generation": self._generation, "seq": seq}
            ticket = self._publish_locked(payload)
        self._drain(ticket)
        return True

    def get(self, project_id: str) -> dict[str, Any] | None:
        with self.lock:
            row = self._rows.get(project_id)
            return copy.deepcopy(row) if row is not None else None

    def values(self) -> list[dict[str, Any]]:
        """Copies of every project row, in insertion order."""
        with self.lock:
            return copy.deepcopy(list(self._rows.values()))

    def new_generation(self, generation: str | None = None) -> str:
        """Start a new generation (as after a daemon state reset): forget the removal tombstones;
        rows and ``seq`` are kept. Cursors of the old generation then get a ``snapshot`` with
        reason ``generation_changed``. Publishes nothing; returns the generation."""
        with self.lock:
            self._generation = generation if generation is not None else _new_generation()
            self._removals.clear()
            return self._generation

    # -- internals -----------------------------------------------------------------------------

    def _next_seq_locked(self) -> int:
        self._seq += 1
        return self._seq

    def _publish_locked(self, payload: dict[str, Any]) -> int | None:
        if not self.enabled:
            return None
        with self.events.lock:
            return self.events.queue_event_locked(PROJECT_UPDATE, payload)[0]

    def _drain(self, ticket: int | None) -> None:
        if ticket is not None:
            self.events.drain(ticket)

    def _list_payload_locked(self, sync: Mapping[str, Any] | None) -> dict[str, Any]:
        generation = sync.get("generation") if sync is not None else None
        after = sync.get("afterSeq") if sync is not None else None
        head = self._seq
        meta: dict[str, Any] = {"generation": self._generation, "headSeq": head}
        if generation == self._generation and isinstance(after, int) and not isinstance(after, bool):
            rows = sorted((r for r in self._rows.values() if r["syncSeq"] > after), key=lambda r: int(r["syncSeq"]))
            removed = sorted((s, i) for i, s in self._removals.items() if s > after)
            meta.update(mode="changes", removals=[{"id": i, "seq": s} for s, i in removed])
        else:
            rows = list(self._rows.values())
            reason = "generation_changed" if isinstance(generation, str) else "no_cursor"
            meta.update(mode="snapshot", reason=reason, removals=[])
        return {"projects": copy.deepcopy(rows), "sync": meta}

    # -- handler -------------------------------------------------------------------------------

    def _handle_list(self, ctx: RequestContext) -> None:
        sync = ctx.message.get("sync")
        if sync is not None and not isinstance(sync, dict):
            ctx.rpc_error("Invalid sync: expected an object", "invalid_message")
            return
        hook = self.before_list_reply
        if hook is None:  # the reply is queued atomically with the rows it shows
            with self.lock, self.events.lock:
                payload = self._list_payload_locked(sync)
                ticket = self.events.queue_locked(lambda: ctx.reply(payload))
            self.events.drain(ticket)
            return
        with self.lock:
            taken = self._list_payload_locked(sync)
        hook()
        self.events.send_after(lambda: ctx.reply(taken))


def _default_row(project_id: str, overrides: Mapping[str, Any]) -> dict[str, Any]:
    root = overrides.get("projectRootPath")
    if not isinstance(root, str):
        name = project_id.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1] or "project"
        root = project_id if project_id.startswith("/") else f"/home/dev/projects/{name}"
    return {
        "projectId": project_id,
        "projectKey": project_id,
        "projectDisplayName": posixpath.basename(root.rstrip("/")) or root,
        "projectCustomName": None,
        "projectRootPath": root,
        "projectKind": "non_git",
        "syncSeq": 0,
    }
