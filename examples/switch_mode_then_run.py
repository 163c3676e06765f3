"""Switch an agent's mode (and optionally its model), then run a prompt in that mode.

Reads the agent's available modes, switches with ``set_mode`` (the daemon answers once the
change is accepted; a provider may add a notice such as "applies to the next turn"), then
``run(prompt)`` sends the prompt and waits for the turn: ``result.outcome`` says whether it
completed, failed or was canceled.

    python examples/switch_mode_then_run.py
    python examples/switch_mode_then_run.py --url ws://127.0.0.1:6767/ws --agent 1f3c --mode plan "Plan the fix"
"""

from __future__ import annotations

import argparse
import os
import sys

from _embedded import add_common_arguments, daemon

import daemon_client as dc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("prompt", nargs="?", default="What is the answer?")
    parser.add_argument("--agent", help="an existing agent: ID, unique ID prefix or exact title (default: create one)")
    parser.add_argument("--provider", default="mock/ten-second-stream", help="'provider/model' of a new agent")
    parser.add_argument("--cwd", default=os.getcwd(), help="working directory of a new agent")
    parser.add_argument("--mode", default="plan", help="the mode to switch to")
    parser.add_argument("--model", help="also switch to this model")
    args = parser.parse_args(argv)

    with daemon(args) as url, dc.Client(url, password=args.password) as client:
        if args.agent:
            snapshot = client.agents.fetch(args.agent)  # settings need the exact ID: resolve it first
            if snapshot is None:
                print(f"no agent {args.agent!r}")
                return 1
            agent = client.agents.ref(snapshot)
        else:
            config = dc.AgentConfig(provider=args.provider, mode_id="default")
            agent = client.agents.create(config, cwd=args.cwd, title="Mode example")
            print(f"created agent {agent.id}")
        before = agent.refresh()
        modes = [mode.id for mode in before.available_modes] if before is not None else []
        print(f"available modes: {', '.join(modes) or 'none reported'}")
        result = agent.set_mode(args.mode)
        if result.notice is not None:
            print(f"note: {result.notice.message}")
        if args.model:
            agent.set_model(args.model)
        after = agent.refresh()
        print(f"mode now: {after.current_mode_id if after is not None else '?'}")
        run = agent.run(args.prompt, timeout=args.duration or 600)
        print(f"status: {run.status}, outcome: {run.outcome}")
        print(f"last message: {run.last_message}")
    return 0 if run.outcome == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
