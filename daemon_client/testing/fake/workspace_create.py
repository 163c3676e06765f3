"""Workspace creation, titles, Paseo worktrees and the label catalog in the fake daemon
(``fake.worktrees``; protocol.md 12.5, transcript 17).

Handlers of ``create_paseo_worktree_request``, ``paseo_worktree_list_request`` and
``paseo_worktree_archive_request`` (every host), and on hosts with
``features.workspaceMultiplicity`` of ``workspace.create.request`` and
``workspace.title.set.request``. ``archive_workspace_request`` of a worktree workspace is
refused in its reply on broadcast (0.1.65-like) hosts (``"Use worktree archive for Paseo
worktrees"``) and archives the worktree on newer hosts; other workspaces are archived by the
directory's own handler. ``workspace.label.list.request`` answers with
:attr:`FakeWorktrees.labels` on the hosts its declaration names (capable and selective hosts
with ``features.workspaceLabels``, which only capable fakes report by default); elsewhere it
is unknown (``unknown_schema``).

Worktrees live in ``/home/dev/.paseo/worktrees/<8 hex>/<slug>`` of a repository in
:attr:`FakeWorktrees.repositories` (any path inside one is accepted as ``cwd``). A worktree has a
new branch (``action: "branch-off"``, refused while a worktree has it) or checks out an existing
one (``action: "checkout"``): a branch of :attr:`FakeWorktrees.branches` (``refName``) or the head
of a pull request of :attr:`FakeWorktrees.pull_requests` (``githubPrNumber``; on newer hosts
also ``checkoutSource``, which 0.1.65 does not read), refused when it is unknown or already
checked out. A directory workspace takes ``source.projectId`` as its project when given. A new worktree's
workspace is stored in ``fake.workspaces`` (its ``workspace_update`` frames come before the
reply here; 0.1.65 sends the reply first), followed by ``workspace_setup_progress`` ``running``
and ``completed``. Archiving a worktree archives the agents working in it and removes its
workspace. Handlers run on connection reader threads; one lock guards the worktree table and is
never held while sending.
"""

from __future__ import annotations

import posixpath
import threading
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from daemon_client.protocol.hosts import HostKind
from daemon_client.protocol.requests import workspaces as workspace_requests
from daemon_client.testing.fake.engine.handlers import iso_now

if TYPE_CHECKING:
    from daemon_client.testing.fake.engine.handlers import Handler, HandlerRegistry, RequestContext
    from daemon_client.testing.fake.ports import DaemonPort

__all__ = [
    "DEFAULT_BRANCHES",
    "DEFAULT_LABELS",
    "DEFAULT_PULL_REQUESTS",
    "DEFAULT_REPOSITORY",
    "WORKTREES_ROOT",
    "FakeWorktrees",
]

DEFAULT_REPOSITORY = "/home/dev/projects/demo-repo"
WORKTREES_ROOT = "/home/dev/.paseo/worktrees"
_REFUSAL = "Use worktree archive for Paseo worktrees"
DEFAULT_LABELS: tuple[dict[str, Any], ...] = (
    {"name": "Review", "color": "violet"},
    {"name": "Blocked", "color": "red"},
)
"""The label catalog a new fake starts with."""
DEFAULT_BRANCHES = ("main", "release/1.2")
"""The branches a new fake's repositories have."""
DEFAULT_PULL_REQUESTS: dict[int, str] = {42: "fix/search", 7: "docs/typos"}
"""The pull requests a new fake can check out (number -> head branch)."""


def _inside(path: str, root: str) -> bool:
    path, root = path.rstrip("/"), root.rstrip("/")
    return path == root or path.startswith(root + "/")


class FakeWorktrees:
    """``fake.worktrees``: see the module docstring."""

    def __init__(self, daemon: DaemonPort) -> None:
        self.daemon = daemon
        config = daemon.core.config
        self.host_kind: HostKind = config.host_kind
        self.newest = bool(config.effective_features.get("workspaceMultiplicity"))
        self.repositories: set[str] = {DEFAULT_REPOSITORY}
        """Git repositories worktrees can be made of."""
        self.branches: set[str] = set(DEFAULT_BRANCHES)
        """Branches that exist and can be checked out; a new worktree's branch is added."""
        self.pull_requests: dict[int, str] = dict(DEFAULT_PULL_REQUESTS)
        """Pull requests that can be checked out: number -> head branch (of any forge)."""
        self.lock = threading.Lock()
        self._worktrees: dict[str, dict[str, Any]] = {}
        self._archive_workspace: Handler | None = None
        self.labels: list[dict[str, Any]] = [dict(label) for label in DEFAULT_LABELS]
        """The label catalog (``workspace.label.list.response`` ``labels``), changed by tests freely."""

    def install(self, registry: HandlerRegistry) -> None:
        self._archive_workspace = registry.handler_for(workspace_requests.ARCHIVE.type)
        registry.serve_all(
            (
                (workspace_requests.CREATE_WORKTREE, self._handle_legacy_create),
                (workspace_requests.LIST_WORKTREES, self._handle_list),
                (workspace_requests.ARCHIVE_WORKTREE, self._handle_archive),
                (workspace_requests.CREATE, self._handle_create),
                (workspace_requests.SET_TITLE, self._handle_title),
                (workspace_requests.ARCHIVE, self._handle_archive_workspace),
                (workspace_requests.LIST_LABELS, self._handle_labels),
            ),
            host_kind=self.host_kind,
            features=self.daemon.core.config.effective_features,
        )

    # -- test thread ---------------------------------------------------------------------------

    def worktrees(self) -> list[dict[str, Any]]:
        """The live worktrees (``paseo_worktree_list_response`` rows)."""
        with self.lock:
            return [dict(row) for row in self._worktrees.values()]

    # -- creation ------------------------------------------------------------------------------

    def _repository(self, cwd: object) -> str | None:
        if not isinstance(cwd, str):
            return None
        return next((repo for repo in sorted(self.repositories) if _inside(cwd, repo)), None)

    def _checked_out(self, ref: object, number: object) -> tuple[str | None, str | None]:
        """The branch a checkout names (a branch, or a pull request's head) and an error."""
        if number is not None:
            head = self.pull_requests.get(number) if isinstance(number, int) else None
            return (head, None) if head else (None, f"Pull request #{number} not found")
        with self.lock:
            known = isinstance(ref, str) and ref in self.branches
        return (str(ref), None) if known else (None, f"Branch not found: {ref}")

    def _new_worktree(
        self, cwd: object, slug: object, base: object, checkout: str | None = None
    ) -> tuple[dict[str, Any] | None, str | None]:
        repo = self._repository(cwd)
        if repo is None:
            return None, f"Not a git repository: {cwd}"
        if checkout is not None:
            branch, directory = checkout, checkout.replace("/", "-")
        else:
            branch = slug if isinstance(slug, str) and slug else f"wt-{uuid.uuid4().hex[:6]}"
            directory = branch
        path = f"{WORKTREES_ROOT}/{uuid.uuid4().hex[:8]}/{directory}"
        with self.lock:
            taken = next((row for row in self._worktrees.values() if row["branchName"] == branch), None)
            if taken is not None and checkout is not None:
                return None, f"Branch '{branch}' is already checked out in {taken['worktreePath']}"
            if taken is not None:
                return None, f"A branch named '{branch}' already exists"
            self.branches.add(branch)
            self._worktrees[path] = {"worktreePath": path, "createdAt": iso_now(), "branchName": branch,
                                     "head": uuid.uuid4().hex + uuid.uuid4().hex[:8], "repoRoot": repo,
                                     "base": base if isinstance(base, str) else "main"}  # fmt: skip
        workspace_id = f"ws-{uuid.uuid4().hex[:12]}" if self.newest else path
        workspace = self.daemon.workspaces.upsert(
            workspace_id,
            workspaceDirectory=path,
            projectId=repo,
            projectDisplayName=posixpath.basename(repo),
            projectRootPath=repo,
            projectKind="git",
            workspaceKind="worktree",
            name=branch,
            gitRuntime={"currentBranch": branch, "remoteUrl": None, "isPaseoOwnedWorktree": True, "isDirty": False},
        )
        return workspace, None

    def _worktree_of(
        self, fields: Mapping[str, Any], cwd: object, base: object
    ) -> tuple[dict[str, Any] | None, str | None]:
        """A worktree for a creation request's fields: a checkout (``action: "checkout"``, of
        ``refName`` or a pull request) or a new branch (``worktreeSlug`` off ``base``)."""
        if fields.get("action") != "checkout":
            return self._new_worktree(cwd, fields.get("worktreeSlug"), base)
        source = fields.get("checkoutSource") if self.newest else None
        number = source.get("number") if isinstance(source, Mapping) else fields.get("githubPrNumber")
        branch, error = self._checked_out(fields.get("refName"), number)
        if branch is None:
            return None, error
        return self._new_worktree(cwd, None, None, checkout=branch)

    def _setup_progress(self, ctx: RequestContext, workspace: Mapping[str, Any]) -> None:
        path = workspace["workspaceDirectory"]
        detail = {"type": "worktree_setup", "worktreePath": path, "branchName": workspace["name"], "log": "",
                  "commands": []}  # fmt: skip
        for status in ("running", "completed"):
            ctx.send("workspace_setup_progress",
                     {"workspaceId": workspace["id"], "status": status, "detail": detail, "error": None})  # fmt: skip

    def _created(self, ctx: RequestContext, workspace: dict[str, Any] | None, error: str | None) -> None:
        ctx.reply({"workspace": workspace, "error": error, "setupTerminalId": None,
                   **({"errorCode": "worktree_create_failed"} if error else {})})  # fmt: skip
        if workspace is not None and workspace.get("workspaceKind") == "worktree":
            self._setup_progress(ctx, workspace)

    def _handle_legacy_create(self, ctx: RequestContext) -> None:
        message = ctx.message
        workspace, error = self._worktree_of(message, message["cwd"], message.get("refName"))
        self._created(ctx, workspace, error)

    def _handle_create(self, ctx: RequestContext) -> None:
        source = ctx.message["source"]
        kind = source.get("kind") if isinstance(source, Mapping) else None
        title = ctx.message.get("title")
        if kind == "worktree":
            workspace, error = self._worktree_of(source, source.get("cwd"), source.get("baseBranch"))
        elif kind == "directory" and isinstance(source.get("path"), str) and source["path"]:
            path, project = source["path"], source.get("projectId")
            workspace = self.daemon.workspaces.upsert(
                f"ws-{uuid.uuid4().hex[:12]}", workspaceDirectory=path, projectRootPath=path,
                projectId=project if isinstance(project, str) and project else path,
                projectDisplayName=posixpath.basename(path.rstrip("/")) or path,
            )  # fmt: skip
            error = None
        else:
            ctx.rpc_error("Unknown request schema", "unknown_schema")
            return
        if workspace is not None and isinstance(title, str) and title.strip():
            workspace = self.daemon.workspaces.upsert(workspace["id"], title=title.strip(), name=title.strip())
        self._created(ctx, workspace, error)

    # -- titles --------------------------------------------------------------------------------

    def _handle_labels(self, ctx: RequestContext) -> None:
        with self.lock:
            labels = [dict(label) for label in self.labels]
        sync = {"mode": "snapshot", "generation": "labels-1", "headSeq": len(labels), "removals": []}
        ctx.reply({"labels": labels, "sync": sync})

    def _handle_title(self, ctx: RequestContext) -> None:
        workspace_id, title = ctx.message["workspaceId"], ctx.message["title"]
        workspace = self.daemon.workspaces.get(workspace_id) if isinstance(workspace_id, str) else None
        base = {"workspaceId": workspace_id}
        if workspace is None:
            ctx.reply({**base, "accepted": False, "title": None, "error": f"Workspace not found: {workspace_id}"})
            return
        kept = title.strip() if isinstance(title, str) and title.strip() else None
        fallback = workspace.get("gitRuntime", {}) or {}
        name = kept or fallback.get("currentBranch") or posixpath.basename(str(workspace.get("workspaceDirectory")))
        self.daemon.workspaces.upsert(workspace_id, title=kept, name=name)
        ctx.reply({**base, "accepted": True, "title": kept, "error": None})

    # -- list and archive ----------------------------------------------------------------------

    def _handle_list(self, ctx: RequestContext) -> None:
        cwd, root = ctx.message.get("cwd"), ctx.message.get("repoRoot")
        repo = root if isinstance(root, str) else self._repository(cwd)
        if repo is None:
            error = {"code": "NOT_GIT_REPO", "message": f"Not a git repository: {cwd or root}"}
            ctx.reply({"worktrees": [], "error": error})
            return
        with self.lock:
            rows = [{k: v for k, v in row.items() if k not in ("repoRoot", "base")}
                    for row in self._worktrees.values() if row["repoRoot"] == repo]  # fmt: skip
        ctx.reply({"worktrees": rows, "error": None})

    def _handle_archive(self, ctx: RequestContext) -> None:
        path, branch = ctx.message.get("worktreePath"), ctx.message.get("branchName")
        removed = self._archive(path, branch)
        if removed is None:
            error = {"code": "NOT_ALLOWED", "message": f"Not a Paseo worktree: {path or branch}"}
            ctx.reply({"success": False, "removedAgents": [], "error": error})
            return
        ctx.reply({"success": True, "removedAgents": removed, "error": None})

    def _archive(self, path: object, branch: object) -> list[str] | None:
        """Archive a worktree (by path or branch): its agents, then its workspace; the archived
        agent IDs, or ``None`` when there is no such worktree."""
        with self.lock:
            row = self._worktrees.get(path) if isinstance(path, str) else None
            if row is None and isinstance(branch, str):
                row = next((r for r in self._worktrees.values() if r["branchName"] == branch), None)
            if row is not None:
                del self._worktrees[row["worktreePath"]]
        if row is None:
            return None
        worktree = row["worktreePath"]
        removed = [a["id"] for a in self.daemon.agents.all() if _inside(str(a.get("cwd")), worktree)]
        for agent_id in removed:
            self.daemon.runs.cancel(agent_id)
            self.daemon.runs.upsert(agent_id, archivedAt=iso_now(), status="closed")
        for workspace in self.daemon.workspaces.all():
            if workspace.get("workspaceDirectory") == worktree:
                self.daemon.workspaces.upsert(workspace["id"], archivingAt=iso_now())
                self.daemon.workspaces.remove(workspace["id"])
        return removed

    def _handle_archive_workspace(self, ctx: RequestContext) -> None:
        workspace_id = ctx.message["workspaceId"]
        workspace = self.daemon.workspaces.get(workspace_id) if isinstance(workspace_id, str) else None
        if workspace is not None and workspace.get("workspaceKind") == "worktree":
            if self.host_kind is HostKind.BROADCAST:
                ctx.reply({"workspaceId": workspace_id, "archivedAt": None, "error": _REFUSAL})
                return
            self._archive(workspace.get("workspaceDirectory"), None)
            ctx.reply({"workspaceId": workspace_id, "archivedAt": iso_now(), "error": None})
            return
        if self._archive_workspace is not None:
            self._archive_workspace(ctx)
