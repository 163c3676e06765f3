"""Run one prompt on an agent, print the answer as it streams, then its last message.

Creates an agent (or uses ``--agent``), subscribes to its timeline *before* sending so no
chunk is missed, then ``run(prompt)`` sends the prompt and waits for the end of the turn.

    python examples/run_prompt.py "What is the answer?"
    python examples/run_prompt.py --url ws://127.0.0.1:6767/ws --provider claude/sonnet --cwd . "Summarise the diff"
"""

from __future__ import annotations

import argparse
import os
import sys

from _embedded import add_common_arguments, daemon

import daemon_client as dc


def print_chunks(update: dc.TimelineUpdate) -> None:
    """Streamed assistant text as it comes, on the callback thread."""
    if isinstance(update.event, dc.TimelineEvent) and isinstance(update.event.item, dc.AssistantMessage):
        print(update.event.item.text, end="", flush=True)
    elif isinstance(update.event, dc.TimelineEvent) and isinstance(update.event.item, dc.ToolCall):
        print(f"[{update.event.item.name}: {update.event.item.status}]", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("prompt", nargs="?", default="What is the answer?")
    parser.add_argument("--agent", help="an existing agent's ID (default: create one)")
    parser.add_argument("--provider", default="mock/ten-second-stream", help="'provider/model' of a new agent")
    parser.add_argument("--cwd", default=os.getcwd(), help="working directory of a new agent")
    args = parser.parse_args(argv)

    with daemon(args) as url, dc.Client(url, password=args.password) as client:
        if args.agent:
            agent = client.agents.ref(args.agent)
        else:
            agent = client.agents.create(dc.AgentConfig(provider=args.provider), cwd=args.cwd, title="Example run")
            print(f"created agent {agent.id}")
        with agent.timeline.subscribe(print_chunks) as subscription:
            subscription.ready.result(timeout=15)  # the daemon streams to us from now on
            result = agent.run(args.prompt, timeout=args.duration or 600)
            client.flush_callbacks()  # let the last chunks print
        print()
        print(f"status: {result.status}")
        print(f"last message: {result.last_message}")
    return 0 if result.status == "idle" else 1


if __name__ == "__main__":
    sys.exit(main())
