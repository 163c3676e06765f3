"""Recover from a ``lagged`` event: a slow handler misses rows, reads them back, ends gap-free.

With ``Client(flow_control=dc.FlowControl(max_events=...))`` the callback queue stays
bounded: while it is over the limit, live rows are skipped, and once it drained the handler
gets one ``lagged`` event naming exactly what it missed (``first_seq``..``last_seq`` in
``epoch``). The handler reads those rows back with
``refetch(direction="after", cursor=(epoch, first_seq - 1))`` and continues live.

The embedded demo (no ``--url``) stalls the handler on its first row, as a modal dialog or
a breakpoint would, while the daemon streams ``--rows`` rows; then lets it go on. At the
end every row from the first one seen to the last is held, in order, without a gap.

    python examples/lagged_recovery.py
    python examples/lagged_recovery.py --url ws://127.0.0.1:6767/ws --agent <id> --duration 30
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
from collections.abc import Iterator

from _embedded import add_common_arguments, run_for

import daemon_client as dc
from daemon_client.testing import FakeDaemon


class GapFreeFollower:
    """Holds one agent's rows from the first one seen on, reading back what flow control skipped."""

    def __init__(self, timeline: dc.AgentTimeline) -> None:
        self.timeline = timeline
        self.rows: dict[int, object] = {}  # seq -> item
        self.epoch: str | None = None
        self.stalled = threading.Event()  # the demo: set while the handler is stuck
        self.go_on = threading.Event()

    def on_update(self, update: dc.TimelineUpdate) -> None:
        event = update.event
        if isinstance(event, dc.Lagged):
            print(f"lagged: {event.dropped} skipped, rows {event.first_seq}..{event.last_seq}", flush=True)
            if event.first_seq is not None and event.epoch is not None:
                read = self.read_back(event.epoch, event.first_seq, event.last_seq or event.first_seq)
                print(f"read back {read} rows", flush=True)
        elif isinstance(event, dc.TimelineEvent) and update.seq is not None:
            if update.epoch != self.epoch:  # first row, or history replaced: start from here
                self.rows.clear()
                self.epoch = update.epoch
            self.rows[update.seq] = event.item
            if not self.stalled.is_set():  # the embedded demo stalls here once
                self.stalled.set()
                self.go_on.wait(30)

    def read_back(self, epoch: str, first_seq: int, last_seq: int) -> int:
        """The recovery recipe: the canonical rows after ``first_seq - 1`` (callback thread). Rows
        after ``last_seq`` are left to the live stream, which delivers them next."""
        page = self.timeline.refetch(
            direction="after", cursor=dc.TimelineCursor(epoch, first_seq - 1), limit=0, projection="canonical"
        )
        before = len(self.rows)
        for entry in page.entries:
            if entry.seq_end <= last_seq:
                self.rows.setdefault(entry.seq_end, entry.item)
        return len(self.rows) - before

    def gap_free(self) -> bool:
        seqs = sorted(self.rows)
        return bool(seqs) and seqs == list(range(seqs[0], seqs[-1] + 1))


@contextlib.contextmanager
def embedded(args: argparse.Namespace) -> Iterator[tuple[str, FakeDaemon | None]]:
    if args.url:
        yield args.url, None
        return
    with FakeDaemon(host_kind=dc.HostKind(args.host_kind), password=args.password) as fake:
        yield fake.serve(), fake


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("--agent", help="the agent's ID (default: the first agent listed)")
    parser.add_argument("--rows", type=int, default=500, help="embedded daemon: rows streamed while stalled")
    parser.add_argument("--max-events", type=int, default=50, help="the callback queue's limit (default: 50)")
    args = parser.parse_args(argv)

    with embedded(args) as (url, fake):
        agent_id = args.agent or (fake.agents.upsert(title="streamer")["id"] if fake else None)
        flow = dc.FlowControl(max_events=args.max_events)
        with dc.Client(url, password=args.password, flow_control=flow) as client:
            agent_id = agent_id or client.agents.list(page=dc.Page(limit=1)).entries[0].agent.id
            follower = GapFreeFollower(client.agents.ref(agent_id).timeline)
            with follower.timeline.subscribe(follower.on_update) as subscription:
                subscription.ready.result(15)
                if fake is None:
                    follower.go_on.set()  # a real daemon: never stall on purpose
                    run_for(args)
                else:
                    fake.timeline.append(agent_id, {"type": "assistant_message", "text": "row 0"})
                    follower.stalled.wait(15)
                    for index in range(1, args.rows + 1):  # streamed while the handler is stuck
                        fake.timeline.append(agent_id, {"type": "assistant_message", "text": f"row {index}"})
                    client.ping()  # the client has read every row (requests never wait for callbacks)
                    print(f"while stalled: {client.stats().queued_events} queued", flush=True)
                    follower.go_on.set()
                    client.flush_callbacks(15)
                    for index in range(args.rows + 1, args.rows + 4):  # live again
                        fake.timeline.append(agent_id, {"type": "assistant_message", "text": f"row {index}"})
                    client.ping()
                    client.flush_callbacks(15)
                    client.flush_callbacks(15)
            stats = client.stats()
    seqs = sorted(follower.rows)
    span = f"{seqs[0]}..{seqs[-1]}" if seqs else "none"
    print(f"held {len(seqs)} rows ({span}); skipped in all: {stats.dropped}")
    print("gap-free" if follower.gap_free() else "GAP")
    return 0 if follower.gap_free() or not seqs else 1


if __name__ == "__main__":
    sys.exit(main())
