"""The fake daemon's agent and workspace stores (``fake.agents``, ``fake.workspaces``).

Owns the records (``AgentSnapshotPayload`` with its ``ProjectPlacementPayload``, protocol.md
4.2 and 5.1; ``WorkspaceDescriptorPayload``, 9.3) and their defaults, shaped like the 0.1.65
transcripts 02 and 08 (current-daemon fields are added on capable hosts). Tests mutate the
stores from their own thread while request handlers read them on connection reader threads:
every access takes the directory's single lock, each mutation queues the resulting
``agent_update`` / ``workspace_update`` frames while holding it, and the frames are sent
afterwards by :meth:`DirectorySink.flush`, never under the lock.
"""

from __future__ import annotations

import copy
import posixpath
import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any, Protocol

from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.paths import same_directory
from daemon_client.testing.fake.directory.query import camel_case, iso_from_ms

__all__ = ["DEFAULT_CWD", "AgentStore", "DirectorySink", "WorkspaceStore", "default_placement"]

DEFAULT_CWD = "/home/dev/projects/demo"
_PROJECTS_ROOT = "/home/dev/projects"

AgentEntry = tuple[dict[str, Any], dict[str, Any]]
"""A stored agent: (snapshot, placement). Stored dicts are replaced, never mutated in place."""


class DirectorySink(Protocol):
    """What the stores need from the directory that owns them (see :mod:`fake_directory`)."""

    lock: threading.Lock
    host_kind: HostKind

    def next_ms(self) -> int:
        """A strictly increasing wall-clock timestamp in epoch ms; call with the lock held."""

    def agent_changed_locked(self, agent_id: str, entry: AgentEntry | None) -> None:
        """Queue ``agent_update`` frames for a stored (``entry``) or deleted (``None``) agent."""

    def workspace_changed_locked(self, workspace_id: str, workspace: dict[str, Any] | None) -> None:
        """Queue ``workspace_update`` frames for a stored or deleted workspace."""

    def flush(self) -> None:
        """Send the queued frames in order; call without the lock."""


def _camel(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {camel_case(key): value for key, value in fields.items()}


def default_placement(cwd: str) -> dict[str, Any]:
    """Placement of a non-git checkout (transcript 02): ``projectKey`` = cwd, name = basename."""
    return {
        "projectKey": cwd,
        "projectName": posixpath.basename(cwd.rstrip("/")) or cwd,
        "checkout": {
            "cwd": cwd,
            "isGit": False,
            "currentBranch": None,
            "remoteUrl": None,
            "worktreeRoot": None,
            "isPaseoOwnedWorktree": False,
            "mainRepoRoot": None,
        },
    }


def _merge_placement(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = {**base, **override}
    if isinstance(base.get("checkout"), dict) and isinstance(override.get("checkout"), dict):
        merged["checkout"] = {**base["checkout"], **override["checkout"]}
    return merged


def _default_agent(agent_id: str, cwd: str, now: str, host_kind: HostKind) -> dict[str, Any]:
    session_id = str(uuid.uuid4())
    agent: dict[str, Any] = {
        "id": agent_id,
        "provider": "mock",
        "cwd": cwd,
        "model": "ten-second-stream",
        "thinkingOptionId": None,
        "effectiveThinkingOptionId": None,
        "runtimeInfo": {"provider": "mock", "sessionId": session_id, "model": "ten-second-stream", "modeId": None},
        "createdAt": now,
        "updatedAt": now,
        "lastUserMessageAt": None,
        "status": "idle",
        "capabilities": {
            "supportsStreaming": True,
            "supportsSessionPersistence": True,
            "supportsDynamicModes": False,
            "supportsMcpServers": False,
            "supportsReasoningStream": True,
            "supportsToolInvocations": True,
        },
        "currentModeId": None,
        "availableModes": [],
        "features": [],
        "pendingPermissions": [],
        "persistence": {"provider": "mock", "sessionId": session_id},
        "title": None,
        "labels": {},
        "requiresAttention": False,
        "attentionReason": None,
        "attentionTimestamp": None,
        "archivedAt": None,
    }
    if host_kind is HostKind.CAPABLE:
        agent["activeTurn"] = None
    return agent


class AgentStore:
    """``fake.agents``: the agents the fake lists, fetches and reports in ``agent_update``."""

    def __init__(self, sink: DirectorySink) -> None:
        self._sink = sink
        self._entries: dict[str, AgentEntry] = {}

    def upsert(self, agent_id: str | None = None, **fields: Any) -> dict[str, Any]:
        """Create or update an agent and notify observations; returns the full snapshot.

        ``fields`` (snake_case or camelCase) override the snapshot; ``project=`` overrides the
        placement (merged, ``checkout`` too). A new agent gets ``str(uuid4())`` unless
        ``agent_id`` is given. ``updatedAt`` is bumped unless overridden.
        """
        project = fields.pop("project", None)
        overrides = _camel(fields)
        agent_id = agent_id or overrides.pop("id", None)
        overrides.pop("id", None)
        with self._sink.lock:
            now_ms = self._sink.next_ms()
            existing = self._entries.get(agent_id) if agent_id is not None else None
            if existing is None:
                new_id = agent_id or str(uuid.uuid4())
                cwd = overrides.get("cwd", DEFAULT_CWD)
                agent, placement = _default_agent(new_id, cwd, iso_from_ms(now_ms), self._sink.host_kind), None
            else:
                agent, placement = copy.deepcopy(existing[0]), copy.deepcopy(existing[1])
                agent["updatedAt"] = iso_from_ms(now_ms)
            agent.update(copy.deepcopy(overrides))
            if placement is None or ("cwd" in overrides and overrides["cwd"] != placement["checkout"].get("cwd")):
                placement = default_placement(str(agent["cwd"]))
            if project is not None:
                placement = _merge_placement(placement, copy.deepcopy(project))
            entry = (agent, placement)
            self._entries[agent["id"]] = entry
            self._sink.agent_changed_locked(agent["id"], entry)
            result = copy.deepcopy(agent)
        self._sink.flush()
        return result

    def remove(self, agent_id: str) -> None:
        """Delete an agent (no-op if unknown); observations get ``{"kind":"remove","agentId":..}``."""
        with self._sink.lock:
            if self._entries.pop(agent_id, None) is None:
                return
            self._sink.agent_changed_locked(agent_id, None)
        self._sink.flush()

    def get(self, agent_id: str) -> dict[str, Any] | None:
        with self._sink.lock:
            entry = self._entries.get(agent_id)
            return copy.deepcopy(entry[0]) if entry is not None else None

    def placement(self, agent_id: str) -> dict[str, Any] | None:
        """The ``project`` placement sent beside the agent."""
        with self._sink.lock:
            entry = self._entries.get(agent_id)
            return copy.deepcopy(entry[1]) if entry is not None else None

    def all(self) -> list[dict[str, Any]]:
        with self._sink.lock:
            return [copy.deepcopy(agent) for agent, _ in self._entries.values()]

    def find(self, identifier: object) -> tuple[AgentEntry | None, str | None]:
        """``fetch_agent_request`` lookup: full id, unique id prefix or exact title -> (entry, error)."""
        with self._sink.lock:
            entries = list(self._entries.values())
        found = [e for e in entries if e[0]["id"] == identifier]
        if not found and isinstance(identifier, str) and identifier:
            found = [e for e in entries if str(e[0]["id"]).startswith(identifier)]
            found = found or [e for e in entries if e[0].get("title") == identifier]
        if len(found) == 1:
            return found[0], None
        if found:
            return None, f"Ambiguous agent identifier: {identifier}"
        return None, f"Agent not found: {identifier}"

    def entries_locked(self) -> list[AgentEntry]:
        """The stored entries themselves (read-only); call with the directory lock held."""
        return list(self._entries.values())


def _default_workspace(workspace_id: str, directory: str, host_kind: HostKind) -> dict[str, Any]:
    name = posixpath.basename(directory.rstrip("/")) or directory
    workspace: dict[str, Any] = {
        "id": workspace_id,
        "projectId": directory,
        "projectDisplayName": name,
        "projectRootPath": directory,
        "workspaceDirectory": directory,
        "projectKind": "non_git",
        "workspaceKind": "directory",
        "name": name,
        "archivingAt": None,
        "status": "done",
        "activityAt": None,
        "diffStat": None,
        "scripts": [],
        "project": default_placement(directory),
    }
    if host_kind is HostKind.CAPABLE:
        workspace.update(
            projectCustomName=None,
            title=None,
            pinnedAt=None,
            labels=[],
            statusEnteredAt=None,
            gitRuntime=None,
            githubRuntime=None,
        )
    return workspace


class WorkspaceStore:
    """``fake.workspaces``: the workspaces the fake lists, opens, archives and reports."""

    def __init__(self, sink: DirectorySink) -> None:
        self._sink = sink
        self._workspaces: dict[str, dict[str, Any]] = {}
        self.missing_directories: set[str] = set()
        """Directories ``open_project_request`` reports as not found (``directory_not_found``)."""
        self.empty_projects: list[dict[str, Any]] = []
        """``emptyProjects`` of the first ``fetch_workspaces_response`` page on capable hosts."""

    def _new_id(self, directory: str) -> str:
        if self._sink.host_kind is HostKind.CAPABLE:
            return f"ws-{uuid.uuid4().hex[:12]}"
        return directory  # 0.1.65: the id is the workspace directory

    def upsert(self, workspace_id: str | None = None, **fields: Any) -> dict[str, Any]:
        """Create or update a workspace and notify observations; returns the full descriptor.

        ``fields`` (snake_case or camelCase) override the descriptor (``project=`` is merged).
        A new workspace lives in ``workspace_directory`` (default ``/home/dev/projects/<name>``);
        its id is ``ws-<hex>`` on capable hosts and the directory on legacy ones, unless given.
        Identical consecutive descriptors are not re-sent (protocol.md 4.8).
        """
        project = fields.pop("project", None)
        overrides = _camel(fields)
        workspace_id = workspace_id or overrides.pop("id", None)
        overrides.pop("id", None)
        with self._sink.lock:
            result = self._upsert_locked(workspace_id, overrides, project)
        self._sink.flush()
        return result

    def _upsert_locked(
        self, workspace_id: str | None, overrides: dict[str, Any], project: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        existing = self._workspaces.get(workspace_id) if workspace_id is not None else None
        if existing is None:
            directory = overrides.get("workspaceDirectory") or overrides.get("projectRootPath")
            if not isinstance(directory, str):
                legacy_path = self._sink.host_kind is not HostKind.CAPABLE and (workspace_id or "").startswith("/")
                name = overrides.get("name") or f"workspace-{uuid.uuid4().hex[:8]}"
                directory = workspace_id if legacy_path and workspace_id else f"{_PROJECTS_ROOT}/{name}"
            workspace = _default_workspace(workspace_id or self._new_id(directory), directory, self._sink.host_kind)
        else:
            workspace = copy.deepcopy(existing)
        workspace.update(copy.deepcopy(overrides))
        if project is not None:
            workspace["project"] = _merge_placement(workspace.get("project") or {}, copy.deepcopy(project))
        if workspace != existing:
            self._workspaces[workspace["id"]] = workspace
            self._sink.workspace_changed_locked(workspace["id"], workspace)
        return copy.deepcopy(workspace)

    def open(self, cwd: str) -> dict[str, Any]:
        """What ``open_project_request`` does: the workspace of ``cwd``, created if new.

        ``cwd`` is matched as a directory (``same_directory``), as the daemon resolves it."""
        with self._sink.lock:
            existing = next(
                (w for w in self._workspaces.values() if same_directory(w.get("workspaceDirectory"), cwd)), None
            )
            if existing is not None:
                result = copy.deepcopy(existing)
            else:
                result = self._upsert_locked(None, {"workspaceDirectory": cwd}, None)
        self._sink.flush()
        return result

    def remove(self, workspace_id: str) -> None:
        """Delete a workspace (no-op if unknown); observations get ``{"kind":"remove","id":..}``."""
        self.discard(workspace_id)

    def discard(self, workspace_id: str) -> bool:
        """:meth:`remove`, returning whether the workspace existed."""
        with self._sink.lock:
            if self._workspaces.pop(workspace_id, None) is None:
                return False
            self._sink.workspace_changed_locked(workspace_id, None)
        self._sink.flush()
        return True

    def get(self, workspace_id: str) -> dict[str, Any] | None:
        with self._sink.lock:
            workspace = self._workspaces.get(workspace_id)
            return copy.deepcopy(workspace) if workspace is not None else None

    def all(self) -> list[dict[str, Any]]:
        with self._sink.lock:
            return [copy.deepcopy(workspace) for workspace in self._workspaces.values()]

    def values_locked(self) -> list[dict[str, Any]]:
        """The stored descriptors themselves (read-only); call with the directory lock held."""
        return list(self._workspaces.values())


class MsClock:
    """Strictly increasing epoch milliseconds (so ``updatedAt`` orders every upsert)."""

    def __init__(self) -> None:
        self._last = 0

    def next(self) -> int:
        self._last = max(self._last + 1, time.time_ns() // 1_000_000)
        return self._last
