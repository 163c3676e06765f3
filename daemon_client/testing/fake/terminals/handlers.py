"""The terminal requests of the fake daemon and its binary-frame handler (protocol.md 12.2).

Every handler runs on the reader thread of the connection that received the request and works
through :class:`~daemon_client.testing.fake.terminals.store.FakeTerminals`. Failures are reported
as the daemon reports them: in the response (``create``: ``terminal:null`` and ``error``;
``subscribe_terminal``: ``error`` and no ``slot``), never as ``rpc_error``; ``list`` and
``capture`` report none at all. ``terminal.rename.request`` stays unknown (``unknown_schema``)
on every host, as on 0.1.65.
"""

from __future__ import annotations

import json
import posixpath
from typing import TYPE_CHECKING, Any

from daemon_client.protocol.requests import subscriptions as subscriptions_requests
from daemon_client.protocol.requests import terminals as terminals_requests
from daemon_client.protocol.terminal_frames import INPUT, RESIZE, decode_terminal_frame
from daemon_client.testing.fake.engine.outbox import string_list

if TYPE_CHECKING:
    from daemon_client.testing.fake.engine.handlers import HandlerRegistry, RequestContext
    from daemon_client.testing.fake.engine.peer import Peer
    from daemon_client.testing.fake.terminals.store import FakeTerminals

__all__ = ["install"]


def _size(value: Any) -> tuple[int, int] | None:
    if not isinstance(value, dict):
        return None
    rows, cols = value.get("rows"), value.get("cols")
    if type(rows) is int and type(cols) is int and rows >= 1 and cols >= 1:
        return rows, cols
    return None


def install(registry: HandlerRegistry, terminals: FakeTerminals) -> None:
    """Register the terminal handlers and the binary-frame handler on ``registry``."""

    def create(ctx: RequestContext) -> None:
        message = ctx.message
        cwd, agent_id = message.get("cwd"), message.get("agentId")
        if isinstance(agent_id, str) and agent_id:
            error = f"Agent-backed terminals are no longer supported for agent {agent_id}"
        elif not isinstance(cwd, str) or not posixpath.isabs(cwd):
            error = f"Terminal working directory must be an absolute path: {cwd!r}"
        else:
            error = None
        if error is not None or not isinstance(cwd, str):
            ctx.reply({"terminal": None, "error": error})
            return
        flagged = terminals.workspace_terminals
        workspace_id = message.get("workspaceId") if flagged else None
        name, command = message.get("name"), message.get("command")
        terminal = terminals.create(
            cwd,
            name=name if isinstance(name, str) and name else None,
            command=command if isinstance(command, str) else None,
            args=tuple(string_list(message.get("args")) or ()),
            workspace_id=workspace_id if isinstance(workspace_id, str) else None,
            size=_size(message.get("size")) if flagged else None,
        )
        ctx.reply({"terminal": terminals.entry(terminal, full=True), "error": None})

    def listing(ctx: RequestContext) -> None:
        cwd, workspace_id = ctx.message.get("cwd"), ctx.message.get("workspaceId")
        body: dict[str, Any] = {}
        if isinstance(cwd, str):
            body["cwd"] = cwd
        body["terminals"] = terminals.listing(
            cwd if isinstance(cwd, str) else None, workspace_id if isinstance(workspace_id, str) else None
        )
        ctx.reply(body)

    def capture(ctx: RequestContext) -> None:
        terminal = terminals.get(str(ctx.message["terminalId"]))
        start, end = ctx.message.get("start"), ctx.message.get("end")
        strip = ctx.message.get("stripAnsi", True) is not False
        lines: list[str] = []
        total = 0
        if terminal is not None:
            with terminals.lock:
                lines, total = terminal.shell.capture(
                    start if type(start) is int else None, end if type(end) is int else None, strip
                )
        ctx.reply({"terminalId": ctx.message["terminalId"], "lines": lines, "totalLines": total})

    def kill(ctx: RequestContext) -> None:
        terminal_id = str(ctx.message["terminalId"])
        terminals.kill(terminal_id, lambda: ctx.reply({"terminalId": terminal_id, "success": True}))

    def subscribe_stream(ctx: RequestContext) -> None:
        terminals.subscribe_stream(ctx.connection, str(ctx.message["terminalId"]), ctx.reply)

    def unsubscribe_stream(ctx: RequestContext) -> None:
        terminals.unsubscribe_stream(ctx.connection, str(ctx.message["terminalId"]))

    def subscribe_directory(ctx: RequestContext) -> None:
        workspace_id = ctx.message.get("workspaceId")
        terminals.subscribe_directory(
            ctx.connection, str(ctx.message["cwd"]), workspace_id if isinstance(workspace_id, str) else None
        )

    def unsubscribe_directory(ctx: RequestContext) -> None:
        workspace_id = ctx.message.get("workspaceId")
        terminals.unsubscribe_directory(
            ctx.connection, str(ctx.message["cwd"]), workspace_id if isinstance(workspace_id, str) else None
        )

    def terminal_input(ctx: RequestContext) -> None:
        terminal_id, body = str(ctx.message["terminalId"]), ctx.message["message"]
        if not isinstance(body, dict):
            return
        kind = body.get("type")
        if kind == "input" and isinstance(body.get("data"), str):
            terminals.type(terminal_id, body["data"], via="json")
        elif kind == "resize" and (size := _size(body)) is not None:
            terminals.resize(terminal_id, *size, via="json")
        elif kind == "mouse":
            terminals.note_input(terminal_id, "json", "mouse", body)

    def binary(connection: Peer, data: bytes) -> None:
        frame = decode_terminal_frame(data)
        if frame is None or frame.opcode not in (INPUT, RESIZE):
            return
        terminal_id = terminals.slot_owner(connection, frame.slot)
        if terminal_id is None:
            return  # a slot this session does not hold: ignored, as by the daemon
        if frame.opcode == INPUT:
            terminals.type(terminal_id, frame.payload.decode("utf-8", errors="replace"), via="binary")
            return
        try:
            size = _size(json.loads(frame.payload))
        except ValueError:
            size = None
        if size is not None:
            terminals.resize(terminal_id, *size, via="binary")

    config = terminals.core.config
    registry.serve_all(
        (
            (terminals_requests.CREATE, create),
            (terminals_requests.LIST, listing),
            (terminals_requests.CAPTURE, capture),
            (terminals_requests.KILL, kill),
            (subscriptions_requests.TERMINAL_STREAM, subscribe_stream),
            (subscriptions_requests.TERMINAL_DIRECTORY, subscribe_directory),
        ),
        host_kind=config.host_kind,
        features=config.effective_features,
    )
    # Undeclared (the client sends them without waiting for a reply): shapes of protocol-surface.md 12.2.
    registry.register("unsubscribe_terminal_request", unsubscribe_stream, required=("terminalId",),
                      request_id_optional=True)  # fmt: skip
    registry.register("unsubscribe_terminals_request", unsubscribe_directory, required=("cwd",),
                      request_id_optional=True)  # fmt: skip
    registry.register("terminal_input", terminal_input, required=("terminalId", "message"), request_id_optional=True)
    registry.set_binary_handler(binary)
