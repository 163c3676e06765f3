"""Follow an agent's timeline from a notebook cell (Jupyter, VS Code), on the notebook's loop.

A notebook runs its cells on an asyncio event loop. ``asyncio_executor()`` makes the client run
its callbacks on that loop, in order, so they may touch what belongs to it (an output widget, an
``asyncio.Queue``); ``wrap(future)`` awaits a client request without blocking the loop; blocking
calls go to a thread (``asyncio.to_thread``). Each ``# %%`` block below is one cell: open the file
in Jupyter with jupytext, or in VS Code, and run the cells in turn. Run as a script, it does the
same inside ``asyncio.run``.

    python examples/notebook_timeline.py                    # embedded demo daemon
    python examples/notebook_timeline.py --url ws://127.0.0.1:6767/ws --duration 10
"""

# %% The daemon, and a client whose callbacks run on the notebook's loop
from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys

from _embedded import add_common_arguments, daemon

import daemon_client as dc
from daemon_client.gui import asyncio_executor, wrap


async def follow(url: str, password: str | None, seconds: float) -> int:
    client = dc.Client(url, password=password, callback_executor=asyncio_executor())
    await asyncio.to_thread(client.connect)  # connecting blocks: not on the loop
    try:
        # %% The newest agent, and the last rows of its history
        directory = await asyncio.to_thread(client.agents.list)
        agent = client.agents.ref(directory.entries[0])
        page = await asyncio.to_thread(agent.timeline.refetch, "tail", limit=5)
        print(f"{agent.title}: {len(page.entries)} rows of history", flush=True)

        # %% Live updates, delivered on the loop: put them on a queue the cell awaits
        updates: asyncio.Queue[dc.TimelineUpdate] = asyncio.Queue()
        subscription = agent.timeline.subscribe(updates.put_nowait)  # runs on this loop
        await wrap(subscription.ready)
        pong = await wrap(client.request_async({"type": "ping"}))
        print(f"subscribed; the daemon answered a ping ({sorted(pong)[0]}…)", flush=True)

        # %% Print each assistant message when its turn ends (for ``seconds``)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(print_turns(updates), seconds)
        subscription.release()
    finally:
        await asyncio.to_thread(client.close)
    return 0


async def print_turns(updates: asyncio.Queue[dc.TimelineUpdate]) -> None:
    """Await updates; at each turn's end print the assistant's message."""
    messages: list[dc.TimelineUpdate] = []
    while True:
        update = await updates.get()
        messages.append(update)
        if isinstance(update.event, dc.TurnCompleted):
            joined = dc.join_messages(messages)
            if joined:
                print(f"assistant: {joined[-1]}", flush=True)
            messages.clear()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    with daemon(args) as url:
        return asyncio.run(follow(url, args.password, args.duration or 5.0))


if __name__ == "__main__":
    sys.exit(main())
