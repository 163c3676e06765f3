"""One turn of ``run``, ``send`` and ``wait``: follow it, end it cleanly, report how it ended.

:class:`TurnWatcher` follows the agent's timeline on the callback thread: it remembers how
the latest turn ended (``wait_for_finish`` reports a canceled turn as ``idle``), draws
progress on a terminal's standard error, or streams the assistant's text to standard output.
:func:`follow_turn` runs on the main thread: send, wait, and on Ctrl-C cancel the turn it
started (a second Ctrl-C exits at once); the wait itself runs on a helper thread, so a
reader closing the pipe of ``--stream`` ends the command at once (status 0; the turn goes on).
A connection lost while waiting is regained within ``--reconnect-timeout`` (noted on standard
error by :class:`~daemon_client.cli.follow.Follow`), then the same turn is waited for again:
``wait_for_finish`` answers at once if it ended meanwhile; the prompt is never sent twice.
Before the result is written the watcher is stopped (callbacks flushed, subscription released,
progress erased), so the result is the last thing written.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout

from daemon_client.api.agents.handle import AgentHandle, RunResult
from daemon_client.cli.context import CommandContext
from daemon_client.cli.exit_codes import OK, CliError
from daemon_client.cli.follow import TICK, Follow
from daemon_client.cli.json_render import model_json
from daemon_client.cli.printer import MessagePrinter
from daemon_client.client import Client
from daemon_client.errors import ConnectionLost, DaemonClientError, NotConnected
from daemon_client.protocol.timeline import TimelineUpdate, TurnCanceled, TurnCompleted, TurnFailed, TurnStarted

TurnEnd = TurnCompleted | TurnFailed | TurnCanceled


class TurnWatcher:
    """Follows one agent's timeline while a turn runs (see the module docstring)."""

    def __init__(self, ctx: CommandContext, agent: AgentHandle, *, stream: bool) -> None:
        self._notes = ctx.notes
        self._label = agent.title or agent.id
        self._printer = MessagePrinter(ctx.out, assistant_only=True) if stream else None
        self._lock = threading.Lock()
        self._active = True
        self._events = 0
        self.ended: TurnEnd | None = None
        """How the latest turn seen ended (``None``: no end seen)."""
        self.subscription = agent.timeline.subscribe(self._on_update)

    def _on_update(self, update: TimelineUpdate) -> None:
        with self._lock:
            if not self._active:
                return
            event = update.event
            if isinstance(event, TurnStarted):
                self.ended = None
            elif isinstance(event, TurnCompleted | TurnFailed | TurnCanceled):
                self.ended = event
            self._events += 1
            if self._printer is not None:
                self._printer(update)
            else:
                self._notes.progress(f"{self._label}: running… {self._events} events")

    def stop(self, client: Client, timeout: float) -> None:
        """Deliver what already arrived, then stop printing and release the subscription."""
        with contextlib.suppress(DaemonClientError):
            client.flush_callbacks(timeout)
        with self._lock:
            self._active = False
        self.subscription()
        self._notes.clear_progress()
        if self._printer is not None:
            self._printer.end()


_ENDS: dict[type[TurnEnd], str] = {TurnCompleted: "completed", TurnFailed: "failed", TurnCanceled: "canceled"}


def outcome(result: RunResult, ended: TurnEnd | None) -> str | None:
    """``completed``, ``failed``, ``canceled``, ``permission``, ``timeout`` (or the daemon's status).

    How a turn ended is what the library observed (``result.outcome``) or, failing that, the
    turn end this command saw on the timeline; ``None`` when neither saw one (``wait`` on an
    agent that was already idle: its last turn may have completed or been canceled).
    """
    if result.status in ("idle", "error"):
        seen = result.outcome or (_ENDS[type(ended)] if ended is not None else None)
        if seen is not None:
            return seen
        return "failed" if result.status == "error" else None
    return result.status


def _failure(
    agent_id: str, result: RunResult, ended: TurnEnd | None, how: str | None, run_timeout: float, *, gap: bool
) -> str:
    if how is None:
        what = (
            f"the turn of agent {agent_id} ended while the connection was down, so how it ended is unknown"
            if gap
            else f"agent {agent_id} is idle and no turn ended while waiting, so how its last turn ended is unknown"
        )
        return f"{what} (daemon-client tail {agent_id} shows its timeline)"
    if how == "canceled":
        reason = ended.reason if isinstance(ended, TurnCanceled) and ended.reason else "canceled"
        return f"the turn of agent {agent_id} was canceled: {reason}"
    if how == "failed":
        error = result.error or (ended.error if isinstance(ended, TurnFailed) else "") or "unknown error"
        return f"the turn of agent {agent_id} failed: {error}"
    if how == "permission":
        pending = result.final.pending_permissions if result.final is not None else ()
        if pending:
            first = pending[0]
            what = f" ({first.title or first.name})" if first.title or first.name else ""
            return (
                f"agent {agent_id} waits for permission {first.id}{what}: "
                f"daemon-client permissions {agent_id} approve|deny {first.id}"
            )
        return f"agent {agent_id} waits for a permission: daemon-client permissions {agent_id}"
    if how == "timeout":
        return (
            f"agent {agent_id} is still running after {run_timeout:g} s (--run-timeout); it goes on: "
            f"daemon-client wait {agent_id}, or daemon-client cancel {agent_id}"
        )
    return f"the turn of agent {agent_id} ended with status {result.status!r}"


def report(
    ctx: CommandContext,
    agent_id: str,
    result: RunResult,
    ended: TurnEnd | None,
    *,
    streamed: bool,
    gap: bool = False,
) -> int:
    """Write the result (the last thing written) and return 0, or raise the turn's failure
    (``gap``: the connection was down for a while during the wait)."""
    how = outcome(result, ended)
    if ctx.json:
        document = {**model_json(result), "agentId": agent_id, "outcome": how}
        ctx.out.json_document(document)
    elif result.last_message and not streamed:
        ctx.out.line(result.last_message.rstrip("\n"))
    if how == "completed":
        return OK
    raise CliError(_failure(agent_id, result, ended, how, float(ctx.args.run_timeout), gap=gap))


def _result(ctx: CommandContext, future: Future[RunResult]) -> RunResult | None:
    """The result of the wait, or ``None`` once the reader closed the pipe (main thread)."""
    while True:
        try:
            return future.result(TICK)
        except FutureTimeout:
            if ctx.out.reader_gone():
                return None


def _wait(
    ctx: CommandContext,
    follow: Follow,
    agent: AgentHandle,
    gaps: list[bool],
    clock: Callable[[], float] = time.monotonic,
) -> RunResult | None:
    """``wait_for_finish`` within ``--run-timeout``, again after every lost connection once it
    is regained (the turn goes on on the daemon; only the wait is asked again). ``None`` once the
    reader closed the pipe. Each regained connection appends to ``gaps``."""
    deadline = clock() + float(ctx.args.run_timeout)
    while True:
        remaining = deadline - clock()
        if remaining <= 0:
            return RunResult(status="timeout")
        try:
            return _result(ctx, ctx.in_background(functools.partial(agent.wait_for_finish, remaining), "wait"))
        except (ConnectionLost, NotConnected):
            if not follow.reconnected():  # raises the command's error without a connection in time
                return None
            gaps.append(True)


def follow_turn(
    ctx: CommandContext, client: Client, agent: AgentHandle, prompt: str | None, *, cancel_on_interrupt: bool
) -> int:
    """Send ``prompt`` (if any), wait for the turn's end, and report it (see the module docstring)."""
    stream = (ctx.out.isatty() if ctx.args.stream is None else bool(ctx.args.stream)) and not ctx.json
    follow = ctx.follow()
    follow.watch(client)
    watcher = TurnWatcher(ctx, agent, stream=stream)
    gaps: list[bool] = []
    try:
        watcher.subscription.ready.result(ctx.timeout)
        if prompt is not None:
            agent.send(prompt, timeout=ctx.timeout)
        result = _wait(ctx, follow, agent, gaps)
    except KeyboardInterrupt:
        watcher.stop(client, 0.5)
        if cancel_on_interrupt:
            ctx.notes.note(f"canceling the turn of agent {agent.id} (Ctrl-C again to exit at once)")
            try:
                agent.cancel(timeout=ctx.timeout)
            except DaemonClientError as exc:
                ctx.notes.error(f"could not cancel the turn of agent {agent.id}: {exc}")
        raise
    if result is None:  # nobody reads any more: stop quietly, the turn goes on
        return OK
    watcher.stop(client, ctx.timeout)
    return report(ctx, agent.id, result, watcher.ended, streamed=stream, gap=bool(gaps))
