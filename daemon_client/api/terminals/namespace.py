"""``client.terminals`` and ``workspace.terminals``: create, list and follow the daemon's
terminals, and handles to them (protocol.md 12.2).

Two generations of the terminal API exist. Hosts with ``features.workspaceTerminals`` tie
terminals to workspaces: ``workspace_id`` may be given everywhere, and without ``cwd`` the
workspace's directory is used, as in the TypeScript SDK. Older hosts (0.1.65, and every host
without the flag) group terminals by the exact ``cwd`` string: ``cwd`` is required there and a
``workspace_id`` raises :class:`~daemon_client.UnsupportedByHost` before anything is sent, because
those hosts would silently ignore it. A ``size`` on an older host (which would start the terminal
at 80×24) is applied by a resize right after creation.

Methods run on the caller's thread and block with a timeout (10 s by default); directory
handlers run on the callback thread. The handle registry is a weak dictionary under ``_lock``.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from daemon_client.api.terminals.handle import TerminalHandle, check_size
from daemon_client.errors import DaemonClientError, NotConnected, ProtocolError, UnsupportedByHost, check_reply
from daemon_client.protocol.codec import structure
from daemon_client.protocol.requests import terminals as terminals_requests
from daemon_client.protocol.terminals import TerminalInfo, TerminalList, TerminalsChanged, parse_terminal_list
from daemon_client.runtime.context import ClientContext
from daemon_client.subscriptions.terminal_directory import (
    DirectoryKey,
    TerminalDirectoryManager,
    TerminalDirectorySubscription,
)
from daemon_client.subscriptions.terminal_streams import TerminalStreamManager

if TYPE_CHECKING:
    from daemon_client.protocol.workspaces import WorkspaceDescriptor

WorkspaceFinder = Callable[[str, "float | None"], "WorkspaceDescriptor | None"]
"""Looks a workspace up by ID in the daemon's directory (``client.workspaces.find``)."""

FEATURE = "workspaceTerminals"
"""The ``server_info.features`` flag of workspace-scoped terminals (Paseo v0.7.3 and newer)."""

Size = tuple[int, int] | Mapping[str, int]
"""A terminal size: ``(rows, cols)`` or ``{"rows": …, "cols": …}``."""


def _size(size: Size) -> tuple[int, int]:
    if isinstance(size, Mapping):
        return check_size(size.get("rows"), size.get("cols"))
    if isinstance(size, tuple | list) and len(size) == 2:
        return check_size(size[0], size[1])
    raise ValueError(f"size is (rows, cols) or {{'rows': …, 'cols': …}}, got {size!r}")


def _strings(name: str, values: Sequence[str]) -> list[str]:
    if isinstance(values, str) or not all(isinstance(value, str) for value in values):
        raise ValueError(f"{name} must be a sequence of strings, got {values!r}")
    return list(values)


class TerminalsNamespace:
    """``client.terminals``."""

    def __init__(
        self,
        context: ClientContext,
        streams: TerminalStreamManager,
        directory: TerminalDirectoryManager,
        find_workspace: WorkspaceFinder,
    ) -> None:
        self._context = context
        self._streams = streams
        self._directory = directory
        self._find_workspace = find_workspace
        self._handles: weakref.WeakValueDictionary[str, TerminalHandle] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ host support
    @property
    def workspace_terminals(self) -> bool:
        """Whether the connected host has ``features.workspaceTerminals`` (``False`` while not connected)."""
        info = self._context.server_info
        return info is not None and info.feature(FEATURE)

    def _require_workspaces(self, what: str) -> None:
        info = self._context.server_info
        if info is None:
            raise NotConnected(f"not connected: cannot tell whether the host can {what}")
        if not info.feature(FEATURE):
            raise UnsupportedByHost(
                f"Update the host to {what}: workspace terminals need features.{FEATURE} (Paseo v0.7.3 or "
                f"newer); this host is {info.version or 'of an unknown version'}. Give cwd= instead of "
                "workspace_id= on this host."
            )

    def _workspace_directory(self, workspace_id: str, timeout: float | None) -> str:
        found = self._find_workspace(workspace_id, timeout)
        if found is None or not found.directory:
            raise DaemonClientError(f"no workspace {workspace_id!r} with a directory in the daemon's directory")
        return found.directory

    # ------------------------------------------------------------------ requests
    def create(
        self,
        *,
        workspace_id: str | None = None,
        cwd: str | None = None,
        name: str | None = None,
        command: str | None = None,
        args: Sequence[str] = (),
        size: Size | None = None,
        timeout: float | None = None,
    ) -> TerminalHandle:
        """Start a terminal and return its handle.

        ``cwd``: the absolute directory it starts in (required without ``workspace_id``).
        ``workspace_id`` (hosts with workspace terminals): the owning workspace; ``cwd``
        defaults to its directory. ``command``/``args``: the program (default: the user's
        shell). ``size``: ``(rows, cols)``. Raises ``RpcError`` with the daemon's text when it
        refuses (a relative ``cwd``, say), ``UnsupportedByHost`` for ``workspace_id`` on an
        older host, ``ValueError`` for bad arguments (nothing is sent then).
        """
        for label, value in (("cwd", cwd), ("name", name), ("command", command), ("workspace_id", workspace_id)):
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{label} must be a string, got {value!r}")
        rows_cols = _size(size) if size is not None else None
        arguments = _strings("args", args)
        if workspace_id is not None:
            self._require_workspaces("create terminals in a workspace")
            if cwd is None:
                cwd = self._workspace_directory(workspace_id, timeout)
        elif cwd is None:
            raise ValueError("create() needs cwd= (or workspace_id= on hosts with workspace terminals)")
        message: dict[str, Any] = {"type": terminals_requests.CREATE.type, "cwd": cwd}
        if workspace_id is not None:
            message["workspaceId"] = workspace_id
        if name is not None:
            message["name"] = name
        if command is not None:
            message["command"] = command
        if arguments:
            message["args"] = arguments
        sized_by_daemon = self.workspace_terminals
        if rows_cols is not None and sized_by_daemon:
            message["size"] = {"rows": rows_cols[0], "cols": rows_cols[1]}
        payload = self._context.request(message, timeout)
        missing = "The daemon did not create a terminal"
        check_reply(payload, terminals_requests.CREATE.type, required_field="terminal", missing=missing)
        raw = payload["terminal"]
        if not isinstance(raw, Mapping):
            raise ProtocolError(f"create_terminal_response carries an unreadable terminal: {raw!r:.200}")
        handle = self.ref(structure(raw, TerminalInfo))
        if rows_cols is not None and not sized_by_daemon:
            handle.resize(*rows_cols)  # this host would start it at 80x24
        return handle

    def list(
        self, *, workspace_id: str | None = None, cwd: str | None = None, timeout: float | None = None
    ) -> TerminalList:
        """The host's terminals: of one workspace (hosts with workspace terminals; ``cwd`` then
        does not restrict), of one exact ``cwd`` string, or all of them."""
        message: dict[str, Any] = {"type": terminals_requests.LIST.type}
        if workspace_id is not None:
            self._require_workspaces("list the terminals of a workspace")
            message["workspaceId"] = workspace_id
        if cwd is not None:
            message["cwd"] = cwd
        result = parse_terminal_list(self._context.request(message, timeout))
        for info in result.terminals:
            handle = self._handles.get(info.id)
            if handle is not None:
                handle.note(info)
        return result

    def ref(self, terminal: str | TerminalInfo) -> TerminalHandle:
        """The handle of a terminal (one per ID and client); sends nothing."""
        info = terminal if isinstance(terminal, TerminalInfo) else None
        terminal_id = info.id if info is not None else terminal
        if not isinstance(terminal_id, str) or not terminal_id:
            raise ValueError(f"a terminal is named by its ID or TerminalInfo, got {terminal!r}")
        with self._lock:
            handle = self._handles.get(terminal_id)
            if handle is None:
                handle = TerminalHandle(self._context, self._streams, self._list_all, terminal_id)
                self._handles[terminal_id] = handle
        if info is not None:
            handle.note(info)
        return handle

    def _list_all(self, timeout: float | None) -> TerminalList:
        return self.list(timeout=timeout)

    # ------------------------------------------------------------------ the terminal directory
    def subscribe(
        self,
        handler: Callable[[TerminalsChanged], object],
        *,
        cwd: str | None = None,
        workspace_id: str | None = None,
        timeout: float | None = None,
    ) -> TerminalDirectorySubscription:
        """Follow the terminals of one directory (``cwd``, the exact string used at creation) or,
        on hosts with workspace terminals, of one workspace (``cwd`` defaults to its directory).

        ``handler(TerminalsChanged)`` runs on the callback thread with the full list, first the
        current one, then after every change, again after every reconnect. Returns at once;
        ``subscription.ready`` resolves to the first list. Release the subscription when done.
        """
        if workspace_id is not None:
            self._require_workspaces("follow the terminals of a workspace")
            if cwd is None:
                cwd = self._workspace_directory(workspace_id, timeout)
        elif cwd is None:
            raise ValueError("subscribe() needs cwd= or workspace_id=")
        if not isinstance(cwd, str) or not cwd:
            raise ValueError(f"cwd must be a non-empty string, got {cwd!r}")
        subscription = TerminalDirectorySubscription(self._directory, DirectoryKey(cwd, workspace_id), handler)
        return self._directory.add(subscription)


class WorkspaceRef(Protocol):
    """What ``workspace.terminals`` needs of its workspace: its ID and directory."""

    @property
    def id(self) -> str: ...

    @property
    def directory(self) -> str | None: ...


class WorkspaceTerminals:
    """``workspace.terminals``: the terminal calls with the workspace filled in (hosts with
    workspace terminals; ``UnsupportedByHost`` elsewhere)."""

    def __init__(self, terminals: TerminalsNamespace, workspace: WorkspaceRef) -> None:
        self._terminals = terminals
        self._workspace = workspace

    def create(
        self,
        *,
        cwd: str | None = None,
        name: str | None = None,
        command: str | None = None,
        args: Sequence[str] = (),
        size: Size | None = None,
        timeout: float | None = None,
    ) -> TerminalHandle:
        """``client.terminals.create`` in this workspace (``cwd`` defaults to its directory)."""
        return self._terminals.create(
            workspace_id=self._workspace.id,
            cwd=cwd or self._workspace.directory,
            name=name,
            command=command,
            args=args,
            size=size,
            timeout=timeout,
        )

    def list(self, *, timeout: float | None = None) -> TerminalList:
        """The terminals of this workspace."""
        return self._terminals.list(workspace_id=self._workspace.id, timeout=timeout)

    def subscribe(
        self, handler: Callable[[TerminalsChanged], object], *, timeout: float | None = None
    ) -> TerminalDirectorySubscription:
        """Follow the terminals of this workspace (see ``client.terminals.subscribe``)."""
        return self._terminals.subscribe(
            handler, cwd=self._workspace.directory, workspace_id=self._workspace.id, timeout=timeout
        )
