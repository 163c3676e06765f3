"""Follow an agent's timeline live, and recover what a reconnect or a replacement missed.

Nothing is replayed after a reconnect. The follower keeps a cursor (epoch, seq) of the last
``timeline`` row it holds and, on the callback thread, where blocking reads are allowed:

- on ``subscription_restored`` (after a reconnect) reads the rows ``after`` the cursor;
- on ``replacement`` (history replaced under a new epoch) reads the whole tail again;
- replaces what it holds when a page says ``reset`` (stale cursor, or rows no longer held);
- drops rows it holds already (same epoch, seq not newer), and reads what is missing when
  a live row skips ahead (a gap) or comes from another epoch.

It prints each assistant message when its turn completes, and all of them at the end.

    python examples/follow_timeline_with_recovery.py --drop-every 3    # watch it recover
    python examples/follow_timeline_with_recovery.py --url ws://127.0.0.1:6767/ws --agent <id>
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import Future

from _embedded import add_common_arguments, daemon, run_for

import daemon_client as dc


class Follower:
    """The rows of one agent's current epoch, kept complete across reconnects."""

    def __init__(self, timeline: dc.AgentTimeline) -> None:
        self.timeline = timeline
        self.cursor: dc.TimelineCursor | None = None
        self.items: dict[int, object] = {}  # seq -> timeline item

    def on_update(self, update: dc.TimelineUpdate) -> None:
        event = update.event
        if isinstance(event, dc.SubscriptionRestored):
            print(f"reconnected: read {self.catch_up()} missed rows", flush=True)
        elif isinstance(event, dc.Replacement):
            print(f"history replaced: read {self.catch_up(event.epoch)} rows", flush=True)
        elif isinstance(event, dc.TimelineEvent) and update.seq is not None:
            cursor = self.cursor
            if cursor is None or update.epoch != cursor.epoch or update.seq > cursor.seq + 1:
                self.catch_up(update.epoch)  # not loaded yet, another epoch, or rows missing
            else:
                self.add(update.seq, event.item)  # ignored if held already
        elif isinstance(event, dc.TurnCompleted) and self.messages():
            print(f"assistant: {self.messages()[-1]}", flush=True)
        elif isinstance(event, dc.SubscriptionError):
            print(f"subscription ended: {event.error}", flush=True)

    def catch_up(self, epoch: str | None = None) -> int:
        """Read the rows after the cursor (every row if the epoch changed); returns how many were new."""
        cursor = self.cursor
        try:
            if cursor is None or (epoch is not None and epoch != cursor.epoch):
                page = self.timeline.refetch("tail", limit=0, projection="canonical")
            else:
                page = self.timeline.refetch("after", cursor, limit=0, projection="canonical")
        except dc.DaemonClientError as exc:
            print(f"read failed ({exc}); trying again on the next row or reconnect", flush=True)
            return 0
        if cursor is None or page.reset or page.epoch != cursor.epoch:
            self.items.clear()  # start over from what the page holds
            self.cursor = dc.TimelineCursor(page.epoch, 0)
        held = len(self.items)
        for entry in page.entries:
            self.add(entry.seq_end, entry.item)
        return len(self.items) - held

    def add(self, seq: int, item: object) -> None:
        assert self.cursor is not None
        if seq > self.cursor.seq:  # a seq at or below the cursor is a duplicate
            self.items[seq] = item
            self.cursor = dc.TimelineCursor(self.cursor.epoch, seq)

    def messages(self) -> list[str]:
        return dc.join_messages(self.items.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("--agent", help="the agent's ID (default: the first agent listed)")
    parser.add_argument(
        "--drop-every", type=float, metavar="SECONDS", help="embedded daemon: drop every connection this often"
    )
    args = parser.parse_args(argv)

    with daemon(args, drop_every=args.drop_every) as url, dc.Client(url, password=args.password) as client:
        agent_id = args.agent or client.agents.list(page=dc.Page(limit=1)).entries[0].agent.id
        follower = Follower(client.agents.ref(agent_id).timeline)

        def load(ready: Future[dc.TimelineAck]) -> None:  # on the callback thread, like on_update
            if ready.exception() is None:
                print(f"agent {agent_id}: {follower.catch_up()} rows of history", flush=True)

        with follower.timeline.subscribe(follower.on_update) as subscription:
            subscription.ready.add_done_callback(load)  # the first read, once the daemon acknowledged
            run_for(args)
    # The client is closed: no callback runs any more.
    for number, message in enumerate(follower.messages(), 1):
        print(f"message {number}: {message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
