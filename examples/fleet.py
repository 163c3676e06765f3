"""Follow the agents of several daemons from one process, with failover between connections.

Three hosts: ``laptop`` reached directly, ``buildbox`` only through the relay, and ``desktop``
with both a direct and a relay connection (direct preferred). The fleet prints every host's
agents as one directory, tagged by host; when the desktop's direct connection goes away it
switches to the relay, and its agents come back with a fresh snapshot.

    python examples/fleet.py                 # three embedded demo daemons and a demo relay
    python examples/fleet.py --duration 10

With real daemons, build the hosts from their addresses and pairing offers instead, or from
the host store (``daemon-client hosts add``): see docs/hosts.md.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
from collections.abc import Iterator

import daemon_client as dc
from daemon_client.testing import FakeDaemon


@contextlib.contextmanager
def demo_daemons() -> Iterator[tuple[list[dc.Host], FakeDaemon]]:
    """Three embedded daemons (one with a relay) and their host profiles; closed on exit."""
    laptop, buildbox, desktop = (FakeDaemon(server_id=f"srv-{name}") for name in ("laptop", "buildbox", "desktop"))
    try:
        for fake, titles in ((laptop, ["docs pass"]), (buildbox, ["nightly build", "flaky test"]), (desktop, ["ui"])):
            for title in titles:
                fake.agents.upsert(title=title, status="running")
        direct = desktop.serve()
        hosts = [
            dc.Host("laptop", [laptop.serve()]),
            dc.Host("buildbox", [buildbox.serve_relay()]),
            dc.Host("desktop", [direct, desktop.serve_relay()], preferred=direct),
        ]
        yield hosts, desktop
    finally:
        for fake in (laptop, buildbox, desktop):
            fake.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=4.0, metavar="SECONDS", help="how long to run")
    args = parser.parse_args(argv)
    with demo_daemons() as (hosts, desktop), dc.Fleet(hosts, connect_timeout=5.0) as fleet:
        for label, outcome in fleet.connect(10).items():
            print(f"{label}: {'connected' if isinstance(outcome, dc.ServerInfo) else outcome}", flush=True)
        fleet["desktop"].on_connection_change(
            lambda old, new, reason: print(f"desktop: now through {new.id} ({reason})", flush=True)
        )
        directory = fleet.agents.list(subscribe=True, timeout=10)

        def on_event(event: dc.FleetEvent) -> None:
            # Runs on the fleet's one callback thread, for every host in turn.
            if event.kind == "snapshot":
                titles = ", ".join(sorted(e.agent.title or e.agent.id for e in event.entries))
                print(f"{event.host}: {len(event.entries)} agents ({titles})", flush=True)
            elif event.kind == "unavailable":
                print(f"{event.host}: unavailable ({event.reason})", flush=True)
            elif event.update is not None and event.update.payload.agent is not None:
                agent = event.update.payload.agent
                print(f"{event.host}: {agent.title} is {agent.status}", flush=True)

        directory.subscribe(on_event)
        stop = threading.Event()
        threading.Timer(args.duration / 3, lambda: desktop.interrupt_loopback(args.duration)).start()
        stop.wait(args.duration)
        print("hosts:", ", ".join(f"{label} {state.value}" for label, state in fleet.states.items()), flush=True)
        directory.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
