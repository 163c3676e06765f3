"""Read an agent's history page by page, newest first, following the daemon's cursors.

Twice: with ``timeline.pages("before", limit=...)``, which follows the cursors for you, and
with a manual ``refetch`` loop that passes each page's ``start_cursor`` on, as you would
to load older history on demand (a "load more" button).

    python examples/history_pages.py --limit 5
    python examples/history_pages.py --url ws://127.0.0.1:6767/ws --agent <id>
"""

from __future__ import annotations

import argparse
import sys

from _embedded import add_common_arguments, daemon

import daemon_client as dc


def show(number: int, page: dc.TimelinePage) -> None:
    """One page: its entries are oldest first; a projected entry may merge several rows."""
    print(f"page {number}{' (reset)' if page.reset else ''}:")
    for entry in page.entries:
        item = entry.item
        if isinstance(item, dc.UserMessage | dc.AssistantMessage | dc.Reasoning):
            text = item.text
        elif isinstance(item, dc.ToolCall):
            text = f"{item.name} ({item.status})"
        else:
            text = ""
        print(f"  rows {entry.seq_start:>3}-{entry.seq_end:<3} {item.type}: {text}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("--agent", help="the agent's ID (default: the first agent listed)")
    parser.add_argument("--limit", type=int, default=8, help="rows per page (default: 8)")
    args = parser.parse_args(argv)

    with daemon(args) as url, dc.Client(url, password=args.password) as client:
        agent_id = args.agent or client.agents.list(page=dc.Page(limit=1)).entries[0].agent.id
        timeline = client.agents.ref(agent_id).timeline

        print("== timeline.pages('before')")
        for number, page in enumerate(timeline.pages("before", limit=args.limit), 1):
            show(number, page)

        print("== refetch('before', page.start_cursor)")
        page = timeline.refetch("tail", limit=args.limit)
        number = 1
        show(number, page)
        while page.has_older and page.start_cursor is not None:  # never judge by a short page
            page = timeline.refetch("before", page.start_cursor, limit=args.limit)
            number += 1
            show(number, page)  # a page with `reset` restarts from the newest rows
    return 0


if __name__ == "__main__":
    sys.exit(main())
