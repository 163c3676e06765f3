"""Follow one agent's status as it changes.

An agent handle (``client.agents.ref(id)``) follows the updates this client's live agent
observations receive, so the example first observes the directory with
``agents.list(subscribe=True)``, then listens on the handle of one agent.

    python examples/follow_agent_status.py                  # embedded demo daemon
    python examples/follow_agent_status.py --url ws://127.0.0.1:6767/ws --agent <id>
"""

from __future__ import annotations

import argparse
import sys

from _embedded import add_common_arguments, daemon, run_for

import daemon_client as dc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("--agent", help="the agent's ID (default: the first agent listed)")
    args = parser.parse_args(argv)

    with daemon(args) as url, dc.Client(url, password=args.password) as client:
        directory = client.agents.list(subscribe=True)  # keeps agent handles current
        with directory.subscription:
            entry = next((e for e in directory.entries if args.agent in (None, e.agent.id)), None)
            if entry is None and args.agent is None:
                print("the daemon has no agents")
                return 1
            agent = client.agents.ref(entry or args.agent)
            if agent.current() is None:
                agent.refresh()  # not on the first page: read it once
            status = agent.status
            print(f"{agent.title}: {status}", flush=True)

            def on_update(message: dc.DirectoryMessage[dc.AgentUpdate]) -> None:
                # Runs on the client's callback thread; the handle already holds the new snapshot.
                nonlocal status
                if agent.removed:
                    print(f"{agent.title}: removed", flush=True)
                elif agent.status != status:
                    status = agent.status
                    print(f"{agent.title}: {status}", flush=True)

            agent.subscribe(on_update)
            run_for(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
