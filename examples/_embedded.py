"""Shared by the examples: their common options and an embedded demo daemon.

Without ``--url`` an example starts, on a loopback port, the fake Paseo daemon that
``daemon-client serve`` runs (it needs ``pip install -e ".[demo]"``). Its three agents already
have some history and keep working on prompts, so there is always something to watch.
"""

from __future__ import annotations

import argparse
import contextlib
import threading
import time
from collections.abc import Iterator

from daemon_client import HostKind
from daemon_client.testing import FakeDaemon
from daemon_client.testing.simulation import PROJECT_ROOT, PROMPTS, Simulation


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """``--url``, ``--password``, ``--host-kind`` and ``--duration``."""
    parser.add_argument("--url", help="the daemon's ws:// URL (default: start an embedded demo daemon)")
    parser.add_argument("--password", help="the daemon's password (default: $PASEO_PASSWORD)")
    parser.add_argument(
        "--host-kind",
        choices=[kind.value for kind in HostKind],
        default="capable",
        help="the daemon generation the embedded daemon imitates (default: capable)",
    )
    parser.add_argument(
        "--duration", type=float, metavar="SECONDS", help="how long to run (default: until Ctrl-C or the end)"
    )


@contextlib.contextmanager
def daemon(args: argparse.Namespace, *, drop_every: float | None = None) -> Iterator[str]:
    """Yield the URL to connect to: ``--url``, or an embedded demo daemon's (closed on exit).

    The embedded daemon's agents start working at once; after 0.8 s a project ``api`` and its
    workspace appear. ``drop_every``: it then drops every connection each that many seconds,
    to show how a client recovers (ignored with ``--url``).
    """
    if args.url:
        yield args.url
        return
    with contextlib.ExitStack() as stack:
        fake = stack.enter_context(FakeDaemon(host_kind=HostKind(args.host_kind), password=args.password))
        simulation = Simulation(fake, chunk_delay=0.04, pause=1.0)
        for index, agent_id in enumerate(simulation.agent_ids):  # one finished turn of history each
            for item in [{"type": "user_message", "text": PROMPTS[index]}, *simulation.script_for(index)]:
                fake.timeline.append(agent_id, item)
        url = fake.serve()
        stack.enter_context(simulation)  # started now, stopped on exit
        for index in range(len(simulation.agent_ids)):  # every agent starts working at once
            simulation.run_turn(index)
        stop = threading.Event()
        stagehand = threading.Thread(target=_stage, args=(fake, stop, drop_every), name="example-stagehand")
        stagehand.start()
        stack.callback(stagehand.join)
        stack.callback(stop.set)  # callbacks run last-in first-out: stop, then join
        yield url


def _stage(fake: FakeDaemon, stop: threading.Event, drop_every: float | None) -> None:
    """A new project with its workspace after a moment; then drops connections if asked to."""
    if stop.wait(0.8):
        return
    path = f"{PROJECT_ROOT}/api"
    fake.workspaces.open(path)
    fake.projects.upsert(path, projectDisplayName="api", projectRootPath=path, projectKind="non_git")
    while drop_every and not stop.wait(drop_every):
        fake.drop_connections()


def run_for(args: argparse.Namespace) -> None:
    """Block the caller for ``--duration`` seconds, or until Ctrl-C."""
    try:
        if args.duration is not None:
            time.sleep(args.duration)
        else:
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        pass
