"""``client.projects``: the project list, its updates, and a live project cache.

Reads block the caller's thread. Update handlers and ``on_change`` callbacks run on the
callback thread; the cache's state is guarded by its own lock and may be read from any
thread. After a reconnect the cache re-reads the list on the callback thread (a blocking
read is allowed there) while later updates wait behind it in order.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.errors import DaemonClientError, UnsupportedByHost
from daemon_client.protocol.directory import Page
from daemon_client.protocol.projects import ProjectList, ProjectUpdate, parse_list, parse_update
from daemon_client.protocol.requests import projects as projects_requests
from daemon_client.protocol.workspaces import WorkspaceProjectDescriptor
from daemon_client.runtime.registrations import Registrations
from daemon_client.subscriptions.events import EventManager, EventSubscription

if TYPE_CHECKING:
    from daemon_client.api.workspaces.namespace import WorkspacesNamespace
    from daemon_client.runtime.context import ClientContext

EVENT = "project.update"
_log = logging.getLogger("daemon_client.api.projects")
NO_PROJECT_LIST = "Update the host to observe projects (requires features.projectList, Paseo v0.2.4 or newer)."


@attrs.frozen
class ProjectChange:
    """What ``ProjectCache.on_change`` callbacks receive."""

    kind: str
    project_id: str
    project: WorkspaceProjectDescriptor | None


class ProjectsNamespace:
    """``client.projects``."""

    def __init__(
        self, context: ClientContext, events: EventManager, workspaces: Callable[[], WorkspacesNamespace]
    ) -> None:
        self._context = context
        self._events = events
        self._workspaces = workspaces

    def _has_project_list(self) -> bool:
        info = self._context.server_info
        return info is not None and info.feature("projectList")

    def list(self, sync: dict[str, Any] | None = None, *, timeout: float | None = None) -> ProjectList:
        """Read the project list (``project.list.request``).

        On hosts without a project list (0.1.65 and selective hosts before v0.2.4) the list
        is derived from the workspace directory (every page, without subscribing) and
        marked ``derived=True``: projects without an active workspace are missing, except
        those the host reports as empty projects, and custom names and icons appear only
        where workspace descriptors carry them.
        """
        if self._context.server_info is not None and not self._has_project_list():
            return self._derive(timeout)
        message: dict[str, Any] = {"type": projects_requests.LIST.type}
        if sync is not None:
            message["sync"] = sync
        return parse_list(self._context.request(message, timeout=timeout))

    def _derive(self, timeout: float | None) -> ProjectList:
        found: dict[str, WorkspaceProjectDescriptor] = {}
        cursor: str | None = None
        while True:
            page = self._workspaces().list(page=Page(limit=200, cursor=cursor), timeout=timeout)
            for workspace in page.entries:
                if workspace.project_id and workspace.project_id not in found:
                    key = workspace.project.project_key if workspace.project is not None else workspace.project_id
                    found[workspace.project_id] = WorkspaceProjectDescriptor(
                        project_id=workspace.project_id,
                        project_key=key,
                        project_display_name=workspace.project_display_name,
                        project_custom_name=workspace.project_custom_name,
                        project_custom_icon_revision=workspace.project_custom_icon_revision,
                        project_root_path=workspace.project_root_path,
                        project_kind=workspace.project_kind,
                    )
            if cursor is None:
                for project in page.empty_projects:
                    found.setdefault(project.project_id, project)
            cursor = page.page_info.next_cursor
            if not page.page_info.has_more or not cursor:
                return ProjectList(projects=tuple(found.values()), derived=True)

    def subscribe(
        self,
        handler: Callable[[ProjectUpdate], object],
        *,
        on_restored: Callable[[], object] | None = None,
        on_error: Callable[[BaseException], object] | None = None,
    ) -> EventSubscription:
        """Observe ``project.update`` upserts and removals. Raises ``UnsupportedByHost`` on a
        connected host without a project list (sending nothing)."""
        if self._context.server_info is not None and not self._has_project_list():
            raise UnsupportedByHost(NO_PROJECT_LIST)
        return self._events.subscribe(EVENT, handler, parse_update, on_restored=on_restored, on_error=on_error)

    def cache(self, *, timeout: float | None = None) -> ProjectCache:
        """A live, thread-safe cache of the projects (needs a host with a project list)."""
        if not self._has_project_list():
            raise UnsupportedByHost(NO_PROJECT_LIST)
        return ProjectCache(self, timeout)


class ProjectCache:
    """The daemon's projects, kept current. Subscribes first, buffers the updates that race
    the list, applies the list, then the buffered updates that are newer than it; re-reads
    the list after every reconnect. ``get(id)``, iteration, ``len()``, ``on_change(cb)``,
    ``close()``; a context manager."""

    def __init__(self, projects: ProjectsNamespace, timeout: float | None) -> None:
        self._projects = projects
        self._timeout = timeout
        self._lock = threading.Lock()
        self._rows: dict[str, WorkspaceProjectDescriptor] = {}
        self._generation: str | None = None
        self._head: int | None = None
        self._buffer: list[ProjectUpdate] | None = []
        self._listeners: Registrations[Callable[[ProjectChange], object]] = Registrations()
        self._subscription = projects.subscribe(self._on_update, on_restored=self._resync)
        try:
            self._subscription.ready.result(timeout or 15.0)
            self._load(projects.list(timeout=timeout), notify=False)
        except BaseException:
            self._subscription()
            raise

    # -------------------------------------------------------------- reading
    def get(self, project_id: str) -> WorkspaceProjectDescriptor | None:
        with self._lock:
            return self._rows.get(project_id)

    def __iter__(self) -> Iterator[WorkspaceProjectDescriptor]:
        with self._lock:
            return iter(list(self._rows.values()))

    def __len__(self) -> int:
        with self._lock:
            return len(self._rows)

    def on_change(self, callback: Callable[[ProjectChange], object]) -> Callable[[], None]:
        """Call ``callback(change)`` on the callback thread after each applied change."""
        return self._listeners.add(callback)

    def close(self) -> None:
        """Stop following the daemon (releases the observation)."""
        self._subscription.release()

    def __enter__(self) -> ProjectCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -------------------------------------------------------------- applying
    def _load(self, listed: ProjectList, *, notify: bool) -> None:
        with self._lock:
            before = dict(self._rows)
            self._rows = {project.project_id: project for project in listed.projects}
            self._generation = listed.sync.generation if listed.sync is not None else None
            self._head = listed.sync.head_seq if listed.sync is not None else None
            buffered, self._buffer = self._buffer or [], None
            changes = [self._apply_locked(update) for update in buffered]
            if notify:
                changes = _diff(before, self._rows) + changes
        self._emit([c for c in changes if c is not None])

    def _stale(self, update: ProjectUpdate) -> bool:
        """Already reflected by the list: same generation, not newer than its head."""
        return (
            update.seq is not None
            and self._head is not None
            and update.generation == self._generation
            and update.seq <= self._head
        )

    def _apply_locked(self, update: ProjectUpdate) -> ProjectChange | None:
        if self._stale(update):
            return None
        if update.seq is not None and update.generation == self._generation:
            self._head = max(self._head or 0, update.seq)
        if update.kind == "upsert" and update.project is not None:
            self._rows[update.project_id] = update.project
            return ProjectChange("upsert", update.project_id, update.project)
        if update.kind == "remove" and self._rows.pop(update.project_id, None) is not None:
            return ProjectChange("remove", update.project_id, None)
        return None

    def _on_update(self, update: ProjectUpdate) -> None:
        """Callback thread."""
        with self._lock:
            if self._buffer is not None:
                self._buffer.append(update)
                return
            change = self._apply_locked(update)
        if change is not None:
            self._emit([change])

    def _resync(self) -> None:
        """Callback thread, after a reconnect: the list again; later updates wait behind it."""
        with self._lock:
            self._buffer = []
        try:
            self._load(self._projects.list(timeout=self._timeout), notify=True)
        except DaemonClientError as exc:
            _log.warning("project cache could not re-read the list (%s); it retries after the next reconnect", exc)
            with self._lock:
                buffered, self._buffer = self._buffer or [], None
                changes = [self._apply_locked(update) for update in buffered]
            self._emit([c for c in changes if c is not None])

    def _emit(self, changes: list[ProjectChange]) -> None:
        invoke = self._projects._events.dispatcher.errors.call_isolated
        for change in changes:
            for listener in self._listeners.values():
                invoke(listener, change)


def _diff(
    before: dict[str, WorkspaceProjectDescriptor], after: dict[str, WorkspaceProjectDescriptor]
) -> list[ProjectChange | None]:
    changes: list[ProjectChange | None] = [
        ProjectChange("remove", project_id, None) for project_id in before if project_id not in after
    ]
    changes += [
        ProjectChange("upsert", project_id, project)
        for project_id, project in after.items()
        if before.get(project_id) != project
    ]
    return changes
