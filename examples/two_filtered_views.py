"""Two filtered views of the agent directory side by side: the running agents and the idle ones.

Each ``agents.list(filter=..., subscribe=True)`` is its own observation with its own
callbacks; an agent that starts working leaves the idle view and joins the running one.
Older daemons keep a single agent observation per client: there the latest filter applies
to both views, and the example says so.

    python examples/two_filtered_views.py
    python examples/two_filtered_views.py --host-kind selective     # an older daemon
"""

from __future__ import annotations

import argparse
import sys

from _embedded import add_common_arguments, daemon, run_for

import daemon_client as dc


def follow(view: str, observation: dc.DirectoryObservation[dc.AgentListResult]) -> None:
    """Print the view's members now, after every change and after every reconnect."""

    def show(result: dc.AgentListResult | None) -> None:  # on the client's callback thread
        titles = sorted(entry.agent.title or entry.agent.id for entry in result.entries) if result else []
        print(f"[{view}] {', '.join(titles) or '-'}", flush=True)

    # `snapshot`: the current view first, again after reconnects; `update`: each change, the
    # observation's own view (`current()`) already has it applied.
    observation.subscribe(snapshot=show, update=lambda _message: show(observation.current()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    args = parser.parse_args(argv)

    with daemon(args) as url, dc.Client(url, password=args.password) as client:
        if client.host_kind is not dc.HostKind.CAPABLE:
            print(
                f"note: this daemon ({client.host_kind.value if client.host_kind else 'unknown'} host) shares one "
                "filter between both views: the last one (idle) applies to both. Update the daemon for "
                "independent views."
            )
        running = client.agents.list(filter=dc.AgentFilter(statuses=["running"]), subscribe=True).subscription
        idle = client.agents.list(filter=dc.AgentFilter(statuses=["idle"]), subscribe=True).subscription
        with running, idle:
            follow("running", running)
            follow("idle", idle)
            run_for(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
