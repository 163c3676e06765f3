"""``tail AGENT``: an agent's timeline as text or JSON lines, history first, then live.

``tail NAME:AGENT`` tails ``AGENT`` on the stored host ``NAME`` (when ``NAME`` is one).

The main thread subscribes, reads the history asked for (``--history N`` newest rows,
``--since SEQ``, or everything with ``--no-follow``), prints it and opens the
:class:`~daemon_client.cli.timeline_gate.TimelineGate`; live events are then printed from the
callback thread until ``--duration``, Ctrl-C, a closed pipe or a lost daemon ends the wait.

Every message is a complete line as soon as it is known to be complete: the last history
message when the agent is not running, a live one when the next row or the turn's end comes,
and whatever is open when following stops (the gate is closed first, so nothing follows it).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator

from daemon_client.api.agents.handle import AgentHandle
from daemon_client.cli.context import CommandContext
from daemon_client.cli.exit_codes import OK, USAGE, CliError
from daemon_client.cli.json_render import entry_json
from daemon_client.cli.lookup import find_agent
from daemon_client.cli.printer import JsonLinesPrinter, MessagePrinter
from daemon_client.cli.stored import split_host_agent
from daemon_client.cli.timeline_gate import TimelineGate
from daemon_client.protocol.timeline import (
    SubscriptionError,
    TimelineCursor,
    TimelineEntry,
    TimelineEvent,
    TimelinePage,
    TimelineUpdate,
)

PAGE = 200


def history_pages(handle: AgentHandle, args: argparse.Namespace, timeout: float) -> Iterable[TimelinePage]:
    """The history rows asked for, oldest first."""
    if args.history is not None:
        if args.history == 0:
            return ()
        return (handle.timeline.refetch("tail", limit=args.history, timeout=timeout),)
    if args.since is not None:
        epoch = handle.timeline.refetch("tail", limit=1, timeout=timeout).epoch
        return handle.timeline.pages("after", TimelineCursor(epoch, args.since), PAGE, timeout=timeout)
    if args.no_follow:
        return handle.timeline.pages("after", None, PAGE, timeout=timeout)
    return ()


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    if args.no_follow and args.duration is not None:
        raise CliError("--duration applies only while following (not with --no-follow)", USAGE)
    split_host_agent(args, ctx.notes)  # NAME:AGENT: AGENT on the stored host NAME
    client = ctx.connect()
    handle = find_agent(client, args.agent, ctx.timeout)
    printer = JsonLinesPrinter(ctx.out) if ctx.json else MessagePrinter(ctx.out)

    def print_entry(epoch: str, entry: TimelineEntry) -> None:
        if ctx.json:
            ctx.out.json_line(entry_json(handle.id, epoch, entry))
        else:
            event = TimelineEvent(item=entry.item, provider=entry.provider, turn_id=entry.turn_id)
            printer(TimelineUpdate(handle.id, event, seq=entry.seq_end, epoch=epoch, timestamp=entry.timestamp))

    def fetch_after(cursor: TimelineCursor) -> Iterator[TimelinePage]:
        return handle.timeline.pages("after", cursor, PAGE, timeout=ctx.timeout)

    if args.no_follow:
        gate = TimelineGate(
            printer, print_entry, fetch_after, agent_id=handle.id, on_error=lambda e: None, on_note=ctx.notes.note
        )
        gate.history(history_pages(handle, args, ctx.timeout))
        printer.end()
        return OK
    follow = ctx.follow()
    follow.watch(client)

    def failed(event: SubscriptionError) -> None:
        follow.finish(CliError(f"the timeline subscription of agent {handle.id} ended: {event.error}"))

    gate = TimelineGate(printer, print_entry, fetch_after, agent_id=handle.id, on_error=failed, on_note=ctx.notes.note)
    subscription = handle.timeline.subscribe(gate)
    try:
        follow.wait_for(subscription.ready, ctx.timeout, f"following the timeline of agent {handle.id}")
        gate.history(history_pages(handle, args, ctx.timeout))
        if handle.status != "running":  # no turn goes on with the last message: it is complete
            printer.end()
        gate.open()
        return follow.wait(args.duration)
    finally:  # the duration ended, Ctrl-C, a failure: nothing more is printed, the open message ends
        gate.close()
        printer.end()
